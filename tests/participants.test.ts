import { beforeAll, describe, expect, it } from "vitest";
import {
  addBlock,
  addCampStructure,
  addRoom,
  addSubgroup,
  addSupergroup,
  type CampStructure,
  storedParticipant,
} from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { call, newTenant, type TestApp, type TestTenant, testApp } from "./support/fixtures.ts";

const t = useTestDatabase();
const BASE = "/api/v1/participants";
const MISSING = "00000000-0000-4000-8000-000000000000";

let app: TestApp;
let tenant: TestTenant;
let key: string;
/** The main instance, and a second one of the same tenant. */
let camp: CampStructure;
let other: CampStructure;
let counter = 0;

beforeAll(async () => {
  app = testApp(t().db);
  tenant = await newTenant(t().db);
  key = tenant.admin.key;
  camp = await addCampStructure(t(), tenant.tenantId, "A");
  other = await addCampStructure(t(), tenant.tenantId, "B");
});

const nextUserId = () => `u-${++counter}`;

function minimal(overrides: Record<string, unknown> = {}) {
  return { user_id: nextUserId(), instance_id: camp.instanceId, first_name: "Ada", surname: "Lovelace", ...overrides };
}

async function create(overrides: Record<string, unknown> = {}) {
  const res = await call(app, "POST", BASE, { key, body: minimal(overrides) });
  expect(res.status).toBe(201);
  return res.body.data;
}

/** The distinct fields an error's details name (a field may carry several issues). */
// biome-ignore lint/suspicious/noExplicitAny: error bodies are read loosely
function fields(body: any): string[] {
  const details = body.error.details;
  return [...new Set<string>(details.map((d: { field: string }) => d.field))];
}

describe("POST /api/v1/participants", () => {
  it("creates a participant with a generated full_name and status active", async () => {
    const body = minimal();
    const res = await call(app, "POST", BASE, { key, body });
    expect(res.status).toBe(201);
    expect(res.body.success).toBe(true);
    expect(res.body.data).toMatchObject({
      ...body,
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      full_name: "Ada Lovelace",
      status: "active",
      gender: null,
      super_group_id: null,
      supergroup_name: null,
      subgroup_name: null,
      block_name: null,
      room_name: null,
    });
    // Postgres writes the participant's JSON: its timestamps must read as JavaScript
    // writes the stored values (ISO 8601, UTC, milliseconds cut, not rounded).
    const stored = await t().admin("select created_at, updated_at from public.participants where id = $1", [res.body.data.id]);
    expect(res.body.data.created_at).toBe(stored.rows[0].created_at.toISOString());
    expect(res.body.data.updated_at).toBe(stored.rows[0].updated_at.toISOString());
    await t().admin("update public.participants set created_at = '2026-01-02 03:04:05.678999+00' where id = $1", [
      res.body.data.id,
    ]);
    const read = await call(app, "GET", `${BASE}/${res.body.data.id}`, { key });
    expect(read.body.data.created_at).toBe("2026-01-02T03:04:05.678Z");
    expect(res.body.data).not.toHaveProperty("tenant_id");
    expect(res.body.data).not.toHaveProperty("deleted_at");
  });

  it("stores every optional field and returns the names of what the participant points at", async () => {
    const body = minimal({
      full_name: "Augusta Ada King",
      gender: "Female",
      pronouns: "she/her",
      status: "inactive",
      date_of_birth: "2010-12-10",
      school_year: "9",
      rank: "Scout",
      unit_name: "Unit 7",
      school_institute: "Analytical School",
      arrival_date: "2026-07-01",
      departure_date: "2026-07-14",
      super_group_id: camp.supergroupId,
      sub_group_id: camp.subgroupId,
      block_id: camp.blockId,
      room_id: camp.roomId,
      room_number: "101-b",
      photo_link: "https://example.test/p.jpg",
    });
    const res = await call(app, "POST", BASE, { key, body });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({
      ...body,
      supergroup_name: "EaglesA",
      subgroup_name: "NestA",
      block_name: "NorthA",
      room_name: "LakeviewA",
    });
  });

  it("trims names and generates full_name from the trimmed names", async () => {
    const data = await create({ first_name: "  Grace ", surname: " Hopper  ", full_name: "   " });
    expect(data).toMatchObject({ first_name: "Grace", surname: "Hopper", full_name: "Grace Hopper" });
  });

  it("matches gender case-insensitively and stores it as Male, Female or Other", async () => {
    expect((await create({ gender: "female" })).gender).toBe("Female");
    expect((await create({ gender: " MALE " })).gender).toBe("Male");
    expect((await create({ gender: "oThEr" })).gender).toBe("Other");
  });

  it("rejects a gender outside Male, Female, Other, naming the field", async () => {
    const res = await call(app, "POST", BASE, { key, body: minimal({ gender: "unknown" }) });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("VALIDATION_ERROR");
    expect(fields(res.body)).toEqual(["gender"]);
  });

  it("accepts pronouns of up to 50 characters and rejects longer ones", async () => {
    expect((await create({ pronouns: "x".repeat(50) })).pronouns).toHaveLength(50);
    const res = await call(app, "POST", BASE, { key, body: minimal({ pronouns: "x".repeat(51) }) });
    expect(res.status).toBe(400);
    expect(fields(res.body)).toEqual(["pronouns"]);
  });

  it("rejects a status other than active or inactive", async () => {
    const res = await call(app, "POST", BASE, { key, body: minimal({ status: "archived" }) });
    expect(res.status).toBe(400);
    expect(fields(res.body)).toEqual(["status"]);
  });

  it.each([
    ["date_of_birth", "2010-02-30"],
    ["date_of_birth", "2010-2-3"],
    ["arrival_date", "tomorrow"],
    ["departure_date", "2026-07-01T00:00:00Z"],
  ])("rejects %s %s as not a strict YYYY-MM-DD date", async (field, value) => {
    const res = await call(app, "POST", BASE, { key, body: minimal({ [field]: value }) });
    expect(res.status).toBe(400);
    expect(fields(res.body)).toEqual([field]);
  });

  it("rejects a departure_date before the arrival_date and accepts the same day", async () => {
    const res = await call(app, "POST", BASE, {
      key,
      body: minimal({ arrival_date: "2026-07-10", departure_date: "2026-07-09" }),
    });
    expect(res.status).toBe(400);
    expect(res.body.error.details).toEqual([{ field: "departure_date", issue: "must not be before arrival_date" }]);
    expect((await create({ arrival_date: "2026-07-10", departure_date: "2026-07-10" })).departure_date).toBe("2026-07-10");
  });

  it("requires user_id, instance_id, first_name and surname, naming each", async () => {
    const res = await call(app, "POST", BASE, { key, body: { gender: "Male" } });
    expect(res.status).toBe(400);
    expect(fields(res.body).sort()).toEqual(["first_name", "instance_id", "surname", "user_id"]);
  });

  it("rejects blank required names and text over 200 characters", async () => {
    const blank = await call(app, "POST", BASE, { key, body: minimal({ first_name: "  " }) });
    expect(blank.status).toBe(400);
    expect(fields(blank.body)).toEqual(["first_name"]);
    const long = await call(app, "POST", BASE, { key, body: minimal({ unit_name: "x".repeat(201) }) });
    expect(long.status).toBe(400);
    expect(fields(long.body)).toEqual(["unit_name"]);
  });

  it("accepts and ignores id, created_at, updated_at, deleted_at and the computed names", async () => {
    const data = await create({
      id: MISSING,
      created_at: "2000-01-01T00:00:00.000Z",
      updated_at: "2000-01-01T00:00:00.000Z",
      deleted_at: "2000-01-01T00:00:00.000Z",
      supergroup_name: "Made up",
      room_name: "Made up",
    });
    expect(data.id).not.toBe(MISSING);
    expect(data.created_at).not.toBe("2000-01-01T00:00:00.000Z");
    expect(data.supergroup_name).toBeNull();
    const stored = await storedParticipant(t(), data.id);
    expect(stored.tenant_id).toBe(tenant.tenantId);
    expect(stored.deleted_at).toBeNull();
  });

  it("refuses unknown fields (tenant_id among them) with 400 naming each, creating nothing", async () => {
    const res = await call(app, "POST", BASE, { key, body: minimal({ tenant_id: MISSING, favourite_colour: "blue" }) });
    expect(res.status).toBe(400);
    expect(fields(res.body)).toEqual(["tenant_id", "favourite_colour"]);
    expect(res.body.error.details[0].issue).toBe("is not a field of this operation");
  });

  it("takes back the participant as it was read, changing only what the client changed", async () => {
    const data = await create();
    const res = await call(app, "PATCH", `${BASE}/${data.id}`, { key, body: { ...data, pronouns: "they/them" } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toMatchObject({ ...data, pronouns: "they/them", updated_at: expect.any(String) });
  });

  it("fills super_group_id from the subgroup when only sub_group_id is given", async () => {
    const data = await create({ sub_group_id: camp.subgroupId });
    expect(data).toMatchObject({ super_group_id: camp.supergroupId, sub_group_id: camp.subgroupId, supergroup_name: "EaglesA" });
  });

  it("fills block_id and room_number from the room when only room_id is given", async () => {
    const data = await create({ room_id: camp.roomId });
    expect(data).toMatchObject({ block_id: camp.blockId, room_id: camp.roomId, room_number: "10A", block_name: "NorthA" });
  });

  it("keeps a room_number sent with room_id", async () => {
    const data = await create({ room_id: camp.roomId, room_number: "bunk 3" });
    expect(data).toMatchObject({ block_id: camp.blockId, room_number: "bunk 3" });
  });

  it("rejects a subgroup of another supergroup and a room of another block, naming the field", async () => {
    const supergroup2 = await addSupergroup(t(), tenant.tenantId, camp.instanceId, "Owls");
    const subgroup2 = await addSubgroup(t(), tenant.tenantId, camp.instanceId, supergroup2, "Branch");
    const block2 = await addBlock(t(), tenant.tenantId, camp.instanceId, "South");
    const room2 = await addRoom(t(), tenant.tenantId, camp.instanceId, block2, "201");

    const sub = await call(app, "POST", BASE, {
      key,
      body: minimal({ super_group_id: camp.supergroupId, sub_group_id: subgroup2 }),
    });
    expect(sub.status).toBe(400);
    expect(sub.body.error.details).toEqual([{ field: "sub_group_id", issue: "does not belong to super_group_id" }]);

    const room = await call(app, "POST", BASE, { key, body: minimal({ block_id: camp.blockId, room_id: room2 }) });
    expect(room.status).toBe(400);
    expect(room.body.error.details).toEqual([{ field: "room_id", issue: "does not belong to block_id" }]);
  });

  it.each([
    ["super_group_id", () => ({ super_group_id: other.supergroupId })],
    ["sub_group_id", () => ({ sub_group_id: other.subgroupId })],
    ["sub_group_id", () => ({ super_group_id: camp.supergroupId, sub_group_id: other.subgroupId })],
    ["block_id", () => ({ block_id: other.blockId })],
    ["room_id", () => ({ room_id: other.roomId })],
    ["room_id", () => ({ block_id: camp.blockId, room_id: other.roomId })],
  ])("rejects a reference to another instance of the tenant (%s)", async (field, refs) => {
    const res = await call(app, "POST", BASE, { key, body: minimal(refs()) });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("VALIDATION_ERROR");
    expect(fields(res.body)).toEqual([field]);
  });

  it.each(["instance_id", "super_group_id", "sub_group_id", "block_id", "room_id"])(
    "rejects a well-formed %s that names nothing, naming the field",
    async (field) => {
      const res = await call(app, "POST", BASE, { key, body: minimal({ [field]: MISSING }) });
      expect(res.status).toBe(400);
      expect(fields(res.body)).toEqual([field]);
    },
  );

  it.each(["instance_id", "super_group_id", "sub_group_id", "block_id", "room_id"])(
    "rejects a malformed %s with 400, naming the field",
    async (field) => {
      const res = await call(app, "POST", BASE, { key, body: minimal({ [field]: "not-a-uuid" }) });
      expect(res.status).toBe(400);
      expect(fields(res.body)).toEqual([field]);
    },
  );

  it("answers 409 for a user_id already used in the instance, and accepts it in another instance", async () => {
    const first = await create();
    const res = await call(app, "POST", BASE, { key, body: minimal({ user_id: first.user_id }) });
    expect(res.status).toBe(409);
    expect(res.body.error).toMatchObject({ code: "CONFLICT", details: [{ field: "user_id" }] });
    const elsewhere = await call(app, "POST", BASE, {
      key,
      body: minimal({ user_id: first.user_id, instance_id: other.instanceId }),
    });
    expect(elsewhere.status).toBe(201);
  });

  it("answers 409 when the instance is archived", async () => {
    const archived = await addCampStructure(t(), tenant.tenantId, "Z");
    await t().admin("update public.instances set status = 'archived' where id = $1", [archived.instanceId]);
    const res = await call(app, "POST", BASE, { key, body: minimal({ instance_id: archived.instanceId }) });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe("CONFLICT");
  });

  it("answers 400 for malformed JSON and for a body that is not an object", async () => {
    const malformed = await call(app, "POST", BASE, { key, raw: "{", headers: { "Content-Type": "application/json" } });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.code).toBe("VALIDATION_ERROR");
    const array = await call(app, "POST", BASE, { key, body: [minimal()] });
    expect(array.status).toBe(400);
  });

  it("answers 401 without a credential and with an unknown key, writing nothing", async () => {
    const before = await t().admin("select count(*)::int as n from public.participants");
    expect((await call(app, "POST", BASE, { body: minimal() })).status).toBe(401);
    const res = await call(app, "POST", BASE, { key: "camp_not-a-real-key-000000000000000000000000", body: minimal() });
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe("UNAUTHORIZED");
    const after = await t().admin("select count(*)::int as n from public.participants");
    expect(after.rows[0].n).toBe(before.rows[0].n);
  });
});

describe("GET /api/v1/participants/{id}", () => {
  it("returns the participant with the names of its groups, block and room", async () => {
    const created = await create({ sub_group_id: camp.subgroupId, room_id: camp.roomId });
    const res = await call(app, "GET", `${BASE}/${created.id}`, { key });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      data: { ...created, supergroup_name: "EaglesA", subgroup_name: "NestA", block_name: "NorthA", room_name: "LakeviewA" },
    });
  });

  it.each([MISSING, "not-a-uuid", "123"])("answers 404 for %s", async (id) => {
    const res = await call(app, "GET", `${BASE}/${id}`, { key });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe("NOT_FOUND");
  });

  it("answers 401 without a credential", async () => {
    const created = await create();
    expect((await call(app, "GET", `${BASE}/${created.id}`)).status).toBe(401);
  });
});

describe("PUT and PATCH /api/v1/participants/{id}", () => {
  it.each(["PUT", "PATCH"])("%s changes only the given fields and moves updated_at", async (method) => {
    const created = await create({ unit_name: "Unit 1" });
    const res = await call(app, method, `${BASE}/${created.id}`, { key, body: { status: "inactive" } });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ ...created, status: "inactive", updated_at: expect.any(String) });
    expect(Date.parse(res.body.data.updated_at)).toBeGreaterThan(Date.parse(created.updated_at));
  });

  it("regenerates a generated full_name when a name changes", async () => {
    const created = await create();
    const res = await call(app, "PATCH", `${BASE}/${created.id}`, { key, body: { surname: "Byron" } });
    expect(res.status).toBe(200);
    expect(res.body.data.full_name).toBe("Ada Byron");
  });

  it("keeps a full_name that was set to something else when a name changes", async () => {
    const created = await create({ full_name: "Countess of Lovelace" });
    const res = await call(app, "PATCH", `${BASE}/${created.id}`, { key, body: { first_name: "Augusta" } });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ first_name: "Augusta", full_name: "Countess of Lovelace" });
  });

  it("takes a full_name sent with the name change, and regenerates it when sent as null", async () => {
    const created = await create();
    const set = await call(app, "PATCH", `${BASE}/${created.id}`, { key, body: { first_name: "A.", full_name: "A. L." } });
    expect(set.body.data.full_name).toBe("A. L.");
    const cleared = await call(app, "PATCH", `${BASE}/${created.id}`, { key, body: { full_name: null } });
    expect(cleared.status).toBe(200);
    expect(cleared.body.data.full_name).toBe("A. Lovelace");
  });

  it("normalises gender and accepts pronouns on update", async () => {
    const created = await create();
    const res = await call(app, "PUT", `${BASE}/${created.id}`, { key, body: { gender: "male", pronouns: "he/him" } });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ gender: "Male", pronouns: "he/him" });
  });

  it("answers 400 for a body with no field to change, also when it holds only read-only fields", async () => {
    const created = await create();
    for (const body of [{}, { id: created.id, created_at: created.created_at, updated_at: created.updated_at }, { colour: 1 }]) {
      const res = await call(app, "PATCH", `${BASE}/${created.id}`, { key, body });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe("VALIDATION_ERROR");
    }
  });

  it("ignores id, created_at and updated_at sent with a change", async () => {
    const created = await create();
    const res = await call(app, "PATCH", `${BASE}/${created.id}`, {
      key,
      body: { id: MISSING, created_at: "2000-01-01T00:00:00.000Z", updated_at: "2000-01-01T00:00:00.000Z", rank: "Lead" },
    });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ id: created.id, created_at: created.created_at, rank: "Lead" });
    expect(res.body.data.updated_at).not.toBe("2000-01-01T00:00:00.000Z");
  });

  it("rejects null for a required field and an invalid value, naming the field", async () => {
    const created = await create();
    const nulled = await call(app, "PATCH", `${BASE}/${created.id}`, { key, body: { surname: null } });
    expect(nulled.status).toBe(400);
    expect(fields(nulled.body)).toEqual(["surname"]);
    const late = await call(app, "PATCH", `${BASE}/${created.id}`, {
      key,
      body: { arrival_date: "2026-07-10", departure_date: "2026-07-01" },
    });
    expect(late.status).toBe(400);
    expect(fields(late.body)).toEqual(["departure_date"]);
  });

  it("checks a new arrival_date against the stored departure_date", async () => {
    const created = await create({ arrival_date: "2026-07-01", departure_date: "2026-07-05" });
    const res = await call(app, "PATCH", `${BASE}/${created.id}`, { key, body: { arrival_date: "2026-07-06" } });
    expect(res.status).toBe(400);
    expect(fields(res.body)).toEqual(["departure_date"]);
  });

  it("fills super_group_id from a new subgroup given alone, replacing the old supergroup", async () => {
    const owls = await addSupergroup(t(), tenant.tenantId, camp.instanceId, "Owls2");
    const branch = await addSubgroup(t(), tenant.tenantId, camp.instanceId, owls, "Branch2");
    const created = await create({ sub_group_id: camp.subgroupId });
    const res = await call(app, "PATCH", `${BASE}/${created.id}`, { key, body: { sub_group_id: branch } });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ super_group_id: owls, sub_group_id: branch, supergroup_name: "Owls2" });
  });

  it("fills block_id and room_number from a new room given alone; clearing the room clears its number", async () => {
    const south = await addBlock(t(), tenant.tenantId, camp.instanceId, "South2");
    const room = await addRoom(t(), tenant.tenantId, camp.instanceId, south, "301", null);
    const created = await create({ room_id: camp.roomId });
    const moved = await call(app, "PUT", `${BASE}/${created.id}`, { key, body: { room_id: room } });
    expect(moved.status).toBe(200);
    expect(moved.body.data).toMatchObject({
      block_id: south,
      room_id: room,
      room_number: "301",
      block_name: "South2",
      room_name: null,
    });
    const cleared = await call(app, "PUT", `${BASE}/${created.id}`, { key, body: { room_id: null } });
    expect(cleared.status).toBe(200);
    expect(cleared.body.data).toMatchObject({ block_id: south, room_id: null, room_number: null });
  });

  it("applies the pair rules to supplied pairs and to a pair completed by the stored row", async () => {
    const created = await create({ sub_group_id: camp.subgroupId, room_id: camp.roomId });
    const owls = await addSupergroup(t(), tenant.tenantId, camp.instanceId, "Owls3");
    const sub = await call(app, "PATCH", `${BASE}/${created.id}`, { key, body: { super_group_id: owls } });
    expect(sub.status).toBe(400);
    expect(fields(sub.body)).toEqual(["sub_group_id"]);
    const south = await addBlock(t(), tenant.tenantId, camp.instanceId, "South3");
    const room = await call(app, "PATCH", `${BASE}/${created.id}`, { key, body: { block_id: south } });
    expect(room.status).toBe(400);
    expect(fields(room.body)).toEqual(["room_id"]);
  });

  it("refuses clearing a supergroup while the subgroup stays, naming super_group_id", async () => {
    const created = await create({ sub_group_id: camp.subgroupId });
    const res = await call(app, "PATCH", `${BASE}/${created.id}`, { key, body: { super_group_id: null } });
    expect(res.status).toBe(400);
    expect(fields(res.body)).toEqual(["super_group_id"]);
  });

  it("moves a participant to another instance when its references fit it", async () => {
    const bare = await create();
    const moved = await call(app, "PATCH", `${BASE}/${bare.id}`, { key, body: { instance_id: other.instanceId } });
    expect(moved.status).toBe(200);
    expect(moved.body.data.instance_id).toBe(other.instanceId);

    const placed = await create({ sub_group_id: camp.subgroupId, room_id: camp.roomId });
    const along = await call(app, "PATCH", `${BASE}/${placed.id}`, {
      key,
      body: { instance_id: other.instanceId, sub_group_id: other.subgroupId, room_id: other.roomId },
    });
    expect(along.status).toBe(200);
    expect(along.body.data).toMatchObject({
      instance_id: other.instanceId,
      super_group_id: other.supergroupId,
      block_id: other.blockId,
      room_number: "10B",
    });
  });

  it("refuses a move to another instance while a reference stays behind, naming the field", async () => {
    const placed = await create({ super_group_id: camp.supergroupId });
    const res = await call(app, "PATCH", `${BASE}/${placed.id}`, { key, body: { instance_id: other.instanceId } });
    expect(res.status).toBe(400);
    expect(fields(res.body)).toEqual(["super_group_id"]);
    expect((await storedParticipant(t(), placed.id)).instance_id).toBe(camp.instanceId);
  });

  it("answers 409 when the new user_id is taken in the instance", async () => {
    const first = await create();
    const second = await create();
    const res = await call(app, "PATCH", `${BASE}/${second.id}`, { key, body: { user_id: first.user_id } });
    expect(res.status).toBe(409);
    expect(res.body.error.details).toMatchObject([{ field: "user_id" }]);
  });

  it.each([MISSING, "not-a-uuid"])("answers 404 for %s, before looking at the body", async (id) => {
    for (const method of ["PUT", "PATCH"]) {
      expect((await call(app, method, `${BASE}/${id}`, { key, body: { rank: "Lead" } })).status).toBe(404);
    }
    expect((await call(app, "PATCH", "/api/v1/participants/not-a-uuid", { key, body: {} })).status).toBe(404);
  });

  it("answers 401 without a credential and changes nothing", async () => {
    const created = await create();
    expect((await call(app, "PUT", `${BASE}/${created.id}`, { body: { rank: "x" } })).status).toBe(401);
    expect((await call(app, "PATCH", `${BASE}/${created.id}`, { body: { rank: "x" } })).status).toBe(401);
    expect((await storedParticipant(t(), created.id)).rank).toBeNull();
  });
});

describe("DELETE /api/v1/participants/{id}", () => {
  it("soft-deletes: the row is kept with deleted_at, and get, update and delete answer 404", async () => {
    const created = await create();
    const res = await call(app, "DELETE", `${BASE}/${created.id}`, { key });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, message: expect.any(String) });
    expect((await storedParticipant(t(), created.id)).deleted_at).not.toBeNull();
    expect((await call(app, "GET", `${BASE}/${created.id}`, { key })).status).toBe(404);
    expect((await call(app, "PUT", `${BASE}/${created.id}`, { key, body: { rank: "x" } })).status).toBe(404);
    expect((await call(app, "PATCH", `${BASE}/${created.id}`, { key, body: { rank: "x" } })).status).toBe(404);
    expect((await call(app, "DELETE", `${BASE}/${created.id}`, { key })).status).toBe(404);
    const list = await call(app, "GET", `${BASE}?instance_id=${camp.instanceId}&limit=1000`, { key });
    expect(list.body.data.map((p: { id: string }) => p.id)).not.toContain(created.id);
  });

  it("frees the user_id for a new participant of the instance", async () => {
    const created = await create();
    await call(app, "DELETE", `${BASE}/${created.id}`, { key });
    const again = await call(app, "POST", BASE, { key, body: minimal({ user_id: created.user_id }) });
    expect(again.status).toBe(201);
    expect(again.body.data.id).not.toBe(created.id);
  });

  it.each([MISSING, "not-a-uuid"])("answers 404 for %s", async (id) => {
    expect((await call(app, "DELETE", `${BASE}/${id}`, { key })).status).toBe(404);
  });

  it("answers 401 without a credential and deletes nothing", async () => {
    const created = await create();
    expect((await call(app, "DELETE", `${BASE}/${created.id}`)).status).toBe(401);
    expect((await storedParticipant(t(), created.id)).deleted_at).toBeNull();
  });
});
