import { describe, expect, it } from "vitest";
import { type CurrentParticipant, planAssignments, referencedIds } from "../functions/participants-assign/plan.ts";
import type { StructureRecord } from "../functions/participants-bulk/data.ts";

/** The assignment planner on its own (functions/participants-assign/plan.ts): no database. */

const id = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, "0")}`;
const INSTANCE = id(1);
const OTHER_INSTANCE = id(2);
const SG = id(10);
const SG2 = id(11);
const SUB = id(20);
const SUB2 = id(21);
const BLOCK = id(30);
const BLOCK2 = id(31);
const ROOM = id(40);
const ROOM2 = id(41);
const FOREIGN_ROOM = id(42);

const structure: StructureRecord[] = [
  { kind: "supergroup", id: SG, instance_id: INSTANCE, parent_id: null, name: "Eagles", label: null },
  { kind: "supergroup", id: SG2, instance_id: INSTANCE, parent_id: null, name: "Owls", label: null },
  { kind: "subgroup", id: SUB, instance_id: INSTANCE, parent_id: SG, name: "Nest", label: null },
  { kind: "subgroup", id: SUB2, instance_id: INSTANCE, parent_id: SG2, name: "Hollow", label: null },
  { kind: "block", id: BLOCK, instance_id: INSTANCE, parent_id: null, name: "North", label: null },
  { kind: "block", id: BLOCK2, instance_id: INSTANCE, parent_id: null, name: "South", label: null },
  { kind: "room", id: ROOM, instance_id: INSTANCE, parent_id: BLOCK, name: "101", label: "Lakeview" },
  { kind: "room", id: ROOM2, instance_id: INSTANCE, parent_id: BLOCK2, name: "201", label: null },
  { kind: "room", id: FOREIGN_ROOM, instance_id: OTHER_INSTANCE, parent_id: id(32), name: "9", label: null },
];

const person = (n: number, placement: Partial<CurrentParticipant> = {}): CurrentParticipant => ({
  id: id(100 + n),
  instance_id: INSTANCE,
  instance_status: "active",
  super_group_id: null,
  sub_group_id: null,
  block_id: null,
  room_id: null,
  room_number: null,
  ...placement,
});

const current = (...people: CurrentParticipant[]) => new Map(people.map((p) => [p.id, p]));

describe("planAssignments", () => {
  it("fills a parent from a child sent alone, and the room number from the room", () => {
    const a = person(1);
    const plan = planAssignments(
      [{ at: 0, input: { participant_id: a.id, room_id: ROOM, sub_group_id: SUB } }],
      current(a),
      structure,
    );
    expect(plan.issues).toEqual([]);
    expect(plan.planned[0]?.after).toEqual({
      super_group_id: SG,
      sub_group_id: SUB,
      block_id: BLOCK,
      room_id: ROOM,
      room_number: "101",
    });
    expect(plan.planned[0]?.changed).toBe(true);
  });

  it("keeps what is not sent and clears the room number with the room", () => {
    const a = person(1, { block_id: BLOCK, room_id: ROOM, room_number: "custom", super_group_id: SG });
    const plan = planAssignments([{ at: 0, input: { participant_id: a.id, room_id: null } }], current(a), structure);
    expect(plan.planned[0]?.after).toEqual({
      super_group_id: SG,
      sub_group_id: null,
      block_id: BLOCK,
      room_id: null,
      room_number: null,
    });
  });

  it("marks an entry that changes nothing as unchanged (a custom room number kept when the room is not sent)", () => {
    const a = person(1, { block_id: BLOCK, room_id: ROOM, room_number: "custom" });
    const plan = planAssignments([{ at: 0, input: { participant_id: a.id, block_id: BLOCK } }], current(a), structure);
    expect(plan.planned[0]?.changed).toBe(false);
    expect(plan.planned[0]?.after.room_number).toBe("custom");
  });

  it("names the parent when a new parent does not hold the kept child, and the child when the sent child is outside the sent parent", () => {
    const a = person(1, { super_group_id: SG, sub_group_id: SUB });
    const b = person(2);
    const plan = planAssignments(
      [
        { at: 0, input: { participant_id: a.id, super_group_id: SG2 } },
        { at: 1, input: { participant_id: b.id, super_group_id: SG2, sub_group_id: SUB } },
      ],
      current(a, b),
      structure,
    );
    expect(plan.issues).toEqual([
      {
        at: 0,
        field: "super_group_id",
        issue: "does not hold the participant's subgroup; send sub_group_id too (null to clear it)",
      },
      { at: 1, field: "sub_group_id", issue: "does not belong to super_group_id" },
    ]);
    expect(plan.planned).toEqual([]);
  });

  it("accepts a move to another block's room with its new block sent alongside, or filled", () => {
    const a = person(1, { block_id: BLOCK, room_id: ROOM, room_number: "101" });
    const b = person(2, { block_id: BLOCK, room_id: ROOM, room_number: "101" });
    const plan = planAssignments(
      [
        { at: 0, input: { participant_id: a.id, block_id: BLOCK2, room_id: ROOM2 } },
        { at: 1, input: { participant_id: b.id, room_id: ROOM2 } },
      ],
      current(a, b),
      structure,
    );
    expect(plan.issues).toEqual([]);
    expect(plan.planned.map((p) => [p.after.block_id, p.after.room_id, p.after.room_number])).toEqual([
      [BLOCK2, ROOM2, "201"],
      [BLOCK2, ROOM2, "201"],
    ]);
  });

  it("reports a reference of another kind or another instance, a missing participant and a repeat, each once", () => {
    const a = person(1);
    const plan = planAssignments(
      [
        { at: 0, input: { participant_id: a.id, room_id: SUB } },
        { at: 1, input: { participant_id: id(999), room_id: ROOM } },
        { at: 2, input: { participant_id: a.id.toUpperCase(), room_id: FOREIGN_ROOM } },
      ],
      current(a),
      structure,
    );
    expect(plan.issues).toEqual([
      { at: 0, field: "room_id", issue: "does not exist" },
      { at: 1, field: "participant_id", issue: "does not exist" },
      { at: 2, field: "participant_id", issue: "is assigned twice in this request (also assignments.0)" },
    ]);
  });

  it("lists a participant of an archived instance apart, for a 409", () => {
    const a = person(1, { instance_status: "archived" });
    const plan = planAssignments([{ at: 3, input: { participant_id: a.id, room_id: null } }], current(a), structure);
    expect(plan.issues).toEqual([]);
    expect(plan.archived).toEqual([3]);
  });
});

describe("referencedIds", () => {
  it("asks for what the entries send and what their participants keep, once each", () => {
    const a = person(1, { sub_group_id: SUB, super_group_id: SG });
    const ids = referencedIds([{ at: 0, input: { participant_id: a.id, room_id: ROOM, sub_group_id: SUB } }], [a]);
    expect(ids.sort()).toEqual([ROOM, SG, SUB].sort());
  });
});
