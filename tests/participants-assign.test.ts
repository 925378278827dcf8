import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  addBlock,
  addCampStructure,
  addRoom,
  addSubgroup,
  addSupergroup,
  type CampStructure,
  storedParticipant,
  tenantWithCamp,
} from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { call, newTenant, type TestApp, type TestTenant, testApp } from "./support/fixtures.ts";
import { type ServerProcess, startServerProcess } from "./support/server-process.ts";

/** POST /api/v1/participants/assign: many placements in one step, all or none (issue 31, item 4). */

const t = useTestDatabase();
const ASSIGN = "/api/v1/participants/assign";
const MISSING = "00000000-0000-4000-8000-000000000000";

let app: TestApp;
let tenant: TestTenant;
let key: string;
let camp: CampStructure;

beforeAll(async () => {
  ({ app, tenant, camp } = await tenantWithCamp(t(), "A"));
  key = tenant.admin.key;
});

const fresh = () => randomBytes(4).toString("hex");

/** A live participant of `tenantId` placed as given, written as the owner. */
async function person(
  placement: { super_group_id?: string; sub_group_id?: string; block_id?: string; room_id?: string; room_number?: string } = {},
  options: { tenantId?: string; instanceId?: string } = {},
): Promise<string> {
  const { rows } = await t().admin(
    `insert into public.participants
       (tenant_id, instance_id, user_id, first_name, surname, super_group_id, sub_group_id, block_id, room_id, room_number)
     values ($1, $2, $3, 'Ada', 'Lovelace', $4, $5, $6, $7, $8) returning id`,
    [
      options.tenantId ?? tenant.tenantId,
      options.instanceId ?? camp.instanceId,
      `as-${fresh()}`,
      placement.super_group_id ?? null,
      placement.sub_group_id ?? null,
      placement.block_id ?? null,
      placement.room_id ?? null,
      placement.room_number ?? null,
    ],
  );
  return rows[0].id;
}

const assign = (assignments: unknown, options: { as?: string; query?: string; headers?: Record<string, string> } = {}) =>
  call(app, "POST", `${ASSIGN}${options.query ?? ""}`, {
    key: options.as ?? key,
    body: { assignments },
    headers: options.headers,
  });

const placementOf = async (id: string) => {
  const p = await storedParticipant(t(), id);
  return {
    super_group_id: p.super_group_id,
    sub_group_id: p.sub_group_id,
    block_id: p.block_id,
    room_id: p.room_id,
    room_number: p.room_number,
  };
};

const updateEvents = async (ids: string[]) =>
  (
    await t().admin(
      `select resource_id, actor_user_id, actor_via, request_id, changes from public.audit_events
       where resource_type = 'participant' and action = 'update' and resource_id = any($1::uuid[]) order by id`,
      [ids],
    )
  ).rows;

/** A block with rooms of its own in the camp. */
async function blockWithRooms(...numbers: string[]) {
  const blockId = await addBlock(t(), tenant.tenantId, camp.instanceId, `Block ${fresh()}`);
  const rooms: string[] = [];
  for (const n of numbers) rooms.push(await addRoom(t(), tenant.tenantId, camp.instanceId, blockId, n, null));
  return { blockId, rooms };
}

const NOWHERE = { super_group_id: null, sub_group_id: null, block_id: null, room_id: null, room_number: null };

describe("POST /api/v1/participants/assign", () => {
  it("places every participant and answers each one's placement before and after", async () => {
    const { blockId, rooms } = await blockWithRooms("1", "2");
    const a = await person();
    const b = await person({ block_id: blockId, room_id: rooms[0], room_number: "1" });
    const res = await assign([
      // A room alone brings its block and number, a subgroup alone its supergroup.
      { participant_id: a, room_id: rooms[1], sub_group_id: camp.subgroupId },
      { participant_id: b, room_id: null },
    ]);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toEqual({
      dry_run: false,
      assignments: 2,
      changed: 2,
      would_fail: null,
      participants: [
        {
          participant_id: a,
          changed: true,
          before: NOWHERE,
          after: {
            super_group_id: camp.supergroupId,
            sub_group_id: camp.subgroupId,
            block_id: blockId,
            room_id: rooms[1],
            room_number: "2",
          },
        },
        {
          participant_id: b,
          changed: true,
          before: { ...NOWHERE, block_id: blockId, room_id: rooms[0], room_number: "1" },
          // Clearing the room clears its number and keeps the block.
          after: { ...NOWHERE, block_id: blockId },
        },
      ],
    });
    expect(await placementOf(a)).toEqual(res.body.data.participants[0].after);
    expect(await placementOf(b)).toEqual(res.body.data.participants[1].after);
    // The participant as read through the API agrees.
    const got = await call(app, "GET", `/api/v1/participants/${a}`, { key });
    expect(got.body.data).toMatchObject({ room_id: rooms[1], block_id: blockId, room_number: "2", subgroup_name: "NestA" });
  });

  it("swaps two participants between two rooms in one request", async () => {
    const { blockId, rooms } = await blockWithRooms("S1", "S2");
    const a = await person({ block_id: blockId, room_id: rooms[0], room_number: "S1" });
    const b = await person({ block_id: blockId, room_id: rooms[1], room_number: "S2" });
    const res = await assign([
      { participant_id: a, room_id: rooms[1] },
      { participant_id: b, room_id: rooms[0] },
    ]);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect((await placementOf(a)).room_id).toBe(rooms[1]);
    expect((await placementOf(b)).room_id).toBe(rooms[0]);
  });

  it("moves a participant to another block's room, block and all, and between supergroups with a new subgroup", async () => {
    const from = await blockWithRooms("F1");
    const to = await blockWithRooms("T1");
    const otherSuper = await addSupergroup(t(), tenant.tenantId, camp.instanceId, `Owls ${fresh()}`);
    const otherSub = await addSubgroup(t(), tenant.tenantId, camp.instanceId, otherSuper, "Hollow");
    const a = await person({
      block_id: from.blockId,
      room_id: from.rooms[0],
      room_number: "F1",
      super_group_id: camp.supergroupId,
      sub_group_id: camp.subgroupId,
    });
    const res = await assign([{ participant_id: a, room_id: to.rooms[0], sub_group_id: otherSub }]);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(await placementOf(a)).toEqual({
      super_group_id: otherSuper,
      sub_group_id: otherSub,
      block_id: to.blockId,
      room_id: to.rooms[0],
      room_number: "T1",
    });
  });

  it("leaves a participant already placed so untouched: no write, no audit event, the same ETag", async () => {
    const { blockId, rooms } = await blockWithRooms("U1");
    const a = await person({ block_id: blockId, room_id: rooms[0], room_number: "U1" });
    const etag = (await call(app, "GET", `/api/v1/participants/${a}`, { key })).headers.get("etag");
    const res = await assign([{ participant_id: a, room_id: rooms[0] }]);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ changed: 0, participants: [{ participant_id: a, changed: false }] });
    expect((await call(app, "GET", `/api/v1/participants/${a}`, { key })).headers.get("etag")).toBe(etag);
    expect(await updateEvents([a])).toEqual([]);
  });

  it("writes one audit event per participant moved, with the fields before and after and who moved them", async () => {
    const { blockId, rooms } = await blockWithRooms("A1", "A2");
    const ids = [await person(), await person(), await person()];
    const res = await assign(ids.map((id, i) => ({ participant_id: id, room_id: rooms[i % 2] })));
    expect(res.status).toBe(200);
    const events = await updateEvents(ids);
    expect(events.map((e) => e.resource_id).sort()).toEqual([...ids].sort());
    for (const event of events) {
      expect(event).toMatchObject({ actor_user_id: tenant.admin.userId, actor_via: "api_key" });
      expect(event.request_id).toBe(res.headers.get("x-request-id"));
      const i = ids.indexOf(event.resource_id);
      expect(event.changes).toEqual({
        block_id: [null, blockId],
        room_id: [null, rooms[i % 2]],
        room_number: [null, i % 2 === 0 ? "A1" : "A2"],
      });
    }
    // Through the API as well: the participant's history has the move.
    const history = await call(app, "GET", `/api/v1/audit-events?resource_id=${ids[0]}`, { key });
    expect(history.status).toBe(200);
    expect(history.body.data.map((e: { action: string }) => e.action)).toContain("update");
  });

  it("changes nothing when one entry is bad, and names its place and field", async () => {
    const { rooms } = await blockWithRooms("N1");
    const ids = await Promise.all(Array.from({ length: 5 }, () => person()));
    const entries: Array<Record<string, unknown>> = ids.map((id) => ({ participant_id: id, room_id: rooms[0] }));
    entries[3] = { participant_id: ids[3], room_id: MISSING };
    const res = await assign(entries);
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({
      code: "VALIDATION_ERROR",
      message: "1 of 5 assignments are invalid; nothing was changed",
      details: [{ field: "assignments.3.room_id", issue: "does not exist" }],
    });
    for (const id of ids) expect(await placementOf(id)).toEqual(NOWHERE);
    expect(await updateEvents(ids)).toEqual([]);
  });

  it("reports every problem of every entry at once: shape, participants, references, pairs and repeats", async () => {
    const other = await addCampStructure(t(), tenant.tenantId, `O${fresh()}`);
    const { blockId, rooms } = await blockWithRooms("P1");
    const elsewhere = await blockWithRooms("P2");
    const otherSuper = await addSupergroup(t(), tenant.tenantId, camp.instanceId, `Hawks ${fresh()}`);
    const deleted = await person();
    await t().admin("update public.participants set deleted_at = now() where id = $1", [deleted]);
    const foreign = await newTenant(t().db);
    const foreignCamp = await addCampStructure(t(), foreign.tenantId, "F");
    const theirs = await person({}, { tenantId: foreign.tenantId, instanceId: foreignCamp.instanceId });
    const grouped = await person({ super_group_id: camp.supergroupId, sub_group_id: camp.subgroupId });
    const roomed = await person({ block_id: blockId, room_id: rooms[0], room_number: "P1" });
    const good = await person();
    const twice = await person();

    const res = await assign([
      { participant_id: good, room_id: rooms[0] }, // 0: good
      { participant_id: "not-a-uuid", room_id: rooms[0] }, // 1
      { participant_id: twice, room: "P1" }, // 2: an unknown field, and so nothing set
      { participant_id: twice }, // 3: sets nothing
      "not an assignment", // 4
      { participant_id: MISSING, room_id: rooms[0] }, // 5: no such participant
      { participant_id: deleted, room_id: rooms[0] }, // 6: deleted
      { participant_id: theirs, room_id: rooms[0] }, // 7: another tenant's
      { participant_id: twice, room_id: other.roomId }, // 8: a room of another instance
      { participant_id: grouped, super_group_id: otherSuper }, // 9: the kept subgroup is not in the new supergroup
      { participant_id: roomed, block_id: elsewhere.blockId }, // 10: the kept room is not in the new block
      { participant_id: good, block_id: blockId }, // 11: the same participant again
      { participant_id: grouped.toUpperCase(), room_id: null }, // 12: again, in capitals
      { participant_id: roomed, block_id: null }, // 13: again
      { participant_id: await person(), sub_group_id: camp.subgroupId, super_group_id: otherSuper }, // 14
      { participant_id: await person(), block_id: foreignCamp.blockId }, // 15: another tenant's block
      { participant_id: await person(), room_id: camp.subgroupId }, // 16: a subgroup's id as a room
    ]);
    expect(res.status).toBe(400);
    expect(res.body.error.message).toBe("16 of 17 assignments are invalid; nothing was changed");
    expect(res.body.error.details).toEqual([
      { field: "assignments.1.participant_id", issue: "must be a uuid" },
      { field: "assignments.2.room", issue: "is not a field of this operation" },
      { field: "assignments.2", issue: "must set at least one of super_group_id, sub_group_id, block_id, room_id" },
      { field: "assignments.3", issue: "must set at least one of super_group_id, sub_group_id, block_id, room_id" },
      { field: "assignments.4", issue: "Invalid input: expected object, received string" },
      { field: "assignments.5.participant_id", issue: "does not exist" },
      { field: "assignments.6.participant_id", issue: "does not exist" },
      { field: "assignments.7.participant_id", issue: "does not exist" },
      { field: "assignments.8.room_id", issue: "does not belong to the participant's instance" },
      {
        field: "assignments.9.super_group_id",
        issue: "does not hold the participant's subgroup; send sub_group_id too (null to clear it)",
      },
      { field: "assignments.10.block_id", issue: "does not hold the participant's room; send room_id too (null to clear it)" },
      { field: "assignments.11.participant_id", issue: "is assigned twice in this request (also assignments.0)" },
      { field: "assignments.12.participant_id", issue: "is assigned twice in this request (also assignments.9)" },
      { field: "assignments.13.participant_id", issue: "is assigned twice in this request (also assignments.10)" },
      { field: "assignments.14.sub_group_id", issue: "does not belong to super_group_id" },
      { field: "assignments.15.block_id", issue: "does not exist" },
      { field: "assignments.16.room_id", issue: "does not exist" },
    ]);
    expect(await placementOf(good)).toEqual(NOWHERE);
    // The other tenant's participant is where it was.
    expect((await storedParticipant(t(), theirs)).room_id).toBeNull();
  });

  it("refuses a parent cleared under a kept child, naming the parent", async () => {
    const { blockId, rooms } = await blockWithRooms("C1");
    const a = await person({ block_id: blockId, room_id: rooms[0], room_number: "C1" });
    const res = await assign([{ participant_id: a, block_id: null }]);
    expect(res.status).toBe(400);
    expect(res.body.error.details).toEqual([
      { field: "assignments.0.block_id", issue: "is required when room_id is set (send room_id: null to clear both)" },
    ]);
    // Both cleared together is fine.
    const both = await assign([{ participant_id: a, block_id: null, room_id: null }]);
    expect(both.status, JSON.stringify(both.body)).toBe(200);
    expect(await placementOf(a)).toEqual(NOWHERE);
  });

  it("is bounded: at least one and at most 1,000 assignments", async () => {
    const empty = await assign([]);
    expect(empty.status).toBe(400);
    expect(empty.body.error.details).toEqual([{ field: "assignments", issue: "must hold at least one assignment" }]);
    const a = await person();
    const tooMany = await assign(Array.from({ length: 1001 }, () => ({ participant_id: a, room_id: null })));
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.error.details).toEqual([{ field: "assignments", issue: "must hold at most 1000 assignments" }]);
    const missing = await call(app, "POST", ASSIGN, { key, body: {} });
    expect(missing.status).toBe(400);
    expect(missing.body.error.details).toEqual([{ field: "assignments", issue: "is required" }]);
  });

  it("refuses a participant of an archived instance with 409, naming the entry", async () => {
    const archived = await addCampStructure(t(), tenant.tenantId, `Z${fresh()}`);
    const a = await person({}, { instanceId: archived.instanceId });
    const b = await person();
    await t().admin("update public.instances set status = 'archived' where id = $1", [archived.instanceId]);
    const res = await assign([
      { participant_id: b, room_id: camp.roomId },
      { participant_id: a, room_id: archived.roomId },
    ]);
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe("CONFLICT");
    expect(res.body.error.details).toEqual([
      { field: "assignments.1.participant_id", issue: "is in an archived instance, which is read-only" },
    ]);
    expect(await placementOf(b)).toEqual(NOWHERE);
  });

  it("takes an unknown query parameter for a mistake", async () => {
    const res = await call(app, "POST", `${ASSIGN}?dryrun=true`, { key, body: { assignments: [] } });
    expect(res.status).toBe(400);
    expect(res.body.error.details).toEqual([{ field: "dryrun", issue: "is not a query parameter of this operation" }]);
  });
});

describe("POST /api/v1/participants/assign?dry_run=true", () => {
  it("answers what would change, before and after, and writes nothing", async () => {
    const { blockId, rooms } = await blockWithRooms("D1", "D2");
    const a = await person({ block_id: blockId, room_id: rooms[0], room_number: "D1" });
    const b = await person();
    const res = await assign(
      [
        { participant_id: a, room_id: rooms[1] },
        { participant_id: b, room_id: rooms[0] },
      ],
      { query: "?dry_run=true" },
    );
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toEqual({
      dry_run: true,
      assignments: 2,
      changed: 2,
      would_fail: null,
      participants: [
        {
          participant_id: a,
          changed: true,
          before: { ...NOWHERE, block_id: blockId, room_id: rooms[0], room_number: "D1" },
          after: { ...NOWHERE, block_id: blockId, room_id: rooms[1], room_number: "D2" },
        },
        {
          participant_id: b,
          changed: true,
          before: NOWHERE,
          after: { ...NOWHERE, block_id: blockId, room_id: rooms[0], room_number: "D1" },
        },
      ],
    });
    expect((await placementOf(a)).room_id).toBe(rooms[0]);
    expect(await placementOf(b)).toEqual(NOWHERE);
    expect(await updateEvents([a, b])).toEqual([]);
    // dry_run=false is a real run.
    const real = await assign([{ participant_id: b, room_id: rooms[0] }], { query: "?dry_run=false" });
    expect(real.body.data.dry_run).toBe(false);
    expect((await placementOf(b)).room_id).toBe(rooms[0]);
  });

  it("answers what would fail, as the request would be refused, beside what would change for the good entries", async () => {
    const { rooms } = await blockWithRooms("W1");
    const a = await person();
    const b = await person();
    const res = await assign(
      [
        { participant_id: a, room_id: rooms[0] },
        { participant_id: b, room_id: MISSING },
      ],
      { query: "?dry_run=1" },
    );
    expect(res.status).toBe(200);
    expect(res.body.data.would_fail).toEqual({
      status: 400,
      code: "VALIDATION_ERROR",
      message: "1 of 2 assignments are invalid; nothing was changed",
      details: [{ field: "assignments.1.room_id", issue: "does not exist" }],
    });
    expect(res.body.data.participants.map((p: { participant_id: string }) => p.participant_id)).toEqual([a]);
    expect(await placementOf(a)).toEqual(NOWHERE);
    // The real request is refused with exactly that.
    const real = await assign([
      { participant_id: a, room_id: rooms[0] },
      { participant_id: b, room_id: MISSING },
    ]);
    expect(real.status).toBe(400);
    expect(real.body.error).toMatchObject({
      code: res.body.data.would_fail.code,
      message: res.body.data.would_fail.message,
      details: res.body.data.would_fail.details,
    });
  });

  it("answers the 409 the request would get: a participant in an archived instance", async () => {
    const { rooms } = await blockWithRooms("R1");
    const a = await person();
    const archived = await addCampStructure(t(), tenant.tenantId, `Y${fresh()}`);
    const b = await person({}, { instanceId: archived.instanceId });
    await t().admin("update public.instances set status = 'archived' where id = $1", [archived.instanceId]);
    const res = await assign(
      [
        { participant_id: a, room_id: rooms[0] },
        { participant_id: b, room_id: null },
      ],
      { query: "?dry_run=true" },
    );
    expect(res.status).toBe(200);
    expect(res.body.data.would_fail).toMatchObject({ status: 409, code: "CONFLICT" });
    expect(await placementOf(a)).toEqual(NOWHERE);
  });

  it("refuses a malformed dry_run", async () => {
    const res = await call(app, "POST", `${ASSIGN}?dry_run=yes`, { key, body: { assignments: [] } });
    expect(res.status).toBe(400);
    expect(res.body.error.details).toEqual([{ field: "dry_run", issue: "must be true or false" }]);
  });
});

describe("assign and its callers", () => {
  it("is open to staff as participant updates are, and closed to a read-only key", async () => {
    const staff = await tenant.addUser("staff");
    const { rooms } = await blockWithRooms("K1");
    const a = await person();
    const res = await assign([{ participant_id: a, room_id: rooms[0] }], { as: staff.key });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const events = await updateEvents([a]);
    expect(events.map((e) => e.actor_user_id)).toEqual([staff.userId]);

    const reader = await tenant.addUser("admin", { withKey: false });
    const issued = await call(app, "POST", "/api/v1/api-keys/generate", {
      key,
      body: { email: reader.email, name: "read only", scopes: ["read"] },
    });
    const readOnly = await assign([{ participant_id: a, room_id: null }], { as: issued.body.data.key });
    expect(readOnly.status).toBe(403);
    expect(readOnly.body.error.code).toBe("FORBIDDEN");
    expect((await placementOf(a)).room_id).toBe(rooms[0]);
  });

  it("keeps tenants apart: another tenant's credential finds none of these participants and moves nothing", async () => {
    const { rooms } = await blockWithRooms("I1");
    const a = await person();
    const intruder = await tenantWithCamp(t(), "Intruder");
    const theirs = await person({}, { tenantId: intruder.tenant.tenantId, instanceId: intruder.camp.instanceId });
    const res = await call(intruder.app, "POST", ASSIGN, {
      key: intruder.tenant.admin.key,
      body: {
        assignments: [
          { participant_id: a, room_id: intruder.camp.roomId },
          // Their own participant into this tenant's room: the room is not theirs to find.
          { participant_id: theirs, room_id: rooms[0] },
        ],
      },
    });
    expect(res.status).toBe(400);
    expect(res.body.error.details).toEqual([
      { field: "assignments.0.participant_id", issue: "does not exist" },
      { field: "assignments.1.room_id", issue: "does not exist" },
    ]);
    // The same answer as for an id that never existed: nothing tells the two apart.
    const never = await call(intruder.app, "POST", ASSIGN, {
      key: intruder.tenant.admin.key,
      body: { assignments: [{ participant_id: MISSING, room_id: intruder.camp.roomId }] },
    });
    expect(never.body.error.details).toEqual([{ field: "assignments.0.participant_id", issue: "does not exist" }]);
    expect(await placementOf(a)).toEqual(NOWHERE);
    expect((await storedParticipant(t(), theirs)).room_id).toBeNull();
    // A dry run tells no more than the real request: no before or after of another tenant's participant.
    const dry = await call(intruder.app, "POST", `${ASSIGN}?dry_run=true`, {
      key: intruder.tenant.admin.key,
      body: { assignments: [{ participant_id: a, room_id: intruder.camp.roomId }] },
    });
    expect(dry.status).toBe(200);
    expect(dry.body.data.participants).toEqual([]);
    expect(dry.body.data.would_fail.details).toEqual([{ field: "assignments.0.participant_id", issue: "does not exist" }]);
  });

  it("replays its answer to a retry with the same Idempotency-Key and writes once", async () => {
    const { rooms } = await blockWithRooms("Q1", "Q2");
    const a = await person();
    const headers = { "Idempotency-Key": `assign-${fresh()}` };
    const first = await assign([{ participant_id: a, room_id: rooms[0] }], { headers });
    expect(first.status).toBe(200);
    const retry = await assign([{ participant_id: a, room_id: rooms[0] }], { headers });
    expect(retry.status).toBe(200);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    expect(retry.body).toEqual(first.body);
    expect(await updateEvents([a])).toHaveLength(1);
    // The same key for another assignment set is a conflict, not a second write.
    const other = await assign([{ participant_id: a, room_id: rooms[1] }], { headers });
    expect(other.status).toBe(409);
    expect((await placementOf(a)).room_id).toBe(rooms[0]);
  });

  it("costs one rate-limit hit per 100 assignments", async () => {
    const limited = testApp(t().db, { RATE_LIMIT_PER_MINUTE: "1000" });
    const caller = (await tenant.addUser("staff")).key as string;
    const remaining = (res: { headers: Headers }) => Number(/r=(\d+)/.exec(res.headers.get("ratelimit") ?? "")?.[1]);
    const a = await person();
    const send = (n: number) =>
      call(limited, "POST", `${ASSIGN}?dry_run=true`, {
        key: caller,
        body: { assignments: Array.from({ length: n }, () => ({ participant_id: a, room_id: null })) },
      });
    const costs: number[] = [];
    let before = remaining(await call(limited, "GET", "/api/v1/instances", { key: caller }));
    for (const n of [1, 100, 101, 950, 1000, 5000]) {
      const after = remaining(await send(n));
      costs.push(before - after);
      before = after;
    }
    // Within one minute's window (a window turning over in between would show as a negative cost).
    if (costs.every((c) => c >= 0)) expect(costs).toEqual([1, 1, 2, 10, 10, 10]);
  });
});

describe("assign and room capacity", () => {
  /** A block of rooms with these capacities. */
  async function roomsOf(...capacities: number[]) {
    const { blockId, rooms } = await blockWithRooms(...capacities.map((_, i) => `Cap${i + 1}`));
    for (const [i, id] of rooms.entries()) {
      await t().admin("update public.rooms set capacity = $2 where id = $1", [id, capacities[i]]);
    }
    return { blockId, rooms };
  }
  const inRoom = (blockId: string, roomId: string) => person({ block_id: blockId, room_id: roomId, room_number: "x" });
  const occupancy = async (roomId: string) =>
    (await t().admin("select count(*)::int as n from public.participants where room_id = $1 and deleted_at is null", [roomId]))
      .rows[0].n;

  it("swaps two people between two full rooms in one request", async () => {
    const { blockId, rooms } = await roomsOf(1, 1);
    const a = await inRoom(blockId, rooms[0] as string);
    const b = await inRoom(blockId, rooms[1] as string);
    // Each move alone overfills a room.
    const alone = await assign([{ participant_id: a, room_id: rooms[1] }]);
    expect(alone.status).toBe(409);
    const swap = await assign([
      { participant_id: a, room_id: rooms[1] },
      { participant_id: b, room_id: rooms[0] },
    ]);
    expect(swap.status, JSON.stringify(swap.body)).toBe(200);
    expect((await placementOf(a)).room_id).toBe(rooms[1]);
    expect((await placementOf(b)).room_id).toBe(rooms[0]);
  });

  it("rotates three people through three full rooms in one request", async () => {
    const { blockId, rooms } = await roomsOf(1, 1, 1);
    const ids = [await inRoom(blockId, rooms[0] as string), await inRoom(blockId, rooms[1] as string)];
    ids.push(await inRoom(blockId, rooms[2] as string));
    const res = await assign(ids.map((id, i) => ({ participant_id: id, room_id: rooms[(i + 1) % 3] })));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    for (const [i, id] of ids.entries()) expect((await placementOf(id)).room_id).toBe(rooms[(i + 1) % 3]);
  });

  it("refuses a set that leaves rooms over capacity with 409 naming every one of them, and changes nothing", async () => {
    const { blockId, rooms } = await roomsOf(1, 2, 5);
    const [small, pair, big] = rooms as [string, string, string];
    const already = await inRoom(blockId, small);
    const movers = await Promise.all(Array.from({ length: 4 }, () => person()));
    const res = await assign([
      { participant_id: movers[0], room_id: small }, // small: 2 of 1
      { participant_id: movers[1], room_id: pair },
      { participant_id: movers[2], room_id: pair },
      { participant_id: movers[3], room_id: pair }, // pair: 3 of 2
      { participant_id: (await person()) as string, room_id: big }, // big: 1 of 5, fine
    ]);
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe("CONFLICT");
    expect(res.body.error.message).toBe("2 rooms would be over their capacity");
    const byRoom = [...res.body.error.details].sort((x, y) => x.room_number.localeCompare(y.room_number));
    expect(byRoom).toEqual([
      {
        field: "assignments",
        issue: "room Cap1 would hold 2 participants, over its capacity of 1",
        room_id: small,
        room_number: "Cap1",
        capacity: 1,
        occupancy: 2,
      },
      {
        field: "assignments",
        issue: "room Cap2 would hold 3 participants, over its capacity of 2",
        room_id: pair,
        room_number: "Cap2",
        capacity: 2,
        occupancy: 3,
      },
    ]);
    for (const id of movers) expect((await placementOf(id)).room_id).toBeNull();
    expect((await placementOf(already)).room_id).toBe(small);
    expect(await updateEvents([...movers, already])).toEqual([]);

    // Judged on the final state: the same set with the room's occupant moving out and one mover fewer fits.
    const fits = await assign([
      { participant_id: movers[0], room_id: small },
      { participant_id: movers[1], room_id: pair },
      { participant_id: movers[2], room_id: pair },
      { participant_id: movers[3], room_id: big },
      { participant_id: already, room_id: big },
    ]);
    expect(fits.status, JSON.stringify(fits.body)).toBe(200);
    expect([await occupancy(small), await occupancy(pair), await occupancy(big)]).toEqual([1, 2, 2]);
  });

  it("answers in a dry run which rooms would overflow, and writes nothing", async () => {
    const { blockId, rooms } = await roomsOf(1, 1);
    const [one, two] = rooms as [string, string];
    const occupants = [await inRoom(blockId, one), await inRoom(blockId, two)];
    const a = await person();
    const b = await person();
    const entries = [
      { participant_id: a, room_id: one },
      { participant_id: b, room_id: two },
    ];
    const res = await assign(entries, { query: "?dry_run=true" });
    expect(res.status).toBe(200);
    expect(res.body.data.changed).toBe(2);
    expect(res.body.data.participants.map((p: { after: { room_id: string } }) => p.after.room_id)).toEqual([one, two]);
    expect(res.body.data.would_fail).toMatchObject({ status: 409, code: "CONFLICT" });
    expect(res.body.data.would_fail.details.map((d: { room_id: string }) => d.room_id).sort()).toEqual([one, two].sort());
    expect([await occupancy(one), await occupancy(two)]).toEqual([1, 1]);
    // With the occupants moved out in the same set, it would succeed; still nothing is written.
    const freed = await assign([...entries, ...occupants.map((id) => ({ participant_id: id, room_id: null }))], {
      query: "?dry_run=true",
    });
    expect(freed.body.data).toMatchObject({ changed: 4, would_fail: null });
    expect([await occupancy(one), await occupancy(two)]).toEqual([1, 1]);
    expect((await placementOf(a)).room_id).toBeNull();
  });

  it("lets an admin overfill rooms with override_capacity=true, recorded on each participant's audit event", async () => {
    const { rooms } = await roomsOf(1);
    const [full] = rooms as [string];
    const movers = [await person(), await person()];
    const entries = movers.map((id) => ({ participant_id: id, room_id: full }));
    const staff = await tenant.addUser("staff");
    const refused = await assign(entries, { as: staff.key, query: "?override_capacity=true" });
    expect(refused.status).toBe(403);
    expect(refused.body.error.details).toEqual([{ field: "override_capacity", issue: expect.any(String) }]);
    // Even as a dry run: the right is the caller's, whatever the entries.
    const dry = await assign(entries, { as: staff.key, query: "?override_capacity=true&dry_run=true" });
    expect(dry.status).toBe(403);
    expect(await occupancy(full)).toBe(0);

    const res = await assign(entries, { query: "?override_capacity=true" });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(await occupancy(full)).toBe(2);
    const { rows } = await t().admin(
      `select resource_id, actor_user_id, capacity_override from public.audit_events
       where resource_type = 'participant' and action = 'update' and resource_id = any($1::uuid[])`,
      [movers],
    );
    expect(rows).toHaveLength(2);
    for (const row of rows) {
      expect(row.actor_user_id).toBe(tenant.admin.userId);
      expect(row.capacity_override).toMatchObject({ room_id: full, capacity: 1 });
    }
  });

  it("replays an override only to a caller who is still an admin", async () => {
    const { rooms } = await roomsOf(1);
    const admin = await tenant.addUser("admin");
    const entries = [await person(), await person()].map((id) => ({ participant_id: id, room_id: rooms[0] }));
    const headers = { "Idempotency-Key": `override-${fresh()}` };
    const query = "?override_capacity=true";
    expect((await assign(entries, { as: admin.key, query, headers })).status).toBe(200);
    await t().admin("update public.users set role = 'staff' where id = $1", [admin.userId]);
    const replay = await assign(entries, { as: admin.key, query, headers });
    expect(replay.status).toBe(403);
    expect(replay.body.error.code).toBe("FORBIDDEN");
  });

  it("gives the last bed to exactly one of two concurrent requests", async () => {
    const { rooms } = await roomsOf(1);
    const a = await person();
    const b = await person();
    const [first, second] = await Promise.all([
      assign([{ participant_id: a, room_id: rooms[0] }]),
      assign([{ participant_id: b, room_id: rooms[0] }]),
    ]);
    expect([first.status, second.status].sort()).toEqual([200, 409]);
    expect(await occupancy(rooms[0] as string)).toBe(1);
  });
});

describe("assign through the real HTTP server", () => {
  let server: ServerProcess;
  beforeAll(async () => {
    server = await startServerProcess({ DATABASE_URL: t().url, RATE_LIMIT_PER_MINUTE: "1000" });
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  });

  /** A POST to the server, through the proxy that holds every answer to the OpenAPI document. */
  async function post(query: string, assignments: unknown, headers: Record<string, string> = {}) {
    const response = await fetch(`${server.url}${ASSIGN}${query}`, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-API-Key": key, ...headers },
      body: JSON.stringify({ assignments }),
    });
    return { status: response.status, headers: response.headers, body: await response.json() };
  }

  it("swaps between full rooms, previews, refuses overfilling naming every room, and replays a retry", async () => {
    const { blockId, rooms } = await blockWithRooms("H1", "H2");
    const [one, two] = rooms as [string, string];
    for (const id of rooms) await t().admin("update public.rooms set capacity = 1 where id = $1", [id]);
    const a = await person({ block_id: blockId, room_id: one, room_number: "H1" });
    const b = await person({ block_id: blockId, room_id: two, room_number: "H2" });
    const swap = [
      { participant_id: a, room_id: two },
      { participant_id: b, room_id: one },
    ];

    const preview = await post("?dry_run=true", swap);
    expect(preview.status).toBe(200);
    expect(preview.body.data).toMatchObject({ dry_run: true, changed: 2, would_fail: null });
    expect((await placementOf(a)).room_id).toBe(one);

    const headers = { "Idempotency-Key": `http-swap-${fresh()}` };
    const done = await post("", swap, headers);
    expect(done.status).toBe(200);
    expect(done.headers.get("ratelimit")).toMatch(/^"default";r=\d+;t=\d+$/);
    expect([(await placementOf(a)).room_id, (await placementOf(b)).room_id]).toEqual([two, one]);
    const retry = await post("", swap, headers);
    expect(retry.status).toBe(200);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    expect(await updateEvents([a, b])).toHaveLength(2);

    const c = await person();
    const d = await person();
    const over = await post("", [
      { participant_id: c, room_id: one },
      { participant_id: d, room_id: two },
    ]);
    expect(over.status).toBe(409);
    expect(over.body.error.details.map((i: { room_id: string }) => i.room_id).sort()).toEqual([one, two].sort());
    expect(over.body.error.request_id).toBe(over.headers.get("x-request-id"));

    const bad = await post("", [{ participant_id: c, room_id: "nope" }]);
    expect(bad.status).toBe(400);
    expect(bad.body.error.details).toEqual([{ field: "assignments.0.room_id", issue: "must be a uuid" }]);
  });
});
