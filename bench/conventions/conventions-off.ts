import pg from "pg";

/**
 * Conventions the API has no setting for, switched off in the bench's switch
 * server alone (bench/conventions/switch-server.ts, BENCH_WITHOUT=last_used_at or etag in
 * its off app's settings) by rewriting the statements that app's pool sends,
 * so that each convention's cost is measured with it on and off in one run.
 * Rate limits (RATE_LIMIT_PER_MINUTE=0) and the request log
 * (LOG_LEVEL=warning) have real settings; the idempotency lookup is measured
 * as a read with and without an Idempotency-Key.
 */

export const OFF_SCHEMA = "bench_off";

/**
 * The key checks without their record of use: private.authenticate_api_key
 * and private.api_key_caller (*_api_key_check.sql) less the last_used_at
 * update, otherwise the same functions.
 */
const withoutLastUse = (name: string, notFound: string) => `
  create or replace function ${OFF_SCHEMA}.${name}(p_key_hash bytea)
    returns table (key_id uuid, tenant_id uuid, user_id uuid, email text, role text, scopes text[])
    language plpgsql security definer set search_path = ''
  as $$
  begin
    select l.key_id, l.tenant_id, l.user_id, l.email, l.role, l.scopes
    into key_id, tenant_id, user_id, email, role, scopes
    from private.live_api_keys l
    where l.key_hash = p_key_hash;
    if not found then
      ${notFound};
    end if;
    return next;
  end
  $$`;

export async function installConventionsOff(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`create schema if not exists ${OFF_SCHEMA}`);
    await client.query(`grant usage on schema ${OFF_SCHEMA} to camp_api`);
    await client.query(withoutLastUse("authenticate_api_key", "return"));
    await client.query(withoutLastUse("api_key_caller", "raise exception 'no live API key' using errcode = 'CA401'"));
  } finally {
    await client.end();
  }
}

const REWRITES: Record<string, [RegExp, string]> = {
  last_used_at: [/private\.(authenticate_api_key|api_key_caller)\(/g, `${OFF_SCHEMA}.$1(`],
  etag: [/p\.xmin::text as version/g, "'0'::text as version"],
};

/**
 * A function rewriting a pg query config for the conventions named in
 * `without`, or undefined when none is and `symmetric` is not set. With
 * `symmetric` every rule runs on every statement, those of conventions left
 * on replacing their match by itself: the "on" app of a convention's contest
 * then pays for the rewriting as the "off" one does, and the difference is
 * the convention's alone.
 */
export function offRewriter(without: string | undefined, symmetric = false): ((config: unknown) => unknown) | undefined {
  const off = new Set((without ?? "").split(",").filter(Boolean));
  for (const name of off) if (!REWRITES[name]) throw new Error(`BENCH_WITHOUT: unknown convention ${name}`);
  if (off.size === 0 && !symmetric) return undefined;
  const rules = Object.entries(REWRITES)
    .filter(([name]) => symmetric || off.has(name))
    .map(([name, [pattern, by]]) => [pattern, off.has(name) ? by : "$&"] as const);
  const apply = (text: string) => rules.reduce((t, [pattern, by]) => t.replace(pattern, by), text);
  return (config) => {
    if (typeof config === "string") return apply(config);
    if (config instanceof pg.Query) {
      const query = config as unknown as { text: string };
      query.text = apply(query.text);
      return config;
    }
    if (config && typeof (config as { text?: unknown }).text === "string") {
      return { ...(config as object), text: apply((config as { text: string }).text) };
    }
    return config;
  };
}
