import { fromPgError, isRetryable } from "../db/pg-errors.ts";
import { REQUEST_PLAN_CACHE_MODE } from "../db/scope-settings.ts";
import type { Sql } from "../db/sql.ts";
import { ApiError, conflict, type FieldIssue } from "../errors.ts";
import { fieldIssues } from "../http/validation.ts";
import { findStructure } from "../participants-bulk/data.ts";
import type { RowIssue } from "../participants-bulk/rows.ts";
import { overrideCapacity } from "../rooms/capacity.ts";
import { assertRoomCapacity, lockParticipants, writePlacements } from "./data.ts";
import { type Entry, type PlannedEntry, planAssignments, referencedIds } from "./plan.ts";
import { Assignment, type AssignReportRecord } from "./schemas.ts";

/**
 * POST /participants/assign: every assignment applied, or none, judged on
 * the state the whole set leaves. Runs inside the request's one
 * transaction; a dry run does the same work inside a savepoint it rolls back,
 * so it is judged by the very same rules (the database's included).
 */

const DRY_RUN_SAVEPOINT = "assign_dry_run";

/** Each entry through the assignment schema; the bad ones are reported by index, not returned. */
function validateEntries(raw: unknown[]): { entries: Entry[]; issues: RowIssue[] } {
  const entries: Entry[] = [];
  const issues: RowIssue[] = [];
  raw.forEach((input, at) => {
    const parsed = Assignment.safeParse(input);
    if (parsed.success) entries.push({ at, input: parsed.data });
    else for (const { field, issue } of fieldIssues(parsed.error.issues)) issues.push({ at, field, issue });
  });
  return { entries, issues };
}

/** An entry's problem named by its place in the body: `assignments.3.room_id` (`assignments.3` for the entry itself). */
const placed = ({ at, field, issue }: RowIssue): FieldIssue => ({
  field: field === "body" ? `assignments.${at}` : `assignments.${at}.${field}`,
  issue,
});

function invalid(issues: RowIssue[], total: number): ApiError {
  const failing = new Set(issues.map((i) => i.at)).size;
  return new ApiError(
    "VALIDATION_ERROR",
    `${failing} of ${total} assignments are invalid; nothing was changed`,
    issues.sort((a, b) => a.at - b.at).map(placed),
  );
}

function archived(at: number[]): ApiError {
  return conflict(
    `${at.length} of the participants are in archived instances, which are read-only; nothing was changed`,
    at.map((i) => ({ field: `assignments.${i}.participant_id`, issue: "is in an archived instance, which is read-only" })),
  );
}

/**
 * The changes written, then every room they fill checked on the state they
 * leave: all of the set's moves are in, so a swap between two full rooms
 * passes, and a set that overfills rooms is refused naming each one.
 */
async function write(sql: Sql, changes: PlannedEntry[]): Promise<void> {
  const written = await writePlacements(sql, changes);
  // Every participant was locked when planned, so each planned change finds its row.
  if (written !== changes.length) throw new Error(`assign wrote ${written} of ${changes.length} planned rows`);
  const filled = new Set<string>();
  for (const { before, after } of changes) if (after.room_id && after.room_id !== before.room_id) filled.add(after.room_id);
  await assertRoomCapacity(sql, [...filled]);
}

/**
 * The dry run's write: the same statements in a savepoint, every deferred
 * rule checked now (SET CONSTRAINTS ALL IMMEDIATE, as a commit would), then
 * rolled back. A refusal a client caused is returned, not thrown.
 */
async function tryWrite(sql: Sql, changes: PlannedEntry[]): Promise<ApiError | undefined> {
  await sql.query(`savepoint ${DRY_RUN_SAVEPOINT}`);
  let refusal: ApiError | undefined;
  try {
    await write(sql, changes);
    await sql.query("set constraints all immediate");
  } catch (error) {
    refusal = fromPgError(error);
    // Only a refusal of the data is an answer; a lost connection, a deadlock (retried) or a bug is not.
    if (!refusal || isRetryable(error) || refusal.code === "SERVICE_UNAVAILABLE") throw error;
  }
  await sql.query(`rollback to savepoint ${DRY_RUN_SAVEPOINT}`);
  return refusal;
}

export interface AssignOptions {
  dryRun: boolean;
  /** An admin's override_capacity: rooms may be left over capacity (the audit events record it). */
  overrideCapacity: boolean;
}

export async function assignParticipants(sql: Sql, raw: unknown[], options: AssignOptions): Promise<AssignReportRecord> {
  const { dryRun } = options;
  // First, so that a staff caller asking for it is refused (403) whatever the entries.
  if (options.overrideCapacity) await overrideCapacity(sql);
  const { entries, issues } = validateEntries(raw);
  // Planned for their values, as bulk create's reads are (create-many.ts): a generic plan of
  // `= any($array)` cannot hash the list, and compares every row of the tenant with every id.
  await sql.query("set local plan_cache_mode = force_custom_plan");
  const current = await lockParticipants(sql, [...new Set(entries.map((e) => e.input.participant_id.toLowerCase()))]);
  const structure = await findStructure(sql, referencedIds(entries, current.values()), []);
  await sql.query(`set local plan_cache_mode = ${REQUEST_PLAN_CACHE_MODE}`);
  const plan = planAssignments(entries, current, structure);
  const changes = plan.planned.filter((p) => p.changed);

  let refusal: ApiError | undefined;
  if (issues.length + plan.issues.length > 0) refusal = invalid([...issues, ...plan.issues], raw.length);
  else if (plan.archived.length > 0) refusal = archived(plan.archived);
  else if (dryRun) refusal = await tryWrite(sql, changes);
  else await write(sql, changes);
  if (refusal && !dryRun) throw refusal;

  return {
    dry_run: dryRun,
    assignments: raw.length,
    changed: changes.length,
    participants: plan.planned.map(({ participant_id, changed, before, after }) => ({ participant_id, changed, before, after })),
    would_fail: refusal
      ? { status: refusal.status, code: refusal.code, message: refusal.message, details: refusal.details }
      : null,
  };
}
