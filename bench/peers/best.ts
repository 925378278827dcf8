import pg from "pg";
import type { Slot, Vars } from "../harness/scenarios.ts";
import type { Template } from "../harness/server-protocol.ts";
import type { LoadFigures } from "../harness/stats.ts";
import { asString, executing, prepareOnce, type RawRun, runLoops } from "./raw.ts";

/**
 * The second baseline, which sets the bar lower than the raw replay: the same
 * statements under the same RLS, in the fewest round trips a Postgres client
 * can use — one per request. The statements the API sent are joined into one
 * simple query (begin, the key lookup with the tenant scope, the work, commit);
 * those the API sent as named statements are prepared once per connection and
 * run with EXECUTE, so their plans are cached as the API's are. Raw shows how
 * far the HTTP layer is from its own statements; best shows how far the API's
 * design (its round trips) is from the best a client could do.
 */

const literal = (value: unknown, slot?: Slot): string => {
  if (value === null || value === undefined) return "null";
  if (slot === "keyHash" || Buffer.isBuffer(value)) {
    const hex = Buffer.isBuffer(value) ? value.toString("hex") : String(value);
    return `'\\x${hex}'::bytea`;
  }
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  if (typeof value === "string") return pg.escapeLiteral(value);
  if (value instanceof Date) return pg.escapeLiteral(value.toISOString());
  throw new Error(`best baseline: no literal form for ${typeof value}`);
};

function valuesOf(template: Template, v: Vars): string[] {
  return (template.values ?? []).map((x) =>
    "slot" in x ? literal(x.slot === "keyHash" ? v.keyHash : v[x.slot], x.slot) : literal(x.value),
  );
}

function textOf(template: Template, v: Vars): string {
  return template.text.map((p) => (typeof p === "string" ? p : asString(v, p.slot))).join("");
}

const prepared = (template: Template) => `best_${template.name}`;

/** The one simple query that does the request's work. */
function requestText(templates: Template[], v: Vars): string {
  return templates
    .map((t) => {
      const values = valuesOf(t, v);
      if (t.name) return `execute ${prepared(t)}${values.length ? `(${values.join(", ")})` : ""}`;
      return executing(textOf(t, v), t, "best").replace(/\$(\d+)/g, (_, n: string) => values[Number(n) - 1] ?? "null");
    })
    .join(";\n");
}

/** The statements each pooled connection has prepared. */
const preparedOn = new WeakMap<pg.PoolClient, Set<string>>();

/** One request: one round trip (after a connection's first, which also prepares the named statements). */
export async function bestOnce(pool: pg.Pool, templates: Template[], v: Vars): Promise<unknown[]> {
  const client = await pool.connect();
  try {
    const done = preparedOn.get(client) ?? new Set<string>();
    preparedOn.set(client, done);
    for (const t of templates.filter((t) => t.name && !done.has(prepared(t)))) {
      await client.query(`prepare ${prepared(t)} as ${textOf(t, v)}`);
      done.add(prepared(t));
    }
    for (const t of templates) await prepareOnce(client, t, "best");
    const results = (await client.query(requestText(templates, v))) as unknown as pg.QueryResult[];
    const withRows = results.filter((r) => r.rows.length > 0);
    if (templates.some((t) => t.rows) && withRows.length === 0) throw new Error("best baseline: no rows returned");
    client.release();
    return withRows.at(-1)?.rows ?? [];
  } catch (error) {
    client.release(error as Error);
    throw error;
  }
}

/** Runs `connections` loops of one-round-trip requests for `seconds`. */
export function runBest(run: RawRun): Promise<LoadFigures> {
  return runLoops(run.connections, run.seconds, () => bestOnce(run.pool, run.templates, run.vars()));
}
