import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { addBlock, addInstance, addRoom, addSubgroup, addSupergroup } from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { feedUntil } from "./support/events.ts";
import { type CallOptions, call, newTenant, type TestApp, type TestTenant, testApp } from "./support/fixtures.ts";
import { startReceiver } from "./support/receiver.ts";
import { addEndpoint, testWorker, workUntil } from "./support/webhooks.ts";

/**
 * Who is here now and roll calls over HTTP: presence counts per group, block
 * and room; a roll call that expects the present, takes marks (a later one
 * wins), finds the missing child when it closes and then takes no more;
 * tenant isolation and erasure.
 */

const t = useTestDatabase();

let app: TestApp;
let tenant: TestTenant;
let staff: CallOptions;
let admin: CallOptions;
let otherAdmin: CallOptions;
let camp: { instance: string; red: string; blue: string; redCubs: string; north: string; room: string };
const kids: Record<string, string> = {};

async function newParticipant(name: string, placement: Record<string, string>) {
  const created = await call(app, "POST", "/api/v1/participants", {
    ...admin,
    body: {
      instance_id: camp.instance,
      user_id: `${name}-${randomUUID().slice(0, 6)}`,
      first_name: name,
      surname: "Test",
      ...placement,
    },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body.data.id as string;
}

const checkIn = async (id: string) =>
  expect(
    (await call(app, "POST", "/api/v1/attendance", { ...staff, body: { participant_id: id, direction: "in" } })).status,
  ).toBe(201);

beforeAll(async () => {
  app = testApp(t().db, { WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true" });
  tenant = await newTenant(t().db);
  const other = await newTenant(t().db);
  admin = { key: tenant.admin.key };
  staff = { key: (await tenant.addUser("staff")).key as string };
  otherAdmin = { key: other.admin.key };
  const instance = await addInstance(t(), tenant.tenantId, "Roll camp");
  const red = await addSupergroup(t(), tenant.tenantId, instance, "Red");
  const blue = await addSupergroup(t(), tenant.tenantId, instance, "Blue");
  const redCubs = await addSubgroup(t(), tenant.tenantId, instance, red, "Cubs");
  const north = await addBlock(t(), tenant.tenantId, instance, "North");
  const room = await addRoom(t(), tenant.tenantId, instance, north, "101", "Lakeview");
  camp = { instance, red, blue, redCubs, north, room };
  kids.ann = await newParticipant("Ann", { sub_group_id: redCubs, room_id: room });
  kids.ben = await newParticipant("Ben", { sub_group_id: redCubs });
  kids.cat = await newParticipant("Cat", { super_group_id: red });
  kids.dan = await newParticipant("Dan", { super_group_id: blue, room_id: room });
  kids.eve = await newParticipant("Eve", { super_group_id: blue });
  for (const name of ["ann", "ben", "cat", "dan"]) await checkIn(kids[name] as string);
});

describe("presence of an instance", () => {
  it("counts the present per supergroup, subgroup, block and room, zero included, with their ids", async () => {
    const presence = await call(app, "GET", `/api/v1/instances/${camp.instance}/presence`, staff);
    expect(presence.status, JSON.stringify(presence.body)).toBe(200);
    const data = presence.body.data;
    expect(data.present).toBe(4);
    expect(data.present_ids).toEqual([kids.ann, kids.ben, kids.cat, kids.dan].sort());
    const count = (list: Array<{ id: string; present: number }>, id: string) => list.find((x) => x.id === id)?.present;
    expect(count(data.supergroups, camp.red)).toBe(3);
    expect(count(data.supergroups, camp.blue)).toBe(1);
    expect(count(data.subgroups, camp.redCubs)).toBe(2);
    expect(count(data.blocks, camp.north)).toBe(2);
    expect(count(data.rooms, camp.room)).toBe(2);
    expect((await call(app, "GET", `/api/v1/instances/${camp.instance}/presence`, otherAdmin)).status).toBe(404);
    expect((await call(app, "GET", `/api/v1/instances/${randomUUID()}/presence`, staff)).status).toBe(404);
  });
});

describe("roll calls", () => {
  it("expects the present of its scope, takes marks (a later one wins), and finds the missing child when it closes", async () => {
    const opened = await call(app, "POST", "/api/v1/roll-calls", {
      ...staff,
      body: { instance_id: camp.instance, super_group_id: camp.red, name: "Lunch" },
    });
    expect(opened.status, JSON.stringify(opened.body)).toBe(201);
    const id = opened.body.data.id;
    expect(opened.headers.get("Location")).toContain(id);
    expect(opened.body.data.expected).toEqual([kids.ann, kids.ben, kids.cat].sort());
    expect(opened.body.data).toMatchObject({ status: "open", name: "Lunch", super_group_id: camp.red });

    const marked = await call(app, "PUT", `/api/v1/roll-calls/${id}/marks`, {
      ...staff,
      body: {
        marks: [
          { participant_id: kids.ann, mark: "absent" },
          { participant_id: kids.ann, mark: "present" },
          { participant_id: kids.ben, mark: "excused" },
        ],
      },
    });
    expect(marked.status, JSON.stringify(marked.body)).toBe(200);
    expect(marked.body.data.counts).toEqual({ expected: 3, present: 1, absent: 0, excused: 1, missing: 1 });
    const later = await call(app, "PUT", `/api/v1/roll-calls/${id}/marks`, {
      ...staff,
      body: { marks: [{ participant_id: kids.ann, mark: "absent" }] },
    });
    expect(later.body.data.counts).toMatchObject({ present: 0, absent: 1, missing: 2 });
    await call(app, "PUT", `/api/v1/roll-calls/${id}/marks`, {
      ...staff,
      body: { marks: [{ participant_id: kids.ann, mark: "present" }] },
    });

    const closed = await call(app, "POST", `/api/v1/roll-calls/${id}/close`, staff);
    expect(closed.status, JSON.stringify(closed.body)).toBe(200);
    expect(closed.body.data).toMatchObject({ status: "closed", missing: [kids.cat], counts: { missing: 1 } });
    expect(closed.body.data.closed_at).not.toBeNull();

    const tooLate = await call(app, "PUT", `/api/v1/roll-calls/${id}/marks`, {
      ...staff,
      body: { marks: [{ participant_id: kids.cat, mark: "present" }] },
    });
    expect(tooLate.status).toBe(409);
    expect((await call(app, "POST", `/api/v1/roll-calls/${id}/close`, staff)).status).toBe(409);
    const read = await call(app, "GET", `/api/v1/roll-calls/${id}`, staff);
    expect(read.body.data.missing).toEqual([kids.cat]);

    const audit = await t().admin(
      "select count(*)::int as n from public.audit_events where tenant_id = $1 and resource_type = 'roll_call_mark'",
      [tenant.tenantId],
    );
    expect(audit.rows[0].n).toBeGreaterThanOrEqual(4);
  });

  it("refuses a scope of another instance, two scopes, and a stranger's mark", async () => {
    const otherCamp = await addInstance(t(), tenant.tenantId, `Other ${randomUUID().slice(0, 6)}`);
    const wrong = await call(app, "POST", "/api/v1/roll-calls", {
      ...staff,
      body: { instance_id: otherCamp, super_group_id: camp.red },
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error.details).toMatchObject([{ field: "super_group_id" }]);
    const two = await call(app, "POST", "/api/v1/roll-calls", {
      ...staff,
      body: { instance_id: camp.instance, super_group_id: camp.red, room_id: camp.room },
    });
    expect(two.status).toBe(400);
    const whole = await call(app, "POST", "/api/v1/roll-calls", { ...staff, body: { instance_id: camp.instance } });
    expect(whole.body.data.expected).toHaveLength(4);
    const stray = await call(app, "PUT", `/api/v1/roll-calls/${whole.body.data.id}/marks`, {
      ...staff,
      body: { marks: [{ participant_id: randomUUID(), mark: "present" }] },
    });
    expect(stray.status).toBe(400);
    expect(stray.body.error.details).toMatchObject([{ field: "marks[0].participant_id" }]);
    const unexpected = await call(app, "PUT", `/api/v1/roll-calls/${whole.body.data.id}/marks`, {
      ...staff,
      body: { marks: [{ participant_id: kids.eve, mark: "present" }] },
    });
    expect(unexpected.status).toBe(200);
  });

  it("lists roll calls by instance, and shows another tenant none of them", async () => {
    const listed = await call(app, "GET", `/api/v1/roll-calls?instance_id=${camp.instance}`, staff);
    expect(listed.status).toBe(200);
    expect(listed.body.meta.total).toBeGreaterThanOrEqual(2);
    const closedOnes = await call(app, "GET", `/api/v1/roll-calls?instance_id=${camp.instance}&status=closed`, staff);
    expect(closedOnes.body.data.every((r: { status: string }) => r.status === "closed")).toBe(true);
    const id = listed.body.data[0].id;
    expect((await call(app, "GET", `/api/v1/roll-calls/${id}`, otherAdmin)).status).toBe(404);
    expect((await call(app, "GET", `/api/v1/roll-calls?instance_id=${camp.instance}`, otherAdmin)).body.meta.total).toBe(0);
    const theirMarks = await call(app, "PUT", `/api/v1/roll-calls/${id}/marks`, {
      ...otherAdmin,
      body: { marks: [{ participant_id: kids.ann, mark: "present" }] },
    });
    expect(theirMarks.status).toBe(404);
    expect((await call(app, "POST", `/api/v1/roll-calls/${id}/close`, otherAdmin)).status).toBe(404);
    const theirOpen = await call(app, "POST", "/api/v1/roll-calls", { ...otherAdmin, body: { instance_id: camp.instance } });
    expect(theirOpen.status).toBe(400);
    expect((await call(app, "GET", "/api/v1/roll-calls/nope", staff)).status).toBe(404);
  });

  it("loses an erased participant's marks and place in expected", async () => {
    const zed = await newParticipant("Zed", { super_group_id: camp.blue });
    await checkIn(zed);
    const opened = await call(app, "POST", "/api/v1/roll-calls", {
      ...staff,
      body: { instance_id: camp.instance, super_group_id: camp.blue },
    });
    expect(opened.body.data.expected).toContain(zed);
    await call(app, "PUT", `/api/v1/roll-calls/${opened.body.data.id}/marks`, {
      ...staff,
      body: { marks: [{ participant_id: zed, mark: "present" }] },
    });
    expect((await call(app, "POST", `/api/v1/participants/${zed}/erase`, admin)).status).toBe(200);
    const after = await call(app, "GET", `/api/v1/roll-calls/${opened.body.data.id}`, staff);
    expect(after.body.data.expected).not.toContain(zed);
    expect(after.body.data.marks.map((m: { participant_id: string }) => m.participant_id)).not.toContain(zed);
    const left = await t().admin(
      `select (select count(*) from public.roll_call_marks where participant_id = $1)::int
            + (select count(*) from public.roll_call_expected where participant_id = $1)::int as n`,
      [zed],
    );
    expect(left.rows[0].n).toBe(0);
  });
});

describe("roll_call.closed", () => {
  it("reaches a webhook when a roll call finds a child missing, thin: the roll call's id and its counts, whose read names the missing", async () => {
    const hook = await startReceiver();
    try {
      await addEndpoint(app, tenant.admin.key, { url: hook.url, types: ["roll_call.closed", "participant.checked_in"] });
      const lost = await newParticipant("Lost", { super_group_id: camp.blue });
      const away = await newParticipant("Away", { super_group_id: camp.blue });
      const ill = await newParticipant("Ill", { super_group_id: camp.blue });
      for (const kid of [lost, away, ill]) await checkIn(kid);
      const opened = await call(app, "POST", "/api/v1/roll-calls", {
        ...staff,
        body: { instance_id: camp.instance, super_group_id: camp.blue },
      });
      const id = opened.body.data.id;
      const others = opened.body.data.expected.filter((p: string) => ![lost, away, ill].includes(p));
      const marks = [
        ...others.map((p: string) => ({ participant_id: p, mark: "present" })),
        { participant_id: away, mark: "absent" },
        { participant_id: ill, mark: "excused" },
      ];
      await call(app, "PUT", `/api/v1/roll-calls/${id}/marks`, { ...staff, body: { marks } });
      const closed = await call(app, "POST", `/api/v1/roll-calls/${id}/close`, staff);
      expect(closed.body.data.missing).toEqual([lost, away].sort());
      const counts = { expected: others.length + 3, present: others.length, absent: 1, excused: 1, missing: 2 };
      expect(closed.body.data.counts).toEqual(counts);
      const worker = testWorker(t().db);
      const closedEvents = () => hook.received.map((r) => JSON.parse(r.body)).filter((e) => e.type === "roll_call.closed");
      // Earlier roll calls of this file closed too; this one's event is the one that names it.
      await workUntil(worker, () => closedEvents().some((e) => e.data.roll_call_id === id));
      const event = closedEvents().find((e) => e.data.roll_call_id === id);
      expect(event.data).toEqual({ roll_call_id: id, counts });
      const bodies = JSON.stringify(hook.received.map((r) => r.body));
      for (const text of ["Lost", "Away", "Ill", lost, away, ill]) expect(bodies).not.toContain(text);
      // The feed carries the same figures.
      const feed = await feedUntil(app, tenant.admin.key, (events) => events.some((e) => e.data.roll_call_id === id), {
        extra: "types=roll_call.closed",
      });
      expect(feed.events.find((e) => e.data.roll_call_id === id)?.data).toEqual({ roll_call_id: id, counts });
      const read = await call(app, "GET", `/api/v1/roll-calls/${event.data.roll_call_id}`, staff);
      expect(read.body.data.missing).toEqual([lost, away].sort());
      // Erasing a marked child later changes neither the event nor the counts frozen in it.
      expect((await call(app, "POST", `/api/v1/participants/${ill}/erase`, admin)).status).toBe(200);
      const again = await feedUntil(app, tenant.admin.key, (events) => events.some((e) => e.data.roll_call_id === id), {
        extra: "types=roll_call.closed",
      });
      expect(again.events.find((e) => e.data.roll_call_id === id)?.data).toEqual({ roll_call_id: id, counts });
      await workUntil(worker, () => hook.received.some((r) => JSON.parse(r.body).type === "participant.checked_in"));
    } finally {
      await hook.close();
    }
  }, 90_000);
});
