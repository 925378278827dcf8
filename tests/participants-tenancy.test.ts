import { beforeAll, describe, expect, it } from "vitest";
import { addCampStructure, type CampStructure } from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { call, newTenant, signToken, type TestApp, type TestTenant, testApp } from "./support/fixtures.ts";

/**
 * The cross-tenant matrix for participants: tenant B, with its own valid
 * credential and data, can neither see, change nor point at anything of
 * tenant A, and every attempt looks exactly like a missing record.
 */

const t = useTestDatabase();
const BASE = "/api/v1/participants";

let app: TestApp;
let a: TestTenant;
let b: TestTenant;
let campA: CampStructure;
let campB: CampStructure;
// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely
let participantA: any;
// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely
let participantB: any;

/** Everything tenant A has in the participants table, as stored. */
async function snapshotOfA() {
  return (await t().admin("select * from public.participants where tenant_id = $1 order by id", [a.tenantId])).rows;
}

beforeAll(async () => {
  app = testApp(t().db);
  a = await newTenant(t().db);
  b = await newTenant(t().db);
  campA = await addCampStructure(t(), a.tenantId, "A");
  campB = await addCampStructure(t(), b.tenantId, "B");
  const created = await call(app, "POST", BASE, {
    key: a.admin.key,
    body: {
      user_id: "shared-id",
      instance_id: campA.instanceId,
      first_name: "Alice",
      surname: "Anders",
      sub_group_id: campA.subgroupId,
      room_id: campA.roomId,
    },
  });
  expect(created.status).toBe(201);
  participantA = created.body.data;
  const own = await call(app, "POST", BASE, {
    key: b.admin.key,
    body: { user_id: "b-1", instance_id: campB.instanceId, first_name: "Bob", surname: "Berg" },
  });
  participantB = own.body.data;
});

describe("participants across tenants", () => {
  it.each([
    ["GET", undefined],
    ["PUT", { surname: "Taken" }],
    ["PATCH", { status: "inactive" }],
    ["DELETE", undefined],
  ])("answers 404 to tenant B's %s on tenant A's participant, and A's row is unchanged", async (method, body) => {
    const before = await snapshotOfA();
    const res = await call(app, method, `${BASE}/${participantA.id}`, { key: b.admin.key, body });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe("NOT_FOUND");
    const unknown = await call(app, method, `${BASE}/00000000-0000-4000-8000-000000000000`, { key: b.admin.key, body });
    // The same answer, but for each request's own id.
    expect({ ...unknown.body.error, request_id: "" }).toEqual({ ...res.body.error, request_id: "" });
    expect(await snapshotOfA()).toEqual(before);
  });

  it("answers 404 to tenant B's Bearer token on tenant A's participant", async () => {
    const token = await signToken({ sub: b.admin.userId, email: b.admin.email, email_verified: true });
    const res = await call(app, "GET", `${BASE}/${participantA.id}`, { token });
    expect(res.status).toBe(404);
  });

  it.each([
    ["instance_id", () => ({ instance_id: campA.instanceId })],
    ["super_group_id", () => ({ super_group_id: campA.supergroupId })],
    ["sub_group_id", () => ({ sub_group_id: campA.subgroupId })],
    ["sub_group_id", () => ({ super_group_id: campB.supergroupId, sub_group_id: campA.subgroupId })],
    ["block_id", () => ({ block_id: campA.blockId })],
    ["room_id", () => ({ room_id: campA.roomId })],
    ["room_id", () => ({ block_id: campB.blockId, room_id: campA.roomId })],
  ])("answers 400 naming %s when tenant B's create points at tenant A's record", async (field, refs) => {
    const before = await snapshotOfA();
    const res = await call(app, "POST", BASE, {
      key: b.admin.key,
      body: { user_id: `b-${field}`, instance_id: campB.instanceId, first_name: "Bea", surname: "Bold", ...refs() },
    });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("VALIDATION_ERROR");
    expect(res.body.error.details).toMatchObject([{ field }]);
    expect(await snapshotOfA()).toEqual(before);
  });

  it.each([
    ["instance_id", () => ({ instance_id: campA.instanceId })],
    ["super_group_id", () => ({ super_group_id: campA.supergroupId })],
    ["sub_group_id", () => ({ sub_group_id: campA.subgroupId })],
    ["block_id", () => ({ block_id: campA.blockId })],
    ["room_id", () => ({ room_id: campA.roomId })],
  ])("answers 400 naming %s when tenant B's update points at tenant A's record", async (field, refs) => {
    const before = await snapshotOfA();
    for (const method of ["PUT", "PATCH"]) {
      const res = await call(app, method, `${BASE}/${participantB.id}`, { key: b.admin.key, body: refs() });
      expect(res.status).toBe(400);
      expect(res.body.error.details).toMatchObject([{ field }]);
    }
    expect(await snapshotOfA()).toEqual(before);
    const own = await call(app, "GET", `${BASE}/${participantB.id}`, { key: b.admin.key });
    expect(own.body.data).toEqual(participantB);
  });

  it("lets tenant B use a user_id that tenant A uses", async () => {
    const res = await call(app, "POST", BASE, {
      key: b.admin.key,
      body: { user_id: "shared-id", instance_id: campB.instanceId, first_name: "Bo", surname: "Bright" },
    });
    expect(res.status).toBe(201);
  });

  it("never lists tenant A's participants to tenant B, also with A's ids and names as filters", async () => {
    const all = await call(app, "GET", `${BASE}?limit=1000`, { key: b.admin.key });
    expect(all.status).toBe(200);
    expect(all.body.data.every((p: { instance_id: string }) => p.instance_id === campB.instanceId)).toBe(true);
    expect(all.body.data.map((p: { id: string }) => p.id)).not.toContain(participantA.id);
    for (const filter of [
      `instance_id=${campA.instanceId}`,
      `super_group_id=${campA.supergroupId}`,
      `sub_group_id=${campA.subgroupId}`,
      `block_id=${campA.blockId}`,
      `room_id=${campA.roomId}`,
      "q=alice",
      "q=anders",
    ]) {
      const res = await call(app, "GET", `${BASE}?${filter}`, { key: b.admin.key });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ success: true, data: [], meta: { total: 0, limit: 50, offset: 0, next: null } });
    }
  });

  it("still shows tenant A its participant, untouched", async () => {
    const res = await call(app, "GET", `${BASE}/${participantA.id}`, { key: a.admin.key });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual(participantA);
    const list = await call(app, "GET", BASE, { key: a.admin.key });
    expect(list.body.meta.total).toBe(1);
  });
});
