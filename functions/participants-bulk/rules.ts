import type { CreateInput } from "../participants/schemas.ts";
import type { InstanceRecord, StructureKind, StructureRecord } from "./data.ts";
import type { NamedReference, RowIssue, ValidRow } from "./rows.ts";

/**
 * The participant rules, checked for a whole batch against what the batch
 * refers to (read once, set-based), so that every broken row is reported at
 * once with its field. The database holds the same rules (triggers, composite
 * foreign keys, unique index) and still checks each row on insert; this is
 * what turns a batch into a precise report instead of its first error.
 * Messages match those of single creates (functions/db/pg-errors.ts).
 */

/** What the batch refers to, as read by data.ts. */
export interface Lookup {
  instances: Map<string, InstanceRecord>;
  structure: StructureRecord[];
  /** `instanceId user_id` of live participants that clash with the batch. */
  taken: Set<string>;
}

type IdField = "super_group_id" | "sub_group_id" | "block_id" | "room_id";

interface Reference {
  field: IdField;
  name: NamedReference;
  kind: StructureKind;
  /** The reference this one must belong to. */
  parent?: IdField;
  /** What a reference in the participant's instance is called in messages. */
  noun: string;
}

/** Parents first: a subgroup is resolved within its supergroup, a room within its block. */
const REFERENCES: Reference[] = [
  { field: "super_group_id", name: "supergroup", kind: "supergroup", noun: "supergroup" },
  { field: "sub_group_id", name: "subgroup", kind: "subgroup", parent: "super_group_id", noun: "subgroup" },
  { field: "block_id", name: "block", kind: "block", noun: "block" },
  { field: "room_id", name: "room", kind: "room", parent: "block_id", noun: "room" },
];

export const userKey = (instanceId: string, userId: string) => `${instanceId} ${userId}`;

/** Names compare as the unique indexes compare them: trimmed, case-insensitive (and in one Unicode form). */
const fold = (name: string) => name.normalize("NFC").trim().toLowerCase();

export function checkRows(
  rows: ValidRow[],
  lookup: Lookup,
  label: "row" | "line",
): { issues: RowIssue[]; ready: CreateInput[]; readyAt: number[]; placed: Array<{ at: number; data: CreateInput }> } {
  const byId = new Map(lookup.structure.map((r) => [r.id, r]));
  const seen = new Map<string, number>();
  const issues: RowIssue[] = [];
  const ready: CreateInput[] = [];
  const readyAt: number[] = [];
  /** Every row as resolved, good or not: where each would go once fixed. */
  const placed: Array<{ at: number; data: CreateInput }> = [];

  for (const row of rows) {
    const before = issues.length;
    const report = (field: string, issue: string, kind?: string) => issues.push({ at: row.at, field, issue, kind });
    const data: CreateInput = { ...row.data };
    const instance = lookup.instances.get(data.instance_id);
    if (!instance) report("instance_id", "does not exist");
    else if (instance.status === "archived") report("instance_id", "instance is archived and read-only");

    for (const ref of REFERENCES) {
      const parentId = ref.parent ? data[ref.parent] : undefined;
      const named = row.names[ref.name];
      if (named !== undefined) {
        const found = resolveName(lookup.structure, ref, data.instance_id, named, parentId ?? undefined);
        if (typeof found === "string") {
          report(ref.name, found, found.replace(/called '.*'(?= in)/, "of that name").replace(/are called '.*'/, "share a name"));
          continue;
        }
        if (data[ref.field] && data[ref.field] !== found.id) {
          report(ref.name, `names another ${ref.noun} than ${ref.field}`);
          continue;
        }
        data[ref.field] = found.id;
      }
      const id = data[ref.field];
      if (!id) continue;
      const record = byId.get(id);
      if (!record || record.kind !== ref.kind) report(ref.field, "does not exist");
      else if (instance && record.instance_id !== data.instance_id) report(ref.field, "does not belong to instance_id");
      else if (ref.parent) {
        const parent = data[ref.parent];
        // As for single creates: the parent is filled from the child when not sent; sent as null, it is missing.
        if (parent === undefined) data[ref.parent] = record.parent_id;
        else if (parent === null) report(ref.parent, `is required when ${ref.field} is set`);
        else if (parent !== record.parent_id) report(ref.field, `does not belong to ${ref.parent}`);
        if (ref.kind === "room" && data.room_number === undefined) data.room_number = record.name;
      }
    }

    if (data.arrival_date && data.departure_date && data.departure_date < data.arrival_date) {
      report("departure_date", "must not be before arrival_date");
    }

    const key = userKey(data.instance_id, data.user_id);
    if (!row.noUserId) {
      const first = seen.get(key);
      if (first !== undefined)
        report("user_id", `is used twice in this batch (also ${label} ${first})`, "is used twice in this batch");
      else seen.set(key, row.at);
      if (lookup.taken.has(key)) report("user_id", "is already used by a participant of this instance");
    }

    if (!row.noUserId) placed.push({ at: row.at, data });
    if (issues.length === before && !row.failed) {
      ready.push(data);
      readyAt.push(row.at);
    }
  }
  return { issues, ready, readyAt, placed };
}

/**
 * The one live record of this kind in the instance (and in the parent, when
 * one is known) that the name names, or why there is none. A room is named
 * by its number, or else by its name.
 */
function resolveName(
  structure: StructureRecord[],
  ref: Reference,
  instanceId: string,
  name: string,
  parentId: string | undefined,
): StructureRecord | string {
  const wanted = fold(name);
  const candidates = structure.filter(
    (r) => r.kind === ref.kind && r.instance_id === instanceId && (parentId === undefined || r.parent_id === parentId),
  );
  let matches = candidates.filter((r) => fold(r.name) === wanted);
  if (matches.length === 0 && ref.kind === "room")
    matches = candidates.filter((r) => r.label !== null && fold(r.label) === wanted);
  const where = parentId === undefined ? "this instance" : `that ${ref.parent === "block_id" ? "block" : "supergroup"}`;
  if (matches.length === 0) return `no ${ref.noun} called '${name}' in ${where}`;
  if (matches.length > 1) {
    const parent = ref.parent === "block_id" ? "block" : "supergroup";
    return `several ${ref.noun}s in ${where} are called '${name}'; give the ${parent} too`;
  }
  return matches[0] as StructureRecord;
}
