import { REQUEST_PLAN_CACHE_MODE } from "../db/scope-settings.ts";
import type { Sql } from "../db/sql.ts";
import type { TenantScope } from "../db/tenant-scope.ts";
import { ApiError, conflict, invalidField } from "../errors.ts";
import type { CreateInput } from "../participants/schemas.ts";
import { overrideCapacity } from "../rooms/capacity.ts";
import { type CareInput, careOf, isCareColumn } from "./care-columns.ts";
import { insertPrepared } from "./create-many.ts";
import { type ColumnMapping, type CsvBody, parseImport, type UnknownColumn } from "./csv-import.ts";
import {
  careAccess,
  type ExistingParticipant,
  existingParticipants,
  findInstances,
  findStructure,
  roomPlaces,
  takenUserIds,
  updateParticipants,
} from "./data.ts";
import { DEFAULT_DATE_FORMAT, type Mapping, parseDateFormat } from "./import-options.ts";
import { CAPACITY_KIND, type Overflow, rejection } from "./import-rejection.ts";
import { type Candidate, orderedIds, type RowIssue, validateRows } from "./rows.ts";
import { checkRows, userKey } from "./rules.ts";

/**
 * A CSV import, the same for the HTTP endpoint and `camp participants import`:
 * all or nothing, in one transaction. Any problem means nothing is written,
 * and the error lists every problem of every line at once, after a summary
 * per column and problem; a dry run checks everything the same way and
 * writes nothing. With mode=upsert, a line whose user_id a live participant
 * of the instance holds updates it (only the fields its columns hold);
 * unchanged participants are not written at all, so they leave no audit or
 * change event.
 */

export type ImportMode = "create" | "upsert";

export interface ImportRequest {
  /** The file, read as it arrives (a request's body stream) or whole (the CLI's file). */
  body: CsvBody;
  instanceId: string;
  dryRun: boolean;
  mode?: ImportMode;
  /** How the file writes dates (DEFAULT_DATE_FORMAT when not given). */
  dateFormat?: string;
  mapping?: Mapping;
  /** An admin's (or the operator's) choice to fill rooms over their capacity. */
  overrideCapacity?: boolean;
  /** Called as the phases advance: checking, then writing (rows written so far). */
  onProgress?: (phase: "checking" | "writing", done: number, total: number) => void;
}

export type Outcome = "created" | "updated" | "unchanged";

/** A line's outcome by its number only: the answer names no one (a keyed request's stored answer outlives an erasure). */
export interface LineOutcome {
  line: number;
  outcome: Outcome;
}

export interface ImportReport {
  instance_id: string;
  dry_run: boolean;
  mode: ImportMode;
  /** Participant lines in the file. */
  lines: number;
  created: number;
  updated: number;
  unchanged: number;
  columns: ColumnMapping[];
  ignored_columns: string[];
  /** Ignored columns close to a field's name, and the fields they may have meant. */
  column_suggestions: UnknownColumn[];
  /** Each line's outcome (a dry run: what it would be), in line order. */
  outcomes: LineOutcome[];
}

/** One rejected line: its number, the column (as the header wrote it) and field, and why. */
export interface LineIssue {
  line: number;
  column?: string;
  field: string;
  issue: string;
}

function dateFormatOf(text: string | undefined) {
  const format = parseDateFormat(text ?? DEFAULT_DATE_FORMAT);
  if (!format) {
    throw invalidField(
      "date_format",
      "must be day, month and four-digit year in some order with one separator (-, / or .), e.g. DD/MM/YYYY",
    );
  }
  return format;
}

export async function importParticipants(tenant: TenantScope, request: ImportRequest): Promise<ImportReport> {
  const mode = request.mode ?? "create";
  const dateFormat = dateFormatOf(request.dateFormat);
  // Read before the transaction: a slow upload holds no connection.
  const parsed = await parseImport(request.body, request.instanceId, {
    dateFormat,
    mapping: request.mapping,
    upsert: mode === "upsert",
  });
  return tenant.run(async (sql) => {
    if (parsed.careColumns.length > 0) await requireCareWrite(sql, parsed.columns);
    if (request.overrideCapacity) await overrideCapacity(sql);
    const [instance] = await findInstances(sql, [request.instanceId]);
    if (!instance) throw invalidField("instance_id", "does not exist");
    if (instance.status === "archived") {
      throw conflict("instance is archived and read-only", { field: "instance_id", issue: "instance is archived and read-only" });
    }
    request.onProgress?.("checking", 0, parsed.lines);
    const checked = await check(sql, request, mode, parsed.candidates, parsed.issues);
    const { plan } = checked;
    const issues = checked.issues.sort((a, b) => a.at - b.at);
    if (issues.length > 0) throw rejection(issues, checked.rooms, parsed.lines, parsed.columns, parsed.candidates);

    // Care data: what would change (a dry run), or the writes (after the participants exist).
    const care = plan.filter((p) => p.care !== undefined);
    const careOfExisting = care.filter((p) => p.prior !== undefined);
    let careChanged = new Set<string>();
    if (request.dryRun) {
      careChanged = await careImport(sql, careOfExisting, false);
    } else {
      const creates = plan.filter((p) => p.outcome === "created");
      await insertPrepared(
        sql,
        creates.map((p) => p.data),
        {
          returnRows: false,
          ids: creates.map((p) => p.id),
          onProgress: (done, total) => request.onProgress?.("writing", done, total),
        },
      );
      await updateParticipants(
        sql,
        plan.filter((p) => p.outcome === "updated").map((p) => ({ id: p.id, changes: p.changes ?? {} })),
      );
      careChanged = await careImport(sql, care, true);
    }
    for (const p of plan) if (p.outcome === "unchanged" && careChanged.has(p.id)) p.outcome = "updated";
    const count = (outcome: Outcome) => plan.filter((p) => p.outcome === outcome).length;
    return {
      instance_id: request.instanceId,
      dry_run: request.dryRun,
      mode,
      lines: parsed.lines,
      created: count("created"),
      updated: count("updated"),
      unchanged: count("unchanged"),
      columns: parsed.columns,
      ignored_columns: parsed.ignored,
      column_suggestions: parsed.suggestions,
      outcomes: plan.map((p) => ({ line: p.at, outcome: p.outcome })),
    };
  });
}

/** 403 naming the file's care columns unless the caller may write care data (user's care_access and the key's care scope). */
async function requireCareWrite(sql: Sql, columns: ColumnMapping[]): Promise<void> {
  if ((await careAccess(sql)) === "write") return;
  const named = columns.filter((c) => isCareColumn(c.field)).map((c) => c.column);
  throw new ApiError(
    "FORBIDDEN",
    `the file has safeguarding columns (${named.join(", ")}); importing them needs care write access and, with an API key, its care scope. Nothing was imported`,
    named.map((column) => ({ field: column, column, issue: "needs care write access" })),
  );
}

/** A good line and what it will do. */
interface Planned {
  at: number;
  /** The participant's id: the stored one, or the new one's. */
  id: string;
  data: CreateInput;
  prior?: ExistingParticipant;
  outcome: Outcome;
  /** Upsert: the fields that change. */
  changes?: Record<string, unknown>;
  care?: CareInput;
}

/**
 * Every line checked in one pass: its fields, its care cells, its references
 * and pairs, its user_id against the file and the instance, and the rooms'
 * capacity with the file's moves. Bad lines are checked as far as their good
 * fields allow, so a bad date does not hide an unknown room.
 */
async function check(sql: Sql, request: ImportRequest, mode: ImportMode, candidates: Candidate[], found: RowIssue[]) {
  const issues: RowIssue[] = [...found];
  const careByLine = new Map<number, CareInput>();
  for (const candidate of candidates) {
    if (!candidate.care) continue;
    const care = careOf(candidate.care);
    for (const issue of care.issues) issues.push({ at: candidate.at, ...issue });
    if (care.value) careByLine.set(candidate.at, care.value);
  }
  const userIdOf = (c: Candidate) => (c.input as { user_id?: string }).user_id;

  // Requests plan their statements generically (REQUEST_PLAN_CACHE_MODE), but
  // a generic plan of these reads cannot hash `= any($array)` (create-many.ts).
  await sql.query("set local plan_cache_mode = force_custom_plan");
  const prior = new Map<string, ExistingParticipant>();
  if (mode === "upsert") {
    const ids = [...new Set(candidates.map(userIdOf).filter((u): u is string => u !== undefined))];
    for (const row of await existingParticipants(sql, request.instanceId, ids)) prior.set(row.user_id, row);
  }
  const merged = candidates.map((c) => {
    const before = prior.get(userIdOf(c) ?? "");
    return before ? { ...c, input: mergeInput(before, c) } : c;
  });
  const { rows, issues: fieldIssues } = await validateRows(merged, new Set(issues.map((i) => i.at)));
  issues.push(...fieldIssues);
  const ids = new Set<string>();
  for (const { data } of rows) {
    for (const id of [data.super_group_id, data.sub_group_id, data.block_id, data.room_id]) if (id) ids.add(id);
  }
  const structure = await findStructure(sql, [...ids], [request.instanceId]);
  const taken =
    mode === "create"
      ? await takenUserIds(
          sql,
          rows.map(({ data }) => ({ instance_id: data.instance_id, user_id: data.user_id })),
        )
      : [];
  const instances = await findInstances(sql, [request.instanceId]);
  const checked = checkRows(
    rows,
    {
      instances: new Map(instances.map((i) => [i.id, i])),
      structure,
      taken: new Set(taken.map((t) => userKey(t.instance_id, t.user_id))),
    },
    "line",
  );
  issues.push(...checked.issues);

  const newIds = orderedIds(checked.ready.length);
  const plan: Planned[] = checked.ready.map((data, i) => {
    const at = checked.readyAt[i] as number;
    const before = prior.get(data.user_id);
    const care = careByLine.get(at);
    if (!before) return { at, id: newIds[i] as string, data, outcome: "created", care };
    const changes = changesOf(before, data);
    const outcome = Object.keys(changes).length > 0 ? "updated" : "unchanged";
    return { at, id: before.id, data, prior: before, outcome, changes, care };
  });

  const rooms = request.overrideCapacity ? [] : await overflows(sql, checked.placed, prior);
  await sql.query(`set local plan_cache_mode = ${REQUEST_PLAN_CACHE_MODE}`);
  for (const room of rooms) {
    const issue = `room ${room.room_number} of block ${room.block_name} would hold ${room.occupancy} participants, over its capacity of ${room.capacity}`;
    for (const at of room.lines) issues.push({ at, field: "room_id", issue, kind: CAPACITY_KIND });
  }
  return { issues, plan, rooms };
}

/**
 * A stored participant with a line's fields over it, as the line's input to
 * validate. A line that sets a subgroup or a room without its parent takes
 * the parent from it, as a single update would; likewise the room number.
 */
function mergeInput(before: ExistingParticipant, candidate: Candidate): Record<string, unknown> {
  const input = candidate.input as Record<string, unknown>;
  const names = candidate.names ?? {};
  const base: Record<string, unknown> = { ...before };
  delete base.id;
  const sets = (field: string, name: string) => input[field] !== undefined || names[name as keyof typeof names] !== undefined;
  if (sets("sub_group_id", "subgroup") && !sets("super_group_id", "supergroup")) delete base.super_group_id;
  if (sets("room_id", "room") && !sets("block_id", "block")) delete base.block_id;
  if (sets("room_id", "room") && input.room_number === undefined) delete base.room_number;
  // A name given for a reference replaces the stored id (checkRows resolves it).
  for (const [name, field] of [
    ["supergroup", "super_group_id"],
    ["subgroup", "sub_group_id"],
    ["block", "block_id"],
    ["room", "room_id"],
  ] as const) {
    if (names[name] !== undefined && input[field] === undefined) delete base[field];
  }
  return { ...base, ...input };
}

/** The fields of `data` that differ from the stored row. */
function changesOf(before: ExistingParticipant, data: CreateInput): Record<string, unknown> {
  const changes: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(data)) {
    if (value === undefined || field === "instance_id") continue;
    if ((before[field as keyof ExistingParticipant] ?? null) !== (value ?? null)) changes[field] = value;
  }
  return changes;
}

/**
 * Rooms the file's final state fills over capacity: those there now, less
 * the participants the file moves out, plus those it moves in (lines with
 * problems included: they will be placed once fixed).
 */
async function overflows(
  sql: Sql,
  placed: Array<{ at: number; data: CreateInput }>,
  prior: Map<string, ExistingParticipant>,
): Promise<Overflow[]> {
  const into = new Map<string, number[]>();
  const out = new Map<string, number>();
  for (const { at, data } of placed) {
    const before = prior.get(data.user_id)?.room_id ?? null;
    const after = data.room_id ?? null;
    if (after === before) continue;
    if (after) into.set(after, [...(into.get(after) ?? []), at]);
    if (before) out.set(before, (out.get(before) ?? 0) + 1);
  }
  const places = await roomPlaces(sql, [...into.keys()]);
  const over: Overflow[] = [];
  for (const room of places) {
    const lines = into.get(room.room_id) ?? [];
    const occupancy = room.occupancy - (out.get(room.room_id) ?? 0) + lines.length;
    if (room.capacity !== null && occupancy > room.capacity) {
      over.push({ ...room, capacity: room.capacity, occupancy, lines });
    }
  }
  return over.sort((a, b) => (a.lines[0] ?? 0) - (b.lines[0] ?? 0));
}

/**
 * The care cells through the database's import door (private.care_import):
 * it checks the caller's care write access, matches contacts by name within
 * the participant, and writes only what differs, through the care routes' own
 * doors (audited). Returns the participants whose care data differs.
 */
async function careImport(sql: Sql, planned: Planned[], write: boolean): Promise<Set<string>> {
  if (planned.length === 0) return new Set();
  const rows = planned.map((p) => ({ participant_id: p.id, ...p.care }));
  const row = await sql.one<{ changed: string[] }>("select private.care_import($1::jsonb, $2) as changed", [
    JSON.stringify(rows),
    write,
  ]);
  return new Set(row?.changed ?? []);
}
