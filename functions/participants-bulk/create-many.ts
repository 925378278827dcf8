import { REQUEST_PLAN_CACHE_MODE } from "../db/scope-settings.ts";
import type { Sql } from "../db/sql.ts";
import type { CreateInput } from "../participants/schemas.ts";
import { findInstances, findStructure, insertParticipants, takenUserIds } from "./data.ts";
import { type Candidate, orderedIds, type RowIssue, validateRows } from "./rows.ts";
import { checkRows, userKey } from "./rules.ts";

/**
 * Many participants in one transaction, all or nothing: every row is
 * validated and checked first (three set-based reads for the whole batch),
 * and only a batch without a single problem is written.
 */

/** Rows per insert statement: large enough to be fast, small enough to stay well inside the statement timeout. */
export const INSERT_CHUNK = 1_000;

export interface Prepared {
  ready: CreateInput[];
  /** Every problem of every row, in row order. */
  issues: RowIssue[];
}

export interface PrepareOptions {
  label: "row" | "line";
  /** Instances whose structure may be named (CSV import); bulk create refers by id only. */
  namesIn?: string[];
}

export async function prepareRows(sql: Sql, candidates: Candidate[], options: PrepareOptions): Promise<Prepared> {
  const { rows, issues } = await validateRows(candidates);
  const ids = new Set<string>();
  const instances = new Set<string>();
  for (const { data } of rows) {
    instances.add(data.instance_id);
    for (const id of [data.super_group_id, data.sub_group_id, data.block_id, data.room_id]) if (id) ids.add(id);
  }
  const pairs = rows.map(({ data }) => ({ instance_id: data.instance_id, user_id: data.user_id }));
  // Requests plan their statements generically (REQUEST_PLAN_CACHE_MODE), but
  // a generic plan of these reads cannot hash `= any($array)`, and with
  // statistics that lag behind a bulk load (a new tenant's first imports) it
  // compares every row of the tenant with every value. These reads are
  // planned for their actual values; the inserts' triggers keep their cached plans.
  await sql.query("set local plan_cache_mode = force_custom_plan");
  const found = await findInstances(sql, [...instances]);
  const structure = await findStructure(sql, [...ids], options.namesIn ?? []);
  const taken = await takenUserIds(sql, pairs);
  await sql.query(`set local plan_cache_mode = ${REQUEST_PLAN_CACHE_MODE}`);
  const checked = checkRows(
    rows,
    {
      instances: new Map(found.map((i) => [i.id, i])),
      structure,
      taken: new Set(taken.map((t) => userKey(t.instance_id, t.user_id))),
    },
    options.label,
  );
  const all = [...issues, ...checked.issues].sort((a, b) => a.at - b.at);
  return { ready: checked.ready, issues: all };
}

/** How many distinct rows have problems. */
export const failingRows = (issues: RowIssue[]) => new Set(issues.map((i) => i.at)).size;

/**
 * Writes prepared rows in chunks of INSERT_CHUNK, inside the caller's
 * transaction. Returns the created participants in row order, as the JSON
 * array the API writes, or only their number.
 */
export async function insertPrepared(
  sql: Sql,
  ready: CreateInput[],
  options: { returnRows: boolean; ids?: string[]; onProgress?: (done: number, total: number) => void },
): Promise<{ created: number; json?: string }> {
  const ids = options.ids ?? orderedIds(ready.length);
  const withIds = ready.map((row, i) => ({ ...row, id: ids[i] as string }));
  // Each chunk's array without its brackets, to be joined into one array.
  const items: string[] = [];
  let created = 0;
  for (let start = 0; start < withIds.length; start += INSERT_CHUNK) {
    const chunk = withIds.slice(start, start + INSERT_CHUNK);
    const result = await insertParticipants(sql, chunk, options.returnRows);
    if (typeof result === "number") created += result;
    else {
      if (result.count > 0) items.push(result.json.slice(1, -1));
      created += result.count;
    }
    options.onProgress?.(created, withIds.length);
  }
  return options.returnRows ? { created, json: `[${items.join(",")}]` } : { created };
}
