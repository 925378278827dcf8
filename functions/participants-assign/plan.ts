import type { StructureKind, StructureRecord } from "../participants-bulk/data.ts";
import type { RowIssue } from "../participants-bulk/rows.ts";
import type { AssignmentInput, PlacementRecord, PlacementReference } from "./schemas.ts";

/**
 * An assignment set checked against what it refers to, all at once, so that
 * every bad entry is named with its field: the participant's placement after
 * each entry (the final state the whole set leaves), and every way an entry
 * breaks a participant rule. The database holds the same rules (the
 * participant triggers and composite foreign keys) and still checks every row
 * it writes; this turns a refusal into a report of every entry at once.
 */

/** A live participant of the caller's tenant, as an assignment finds it. */
export interface CurrentParticipant extends PlacementRecord {
  id: string;
  instance_id: string;
  instance_status: string;
}

export interface Entry {
  /** Its index in the request's `assignments`. */
  at: number;
  input: AssignmentInput;
}

export interface PlannedEntry {
  at: number;
  participant_id: string;
  instance_id: string;
  changed: boolean;
  before: PlacementRecord;
  after: PlacementRecord;
}

export interface Plan {
  /** Entries with no problem of their own, in request order. */
  planned: PlannedEntry[];
  /** Every problem of every entry; `field` is relative to the entry (`room_id`). */
  issues: RowIssue[];
  /** Entries whose participant is in an archived (read-only) instance. */
  archived: number[];
}

interface Reference {
  field: PlacementReference;
  kind: StructureKind;
  /** The reference a record of this kind must sit in: a subgroup's supergroup, a room's block. */
  parent?: PlacementReference;
}

/** Parents first: a child sent alone fills its parent, which the parent's own entry may have set. */
const REFERENCES: Reference[] = [
  { field: "super_group_id", kind: "supergroup" },
  { field: "sub_group_id", kind: "subgroup", parent: "super_group_id" },
  { field: "block_id", kind: "block" },
  { field: "room_id", kind: "room", parent: "block_id" },
];

/** The ids an assignment set needs to look up: those it sends and those its participants keep. */
export function referencedIds(entries: Entry[], current: Iterable<CurrentParticipant>): string[] {
  const ids = new Set<string>();
  for (const { input } of entries) for (const ref of REFERENCES) if (input[ref.field]) ids.add(input[ref.field] as string);
  for (const p of current) for (const ref of REFERENCES) if (p[ref.field]) ids.add(p[ref.field] as string);
  return [...ids];
}

export const placementOf = (p: PlacementRecord): PlacementRecord => ({
  super_group_id: p.super_group_id,
  sub_group_id: p.sub_group_id,
  block_id: p.block_id,
  room_id: p.room_id,
  room_number: p.room_number,
});

const samePlacement = (a: PlacementRecord, b: PlacementRecord) =>
  a.super_group_id === b.super_group_id &&
  a.sub_group_id === b.sub_group_id &&
  a.block_id === b.block_id &&
  a.room_id === b.room_id &&
  a.room_number === b.room_number;

export function planAssignments(entries: Entry[], current: Map<string, CurrentParticipant>, structure: StructureRecord[]): Plan {
  const byId = new Map(structure.map((r) => [r.id, r]));
  const firstAt = new Map<string, number>();
  const plan: Plan = { planned: [], issues: [], archived: [] };

  for (const { at, input } of entries) {
    const before = plan.issues.length;
    const report = (field: string, issue: string) => plan.issues.push({ at, field, issue });
    const id = input.participant_id.toLowerCase();
    const first = firstAt.get(id);
    if (first !== undefined) {
      report("participant_id", `is assigned twice in this request (also assignments.${first})`);
      continue;
    }
    firstAt.set(id, at);
    const participant = current.get(id);
    if (!participant) {
      // Another tenant's participant, a deleted one and one that never was are the same to the caller.
      report("participant_id", "does not exist");
      continue;
    }
    if (participant.instance_status === "archived") plan.archived.push(at);

    const after = placementOf(participant);
    // Each reference sent, resolved; a missing one or one of another instance is reported on its field.
    const resolved = new Map<PlacementReference, StructureRecord>();
    for (const ref of REFERENCES) {
      const value = input[ref.field];
      if (value === undefined) continue;
      after[ref.field] = value === null ? null : value.toLowerCase();
      if (ref.kind === "room") after.room_number = null;
      if (value === null) continue;
      const record = byId.get(value.toLowerCase());
      if (!record || record.kind !== ref.kind) report(ref.field, "does not exist");
      else if (record.instance_id !== participant.instance_id) report(ref.field, "does not belong to the participant's instance");
      else {
        resolved.set(ref.field, record);
        if (ref.kind === "room") after.room_number = record.name;
      }
    }
    if (plan.issues.length > before) continue;

    // A child sent without its parent brings its parent, as a participant update does.
    for (const ref of REFERENCES) {
      const record = resolved.get(ref.field);
      if (ref.parent && record && input[ref.parent] === undefined) after[ref.parent] = record.parent_id;
    }
    // The final state's pairs: a subgroup inside the supergroup, a room inside the block.
    for (const ref of REFERENCES) {
      if (!ref.parent) continue;
      const child = after[ref.field];
      if (child === null) continue;
      const parent = after[ref.parent];
      const sent = input[ref.field] !== undefined;
      const noun = ref.kind === "room" ? "room" : "subgroup";
      if (parent === null) {
        report(ref.parent, `is required when ${ref.field} is set (send ${ref.field}: null to clear both)`);
        continue;
      }
      const record = resolved.get(ref.field) ?? byId.get(child);
      if (record && record.parent_id !== parent) {
        if (sent) report(ref.field, `does not belong to ${ref.parent}`);
        else report(ref.parent, `does not hold the participant's ${noun}; send ${ref.field} too (null to clear it)`);
      }
    }
    if (plan.issues.length > before) continue;

    const placement = placementOf(participant);
    plan.planned.push({
      at,
      participant_id: participant.id,
      instance_id: participant.instance_id,
      changed: !samePlacement(placement, after),
      before: placement,
      after,
    });
  }
  return plan;
}
