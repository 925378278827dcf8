import { beforeAll, describe, expect, it } from "vitest";
import { addCampStructure, addRoom, addSubgroup, type CampStructure, tenantWithCamp } from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { call, newTenant, type TestApp, type TestTenant } from "./support/fixtures.ts";

const t = useTestDatabase();
const BULK = "/api/v1/participants/bulk";
const MISSING = "00000000-0000-4000-8000-000000000000";

let app: TestApp;
let tenant: TestTenant;
let key: string;
let camp: CampStructure;
let other: CampStructure;
let counter = 0;

beforeAll(async () => {
  ({ app, tenant, camp } = await tenantWithCamp(t(), "A"));
  key = tenant.admin.key;
  other = await addCampStructure(t(), tenant.tenantId, "B");
});

function row(overrides: Record<string, unknown> = {}) {
  return { user_id: `b-${++counter}`, instance_id: camp.instanceId, first_name: "Ada", surname: "Lovelace", ...overrides };
}

const bulk = (participants: unknown, as = key) => call(app, "POST", BULK, { key: as, body: { participants } });

async function countIn(instanceId: string): Promise<number> {
  const res = await t().admin("select count(*)::int as n from participants where instance_id = $1", [instanceId]);
  return res.rows[0].n;
}

describe("POST /api/v1/participants/bulk", () => {
  it("creates every row and answers 201 with the stored rows in the order sent", async () => {
    const rows = [
      row({ first_name: "Zoë", surname: "O'Brien" }),
      row({ sub_group_id: camp.subgroupId, room_id: camp.roomId, gender: "female", date_of_birth: "2012-03-04" }),
      row({ status: "inactive", full_name: "Lady Ada" }),
    ];
    const res = await bulk(rows);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.success).toBe(true);
    expect(res.body.data.map((p: { user_id: string }) => p.user_id)).toEqual(rows.map((r) => r.user_id));
    const [first, second, third] = res.body.data;
    expect(first).toMatchObject({ full_name: "Zoë O'Brien", status: "active", instance_id: camp.instanceId });
    // As for single creates: the supergroup is filled from the subgroup, the block and room number from the room.
    expect(second).toMatchObject({
      super_group_id: camp.supergroupId,
      sub_group_id: camp.subgroupId,
      block_id: camp.blockId,
      room_id: camp.roomId,
      room_number: "10A",
      gender: "Female",
      date_of_birth: "2012-03-04",
      supergroup_name: "EaglesA",
      subgroup_name: "NestA",
      block_name: "NorthA",
      room_name: "LakeviewA",
    });
    expect(third).toMatchObject({ status: "inactive", full_name: "Lady Ada" });
    const got = await call(app, "GET", `/api/v1/participants/${second.id}`, { key });
    expect(got.status).toBe(200);
    expect(got.body.data).toEqual(second);
  });

  it("lists a batch in the order it was sent", async () => {
    const instance = (await addCampStructure(t(), tenant.tenantId, "Order")).instanceId;
    const rows = Array.from({ length: 50 }, (_, i) => row({ instance_id: instance, user_id: `order-${i}` }));
    expect((await bulk(rows)).status).toBe(201);
    const list = await call(app, "GET", `/api/v1/participants?instance_id=${instance}&limit=100`, { key });
    expect(list.status).toBe(200);
    expect(list.body.data.map((p: { user_id: string }) => p.user_id)).toEqual(rows.map((r) => r.user_id));
  });

  it("creates nothing when one row of the batch is bad, and names that row and field", async () => {
    const instance = (await addCampStructure(t(), tenant.tenantId, "None")).instanceId;
    const rows = Array.from({ length: 20 }, () => row({ instance_id: instance }));
    rows[13] = row({ instance_id: instance, date_of_birth: "2012-02-30" });
    const res = await bulk(rows);
    expect(res.status).toBe(400);
    expect(res.body.success).toBe(false);
    expect(res.body.error.code).toBe("VALIDATION_ERROR");
    expect(res.body.error.message).toMatch(/1 of 20 rows are invalid; nothing was created/);
    expect(res.body.error.details).toEqual([{ field: "participants.13.date_of_birth", issue: "is not a calendar date" }]);
    expect(await countIn(instance)).toBe(0);
  });

  it("reports duplicate user_ids within the batch on every repeat", async () => {
    const res = await bulk([row({ user_id: "twin" }), row(), row({ user_id: "twin" }), row({ user_id: "twin" })]);
    expect(res.status).toBe(400);
    expect(res.body.error.details).toEqual([
      { field: "participants.2.user_id", issue: "is used twice in this batch (also row 0)" },
      { field: "participants.3.user_id", issue: "is used twice in this batch (also row 0)" },
    ]);
  });

  it("allows the same user_id in two instances of one batch", async () => {
    const res = await bulk([row({ user_id: "shared" }), row({ user_id: "shared", instance_id: other.instanceId })]);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  });

  it("reports every problem of every row: schema, duplicates in the database, references, pairs and dates", async () => {
    const taken = row();
    expect((await bulk([taken])).status).toBe(201);
    const foreignSub = await addSubgroup(t(), tenant.tenantId, camp.instanceId, camp.supergroupId, "Foreign nest");
    const otherBlockRoom = await addRoom(t(), tenant.tenantId, other.instanceId, other.blockId, "77", null);
    const rows = [
      row(), // 0: good
      { user_id: "x", instance_id: camp.instanceId, surname: "Only" }, // 1: first_name missing
      row({ gender: "robot", arrival_date: "2026-07-01", departure_date: "2026-07-32" }), // 2: two schema issues
      row({ user_id: taken.user_id }), // 3: taken in the database
      row({ super_group_id: other.supergroupId }), // 4: supergroup of another instance
      row({ super_group_id: other.supergroupId, sub_group_id: camp.subgroupId, instance_id: other.instanceId }), // 5
      row({ block_id: camp.blockId, room_id: otherBlockRoom }), // 6: room of another instance
      row({ arrival_date: "2026-07-10", departure_date: "2026-07-01" }), // 7
      row({ instance_id: MISSING }), // 8
      row({ room_id: MISSING }), // 9
      "not a participant", // 10
      row({ super_group_id: null, sub_group_id: foreignSub }), // 11: subgroup without its supergroup
    ];
    const before = await countIn(camp.instanceId);
    const res = await bulk(rows);
    expect(res.status).toBe(400);
    expect(res.body.error.message).toMatch(/^11 of 12 rows are invalid/);
    expect(res.body.error.details).toEqual([
      { field: "participants.1.first_name", issue: "is required" },
      { field: "participants.2.gender", issue: "must be one of Male, Female, Other" },
      { field: "participants.2.departure_date", issue: "is not a calendar date" },
      { field: "participants.3.user_id", issue: "is already used by a participant of this instance" },
      { field: "participants.4.super_group_id", issue: "does not belong to instance_id" },
      { field: "participants.5.sub_group_id", issue: "does not belong to instance_id" },
      { field: "participants.6.room_id", issue: "does not belong to instance_id" },
      { field: "participants.7.departure_date", issue: "must not be before arrival_date" },
      { field: "participants.8.instance_id", issue: "does not exist" },
      { field: "participants.9.room_id", issue: "does not exist" },
      { field: "participants.10", issue: expect.any(String) },
      { field: "participants.11.super_group_id", issue: "is required when sub_group_id is set" },
    ]);
    expect(await countIn(camp.instanceId)).toBe(before);
  });

  it("reports a subgroup outside its supergroup and a room outside its block", async () => {
    const sub2 = await addSubgroup(t(), tenant.tenantId, camp.instanceId, camp.supergroupId, "Second nest");
    const sg2 = (
      await t().admin("insert into supergroups (tenant_id, instance_id, name) values ($1, $2, 'Hawks') returning id", [
        tenant.tenantId,
        camp.instanceId,
      ])
    ).rows[0].id;
    const block2 = (
      await t().admin("insert into blocks (tenant_id, instance_id, name) values ($1, $2, 'South') returning id", [
        tenant.tenantId,
        camp.instanceId,
      ])
    ).rows[0].id;
    const res = await bulk([row({ super_group_id: sg2, sub_group_id: sub2 }), row({ block_id: block2, room_id: camp.roomId })]);
    expect(res.status).toBe(400);
    expect(res.body.error.details).toEqual([
      { field: "participants.0.sub_group_id", issue: "does not belong to super_group_id" },
      { field: "participants.1.room_id", issue: "does not belong to block_id" },
    ]);
  });

  it("treats another tenant's instance, groups, blocks and rooms as missing", async () => {
    const stranger = await newTenant(t().db);
    const theirs = await addCampStructure(t(), stranger.tenantId, "T");
    const res = await bulk([
      row({ instance_id: theirs.instanceId }),
      row({ super_group_id: theirs.supergroupId }),
      row({ sub_group_id: theirs.subgroupId }),
      row({ block_id: theirs.blockId }),
      row({ room_id: theirs.roomId }),
    ]);
    expect(res.status).toBe(400);
    expect(res.body.error.details).toEqual([
      { field: "participants.0.instance_id", issue: "does not exist" },
      { field: "participants.1.super_group_id", issue: "does not exist" },
      { field: "participants.2.sub_group_id", issue: "does not exist" },
      { field: "participants.3.block_id", issue: "does not exist" },
      { field: "participants.4.room_id", issue: "does not exist" },
    ]);
    expect(await countIn(theirs.instanceId)).toBe(0);
  });

  it("refuses rows for an archived instance", async () => {
    const archived = (await addCampStructure(t(), tenant.tenantId, "Old")).instanceId;
    await t().admin("update instances set status = 'archived' where id = $1", [archived]);
    const res = await bulk([row({ instance_id: archived })]);
    expect(res.status).toBe(400);
    expect(res.body.error.details).toEqual([
      { field: "participants.0.instance_id", issue: "instance is archived and read-only" },
    ]);
  });

  it("takes 1,000 full rows (over the 1 MB JSON limit) and refuses 1,001 or none", async () => {
    const instance = (await addCampStructure(t(), tenant.tenantId, "Big")).instanceId;
    const long = "x".repeat(200);
    const rows = Array.from({ length: 1000 }, (_, i) =>
      row({
        instance_id: instance,
        user_id: `big-${i}`,
        school_institute: long,
        unit_name: long,
        rank: long,
        school_year: long,
        full_name: long,
        pronouns: "they/them",
      }),
    );
    expect(JSON.stringify({ participants: rows }).length).toBeGreaterThan(1_048_576);
    const res = await bulk(rows);
    expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(201);
    expect(res.body.data).toHaveLength(1000);
    expect(await countIn(instance)).toBe(1000);

    const tooMany = await bulk([...rows, row()].map((r, i) => ({ ...r, user_id: `more-${i}` })));
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.error.details).toEqual([{ field: "participants", issue: "must hold at most 1000 participants" }]);
    const none = await bulk([]);
    expect(none.status).toBe(400);
    expect(none.body.error.details).toEqual([{ field: "participants", issue: "must hold at least one participant" }]);
  });

  it("answers 413 for a body over 5 MB and 400 for a bare array", async () => {
    const raw = JSON.stringify({ participants: [{ padding: "x".repeat(5 * 1_048_576) }] });
    const huge = await call(app, "POST", BULK, {
      key,
      raw,
      headers: { "Content-Type": "application/json", "Content-Length": String(raw.length) },
    });
    expect(huge.status).toBe(413);
    expect(huge.body.error.code).toBe("PAYLOAD_TOO_LARGE");
    const bare = await call(app, "POST", BULK, { key, body: [row()] });
    expect(bare.status).toBe(400);
    expect(bare.body.error.code).toBe("VALIDATION_ERROR");
  });

  it("answers 401 without a credential and 415 for a body that is not JSON", async () => {
    const anonymous = await call(app, "POST", BULK, { body: { participants: [row()] } });
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.error.code).toBe("UNAUTHORIZED");
    const csv = await call(app, "POST", BULK, {
      key,
      raw: "a,b\n1,2\n",
      headers: { "Content-Type": "text/csv", "Content-Length": "8" },
    });
    expect(csv.status).toBe(415);
  });

  it("leaves the single-participant routes as they were", async () => {
    // /participants/bulk is its own resource, not a participant id: it takes POST only.
    const res = await call(app, "GET", "/api/v1/participants/bulk", { key });
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("POST");
    const created = await call(app, "POST", "/api/v1/participants", { key, body: row() });
    expect(created.status).toBe(201);
  });
});
