import type pg from "pg";
import { SLOTS, type Slot, type Vars } from "../harness/scenarios.ts";
import type { CapturedStatement, Part, Template, Value } from "../harness/server-protocol.ts";
import { figures, Latencies, type LoadFigures } from "../harness/stats.ts";

/**
 * The raw baseline: the statements the API sent for one request, replayed
 * straight through pg on the same pool size and concurrency, with the values
 * of each replayed request swapped in. Statements the API sent on one pooled
 * client are sent on one pooled client here too.
 */

export const asString = (v: Vars, slot: Slot): string => (slot === "keyHash" ? v.keyHash.toString("hex") : v[slot]);

/** Finds the request's own values in the captured statements and marks them as slots. */
export function compile(statements: CapturedStatement[], from: Vars): Template[] {
  // Values may also stand in the text as literals: the claims, the key's hash in a key lookup,
  // and every value of a statement sent with its commit (execute …; commit).
  const pattern = new RegExp(SLOTS.map((s) => asString(from, s)).join("|"), "g");
  const slotOf = new Map<string, Slot>(SLOTS.map((s) => [asString(from, s), s]));
  return statements.map((statement) => {
    const text: Part[] = [];
    let last = 0;
    for (const match of statement.text.matchAll(pattern)) {
      text.push(statement.text.slice(last, match.index), { slot: slotOf.get(match[0]) as Slot });
      last = match.index + match[0].length;
    }
    text.push(statement.text.slice(last));
    const values = statement.values?.map((value): Value => {
      const key = typeof value === "object" && value && "bytes" in value ? String(value.bytes) : value;
      const slot = typeof key === "string" ? slotOf.get(key) : undefined;
      if (slot) return { slot };
      if (typeof value === "object" && value && "bytes" in value) return { value: Buffer.from(String(value.bytes), "hex") };
      return { value };
    });
    return {
      client: statement.client,
      rows: statement.rows > 0,
      text,
      ...(statement.name ? { name: statement.name } : {}),
      ...(statement.prepared ? { prepared: statement.prepared } : {}),
      ...(values ? { values } : {}),
    };
  });
}

function bind(template: Template, v: Vars): pg.QueryConfig {
  const text = executing(template.text.map((p) => (typeof p === "string" ? p : asString(v, p.slot))).join(""), template, "raw");
  const values = template.values?.map((x) => ("slot" in x ? (x.slot === "keyHash" ? v.keyHash : v[x.slot]) : x.value));
  // A named statement's text never holds request values (they are parameters), so its name stays valid.
  return { text, ...(template.name ? { name: template.name } : {}), ...(values ? { values } : {}) };
}

/** The statements each connection has prepared with PREPARE, under a baseline's own names. */
const preparedOn = new WeakMap<pg.PoolClient, Set<string>>();

/**
 * A baseline's name for a statement it prepares with PREPARE: its own, so
 * that it never meets a statement pg prepared under the API's name on the
 * same connection.
 */
export const preparedName = (prefix: string, name: string) => `${prefix}_${name}`;

/** Prepares the statements a template's text EXECUTEs (see Template.prepared), once per connection. */
export async function prepareOnce(client: pg.PoolClient, template: Template, prefix: string): Promise<void> {
  const done = preparedOn.get(client) ?? new Set<string>();
  preparedOn.set(client, done);
  for (const statement of template.prepared ?? []) {
    const name = preparedName(prefix, statement.name);
    if (done.has(name)) continue;
    await client.query(`prepare ${name} as ${statement.text}`);
    done.add(name);
  }
}

/** A template's text with its EXECUTEs aimed at the baseline's own prepared statements. */
export function executing(text: string, template: Template, prefix: string): string {
  return (template.prepared ?? []).reduce(
    (aimed, { name }) => aimed.replace(new RegExp(`execute ${name}\\b`), `execute ${preparedName(prefix, name)}`),
    text,
  );
}

/** Replays one request's statements; returns the rows of the last statement that returned any. */
export async function replayOnce(pool: pg.Pool, templates: Template[], v: Vars): Promise<unknown[]> {
  let rows: unknown[] = [];
  let i = 0;
  while (i < templates.length) {
    const clientNumber = templates[i]?.client;
    const client = await pool.connect();
    try {
      for (; i < templates.length && templates[i]?.client === clientNumber; i++) {
        const template = templates[i] as Template;
        await prepareOnce(client, template, "raw");
        const result = (await client.query(bind(template, v))) as pg.QueryResult | pg.QueryResult[];
        const last = Array.isArray(result) ? result.at(-1) : result;
        if (template.rows && !last?.rows.length) throw new Error(`no rows from: ${last?.command} (captured: rows)`);
        if (last?.rows.length) rows = last.rows;
      }
      client.release();
    } catch (error) {
      client.release(error as Error);
      throw error;
    }
  }
  return rows;
}

export interface RawRun {
  /** Sized like the server's pool (DB_POOL_SIZE). */
  pool: pg.Pool;
  templates: Template[];
  vars: () => Vars;
  connections: number;
  seconds: number;
}

/** Runs `connections` loops of replayed requests for `seconds`. */
export function runRaw(run: RawRun): Promise<LoadFigures> {
  return runLoops(run.connections, run.seconds, () => replayOnce(run.pool, run.templates, run.vars()));
}

/** `connections` loops, each doing one request after another for `seconds`: a baseline's load. */
export async function runLoops(connections: number, seconds: number, once: () => Promise<unknown>): Promise<LoadFigures> {
  const latencies = new Latencies();
  let requests = 0;
  let errors = 0;
  let firstError: string | undefined;
  const started = performance.now();
  const deadline = started + seconds * 1000;
  const loop = async () => {
    while (performance.now() < deadline) {
      const begin = performance.now();
      try {
        await once();
        latencies.recordMs(performance.now() - begin);
      } catch (error) {
        errors++;
        firstError ??= (error as Error).message;
      }
      requests++;
    }
  };
  await Promise.all(Array.from({ length: connections }, loop));
  const result = figures(requests - errors, errors, (performance.now() - started) / 1000, latencies);
  return firstError ? { ...result, first_error: firstError } : result;
}
