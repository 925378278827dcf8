import { beforeAll, describe, expect, it } from "vitest";
import { addCampStructure } from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { type CallOptions, call, newTenant, signToken, type TestApp, type TestTenant, testApp } from "./support/fixtures.ts";

/**
 * The safeguarding records over HTTP: contacts, care records and consents,
 * who may reach them (403 for everyone else, on every route), what they look
 * like, and that reads are on the record.
 */

const t = useTestDatabase();

let app: TestApp;
let tenant: TestTenant;
let other: TestTenant;
let instanceId: string;
/** Credentials: an admin's Bearer token (care write), a care key of a staff writer, and callers without access. */
const who: Record<
  "admin" | "writer" | "reader" | "noAccess" | "noAccessToken" | "writerWithoutCareScope" | "otherAdmin",
  CallOptions
> = {} as never;
let adminId: string;

async function bearerOf(email: string) {
  return signToken({ sub: `sub-${email}`, email, email_verified: true });
}

/** A key of a new staff user with this care access, issued by the admin with these scopes. */
async function staffKey(care: "none" | "read" | "write", scopes: string[]): Promise<{ key: string; userId: string }> {
  const user = await tenant.addUser("staff", { withKey: false });
  if (care !== "none") {
    const changed = await call(app, "PATCH", `/api/v1/users/${user.userId}`, { ...who.admin, body: { care_access: care } });
    expect(changed.status).toBe(200);
    expect(changed.body.data.care_access).toBe(care);
  }
  const issued = await call(app, "POST", "/api/v1/api-keys/generate", { ...who.admin, body: { email: user.email, scopes } });
  expect(issued.status, JSON.stringify(issued.body)).toBe(201);
  return { key: issued.body.data.key, userId: user.userId };
}

async function newParticipant(userId = `u-${Math.random().toString(36).slice(2, 8)}`): Promise<string> {
  const created = await call(app, "POST", "/api/v1/participants", {
    ...who.admin,
    body: { instance_id: instanceId, user_id: userId, first_name: "Ada", surname: "Lovelace" },
  });
  expect(created.status).toBe(201);
  return created.body.data.id;
}

beforeAll(async () => {
  app = testApp(t().db);
  tenant = await newTenant(t().db);
  other = await newTenant(t().db);
  instanceId = (await addCampStructure(t(), tenant.tenantId)).instanceId;
  adminId = tenant.admin.userId;
  who.admin = { token: await bearerOf(tenant.admin.email) };
  who.otherAdmin = { token: await bearerOf(other.admin.email) };
  who.writer = { key: (await staffKey("write", ["read", "write", "care"])).key };
  who.reader = { key: (await staffKey("read", ["read", "write", "care"])).key };
  who.noAccess = { key: (await staffKey("none", ["read", "write", "care"])).key };
  const noAccessUser = await tenant.addUser("staff", { withKey: false });
  who.noAccessToken = { token: await bearerOf(noAccessUser.email) };
  who.writerWithoutCareScope = { key: (await staffKey("write", ["read", "write"])).key };
});

/** Every care route with a body that would succeed for a writer. */
function careRoutes(participant: string, contact: string): Array<[string, string, unknown?]> {
  return [
    ["GET", `/api/v1/participants/${participant}/contacts`],
    ["POST", `/api/v1/participants/${participant}/contacts`, { name: "Gran", phone: "+44 20 7946 0958" }],
    ["GET", `/api/v1/participants/${participant}/contacts/${contact}`],
    ["PATCH", `/api/v1/participants/${participant}/contacts/${contact}`, { relationship: "aunt" }],
    ["DELETE", `/api/v1/participants/${participant}/contacts/${contact}`],
    ["GET", `/api/v1/participants/${participant}/care`],
    ["PUT", `/api/v1/participants/${participant}/care`, { care_notes: "sleeps badly" }],
    ["PATCH", `/api/v1/participants/${participant}/care`, { dietary_requirements: "vegetarian" }],
    ["GET", `/api/v1/participants/${participant}/consents`],
    ["PUT", `/api/v1/participants/${participant}/consents`, { emergency_medical_treatment: "granted" }],
    ["GET", `/api/v1/participants?severe_allergy=true`],
  ];
}

describe("need to know over HTTP", () => {
  let participant: string;
  let contact: string;

  beforeAll(async () => {
    participant = await newParticipant();
    const created = await call(app, "POST", `/api/v1/participants/${participant}/contacts`, {
      ...who.writer,
      body: { name: "Mum", phone: "+44 20 7946 0958", emergency: true, emergency_order: 1 },
    });
    expect(created.status).toBe(201);
    contact = created.body.data.id;
  });

  for (const caller of ["noAccess", "noAccessToken", "writerWithoutCareScope"] as const) {
    it(`answers 403 on every care route to ${caller}`, async () => {
      for (const [method, path, body] of careRoutes(participant, contact)) {
        const answer = await call(app, method, path, { ...who[caller], body });
        expect(`${method} ${path}: ${answer.status} ${answer.body?.error?.code}`).toBe(`${method} ${path}: 403 FORBIDDEN`);
      }
    });
  }

  it("lets a reader read and refuses its writes (403)", async () => {
    for (const [method, path, body] of careRoutes(participant, contact)) {
      const answer = await call(app, method, path, { ...who.reader, body });
      const expected = method === "GET" ? 200 : 403;
      expect(`${method} ${path}: ${answer.status}`).toBe(`${method} ${path}: ${expected}`);
    }
  });

  it("finds none of another tenant's participants (404), even for its admin with care access", async () => {
    for (const [method, path, body] of careRoutes(participant, contact).filter(([, path]) => !path.includes("severe"))) {
      const answer = await call(app, method, path, { ...who.otherAdmin, body });
      expect(`${method} ${path}: ${answer.status}`).toBe(`${method} ${path}: 404`);
    }
    const list = await call(app, "GET", "/api/v1/participants?severe_allergy=true", who.otherAdmin);
    expect(list.status).toBe(200);
    expect(list.body.data).toEqual([]);
  });

  it("answers 404 for a contact of another participant and for a malformed id", async () => {
    const second = await newParticipant();
    expect((await call(app, "GET", `/api/v1/participants/${second}/contacts/${contact}`, who.writer)).status).toBe(404);
    expect((await call(app, "GET", "/api/v1/participants/nope/care", who.writer)).status).toBe(404);
    expect((await call(app, "GET", `/api/v1/participants/${participant}/contacts/nope`, who.writer)).status).toBe(404);
  });
});

describe("contacts", () => {
  it("are validated, stored with E.164 phone numbers and listed emergency contacts first, then by creation", async () => {
    const participant = await newParticipant();
    const post = (body: unknown) => call(app, "POST", `/api/v1/participants/${participant}/contacts`, { ...who.writer, body });
    const bad: Array<[unknown, string]> = [
      [{ name: "X", phone: "0207 946 0958" }, "phone"],
      [{ name: "X", phone: "+44 12" }, "phone"],
      [{ name: "X", email: "not-an-address" }, "email"],
      [{ name: "X", emergency: true }, "phone"],
      [{ name: "X", emergency_order: 2 }, "emergency_order"],
      [{ name: "" }, "name"],
      [{ name: "X", notes: "a\u0000b" }, "notes"],
    ];
    for (const [body, field] of bad) {
      const answer = await post(body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(JSON.stringify(answer.body.error.details)).toContain(field);
    }
    const plain = await post({ name: "Neighbour", relationship: "neighbour", email: "n@example.org" });
    const second = await post({ name: "Dad", phone: "+1 (202) 555-0143", emergency: true, emergency_order: 2 });
    const first = await post({
      name: "Mum",
      phone: "+44 20 7946 0958",
      phone_alt: "+49 30 901820",
      emergency: true,
      emergency_order: 1,
      authorised_pickup: true,
      notes: "Call after 5pm\non weekdays",
    });
    expect(first.status).toBe(201);
    expect(first.headers.get("location")).toBe(`./contacts/${first.body.data.id}`);
    expect(first.headers.get("etag")).toMatch(/^"\d+"$/);
    expect(first.body.data).toMatchObject({
      participant_id: participant,
      name: "Mum",
      phone: "+442079460958",
      phone_alt: "+4930901820",
      emergency: true,
      emergency_order: 1,
      authorised_pickup: true,
      deleted_at: null,
    });
    expect(second.body.data.phone).toBe("+12025550143");
    const listed = await call(app, "GET", `/api/v1/participants/${participant}/contacts`, who.writer);
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((c: { name: string }) => c.name)).toEqual(["Mum", "Dad", "Neighbour"]);
    expect(listed.body.meta).toEqual({ total: 3, limit: 100, offset: 0 });
    const page = await call(app, "GET", `/api/v1/participants/${participant}/contacts?limit=1&offset=1`, who.writer);
    expect(page.body.data.map((c: { name: string }) => c.name)).toEqual(["Dad"]);
    const sorted = await call(app, "GET", `/api/v1/participants/${participant}/contacts?sort=-created_at`, who.writer);
    expect(sorted.body.data.map((c: { name: string }) => c.name)).toEqual(["Mum", "Dad", "Neighbour"]);
    expect(plain.status).toBe(201);
  });

  it("read with an ETag, change with If-Match, delete softly", async () => {
    const participant = await newParticipant();
    const created = await call(app, "POST", `/api/v1/participants/${participant}/contacts`, {
      ...who.writer,
      body: { name: "Mum", phone: "+44 20 7946 0958", emergency: true, emergency_order: 1 },
    });
    const path = `/api/v1/participants/${participant}/contacts/${created.body.data.id}`;
    const read = await call(app, "GET", path, who.reader);
    expect(read.status).toBe(200);
    const etag = read.headers.get("etag") as string;
    expect((await call(app, "GET", path, { ...who.reader, headers: { "If-None-Match": etag } })).status).toBe(304);
    const changed = await call(app, "PATCH", path, { ...who.writer, body: { emergency: false }, headers: { "If-Match": etag } });
    expect(changed.status).toBe(200);
    // No longer an emergency contact: its order goes with it.
    expect(changed.body.data).toMatchObject({ emergency: false, emergency_order: null, phone: "+442079460958" });
    const stale = await call(app, "PATCH", path, { ...who.writer, body: { name: "Mother" }, headers: { "If-Match": etag } });
    expect(stale.status).toBe(412);
    expect(stale.body.error.code).toBe("PRECONDITION_FAILED");
    expect((await call(app, "PATCH", path, { ...who.writer, body: {} })).status).toBe(400);
    expect((await call(app, "DELETE", path, who.writer)).status).toBe(200);
    expect((await call(app, "GET", path, who.writer)).status).toBe(404);
    expect((await call(app, "DELETE", path, who.writer)).status).toBe(404);
    const list = `/api/v1/participants/${participant}/contacts`;
    expect((await call(app, "GET", list, who.writer)).body.data).toEqual([]);
    const withDeleted = await call(app, "GET", `${list}?include_deleted=true`, who.writer);
    expect(withDeleted.body.data).toHaveLength(1);
    expect(withDeleted.body.data[0].deleted_at).toEqual(expect.any(String));
  });
});

describe("a keyed contact create replayed (issue 38)", () => {
  it("is a read on the record while the participant is live, and 404 once it is deleted, as the care routes", async () => {
    const participant = await newParticipant();
    const key = `contact-replay-${Math.random().toString(36).slice(2, 10)}`;
    const post = () =>
      call(app, "POST", `/api/v1/participants/${participant}/contacts`, {
        ...who.writer,
        headers: { "Idempotency-Key": key },
        body: { name: "Replayed Guardian", phone: "+44 20 7946 0958" },
      });
    const reads = async () =>
      (
        await t().admin(
          "select count(*)::int as n from public.audit_events where action = 'read' and resource_type = 'contacts' and resource_id = $1",
          [participant],
        )
      ).rows[0].n as number;
    expect((await post()).status).toBe(201);
    expect(await reads()).toBe(0);
    const again = await post();
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body.data.name).toBe("Replayed Guardian");
    expect(await reads()).toBe(1);

    expect((await call(app, "DELETE", `/api/v1/participants/${participant}`, who.admin)).status).toBe(200);
    expect((await call(app, "GET", `/api/v1/participants/${participant}/contacts`, who.writer)).status).toBe(404);
    const afterDelete = await post();
    expect(`${afterDelete.status} ${afterDelete.body.error?.code}`).toBe("404 NOT_FOUND");
    expect(JSON.stringify(afterDelete.body)).not.toContain("Replayed Guardian");
    expect(await reads()).toBe(1);
  });
});

describe("care records", () => {
  it("start empty, are replaced by PUT and changed by PATCH, with ETags", async () => {
    const participant = await newParticipant();
    const path = `/api/v1/participants/${participant}/care`;
    const empty = await call(app, "GET", path, who.writer);
    expect(empty.status).toBe(200);
    expect(empty.body.data).toEqual({
      participant_id: participant,
      allergies: [],
      dietary_requirements: null,
      medical_conditions: null,
      medications: [],
      care_notes: null,
      created_at: null,
      updated_at: null,
    });
    expect(empty.headers.get("etag")).toBeNull();
    expect((await call(app, "PUT", path, { ...who.writer, body: {}, headers: { "If-Match": "*" } })).status).toBe(412);
    const put = await call(app, "PUT", path, {
      ...who.writer,
      body: {
        allergies: [{ name: "peanut", severity: "anaphylactic" }],
        care_notes: "carries an auto-injector",
      },
    });
    expect(put.status).toBe(200);
    expect(put.body.data.allergies).toEqual([{ name: "peanut", severity: "anaphylactic" }]);
    const patched = await call(app, "PATCH", path, {
      ...who.writer,
      body: { dietary_requirements: "no nuts" },
      headers: { "If-Match": put.headers.get("etag") as string },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.data).toMatchObject({ dietary_requirements: "no nuts", care_notes: "carries an auto-injector" });
    const replaced = await call(app, "PUT", path, { ...who.writer, body: { medical_conditions: "asthma" } });
    expect(replaced.body.data).toMatchObject({
      medical_conditions: "asthma",
      allergies: [],
      care_notes: null,
      dietary_requirements: null,
    });
    for (const body of [
      { allergies: [{ name: "peanut", severity: "deadly" }] },
      { allergies: [{ name: "peanut" }] },
      { medications: [{ dose: "1" }] },
      { care_notes: "x".repeat(2001) },
    ]) {
      const answer = await call(app, "PATCH", path, { ...who.writer, body });
      expect(answer.status, JSON.stringify(body)).toBe(400);
    }
  });

  it("let the participant list filter on a severe or anaphylactic allergy, without the record, each flag on the record", async () => {
    const severe = await newParticipant();
    const mild = await newParticipant();
    await call(app, "PUT", `/api/v1/participants/${severe}/care`, {
      ...who.writer,
      body: {
        allergies: [
          { name: "wasp", severity: "severe" },
          { name: "pollen", severity: "mild" },
        ],
      },
    });
    await call(app, "PUT", `/api/v1/participants/${mild}/care`, {
      ...who.writer,
      body: { allergies: [{ name: "dust", severity: "mild" }] },
    });
    const listed = await call(
      app,
      "GET",
      `/api/v1/participants?severe_allergy=true&instance_id=${instanceId}&limit=1000`,
      who.reader,
    );
    expect(listed.status).toBe(200);
    const ids = listed.body.data.map((p: { id: string }) => p.id);
    expect(ids).toContain(severe);
    expect(ids).not.toContain(mild);
    expect(JSON.stringify(listed.body)).not.toMatch(/wasp|pollen|allerg|severity/);
    const flags = await call(
      app,
      "GET",
      `/api/v1/audit-events?action=read&resource_type=care_flag&resource_id=${severe}`,
      who.admin,
    );
    expect(flags.body.data.length).toBeGreaterThan(0);
  });

  it("record the flag of every participant an answer counts, listed on its page or not (issue 38)", async () => {
    // Three participants found by one search term, each with a severe allergy; a page of one, past them all.
    const term = `Oracle${Math.random().toString(36).slice(2, 8)}`;
    const found: string[] = [];
    for (let n = 0; n < 3; n++) {
      const created = await call(app, "POST", "/api/v1/participants", {
        ...who.admin,
        body: { instance_id: instanceId, user_id: `${term}-${n}`, first_name: term, surname: `Child${n}` },
      });
      found.push(created.body.data.id);
      await call(app, "PUT", `/api/v1/participants/${created.body.data.id}/care`, {
        ...who.writer,
        body: { allergies: [{ name: "peanut", severity: "anaphylactic" }] },
      });
    }
    const flagReads = async () =>
      (
        await t().admin(
          "select resource_id::text as id, count(*)::int as n from public.audit_events where resource_type = 'care_flag' and resource_id = any ($1) group by resource_id",
          [found],
        )
      ).rows as Array<{ id: string; n: number }>;
    expect(await flagReads()).toEqual([]);
    const page = await call(app, "GET", `/api/v1/participants?severe_allergy=true&q=${term}&limit=1&offset=5`, who.reader);
    expect(page.status).toBe(200);
    expect(page.body.data).toEqual([]);
    // The total tells each counted participant's flag: each is on the record, once.
    expect(page.body.meta.total).toBe(3);
    expect((await flagReads()).sort((a, b) => a.id.localeCompare(b.id))).toEqual([...found].sort().map((id) => ({ id, n: 1 })));
  });
});

describe("consents", () => {
  it("are unknown until recorded, kept as a history with who and when", async () => {
    const participant = await newParticipant();
    const path = `/api/v1/participants/${participant}/consents`;
    const none = await call(app, "GET", path, who.reader);
    expect(none.status).toBe(200);
    expect(none.body.data.photo).toEqual({
      status: "unknown",
      note: null,
      recorded_by: null,
      recorded_by_email: null,
      recorded_at: null,
    });
    expect(none.body.data.history).toEqual([]);
    await call(app, "PUT", path, {
      ...who.admin,
      body: { photo: "granted", emergency_medical_treatment: "granted", note: "form 12" },
    });
    const second = await call(app, "PUT", path, { ...who.admin, body: { emergency_medical_treatment: "refused" } });
    expect(second.status).toBe(200);
    expect(second.body.data.photo).toMatchObject({ status: "granted", recorded_by: adminId, note: "form 12" });
    expect(second.body.data.emergency_medical_treatment).toMatchObject({ status: "refused", recorded_by: adminId, note: null });
    expect(second.body.data.history.map((a: { kind: string; status: string }) => `${a.kind}:${a.status}`)).toEqual([
      "emergency_medical_treatment:refused",
      "emergency_medical_treatment:granted",
      "photo:granted",
    ]);
    for (const body of [{}, { photo: "maybe" }, { note: "only a note" }]) {
      expect((await call(app, "PUT", path, { ...who.admin, body })).status).toBe(400);
    }
  });
});

describe("every read is on the record", () => {
  it("writes an audit event (action read, actor, participant) for each read, which GET /audit-events filters on", async () => {
    const participant = await newParticipant();
    await call(app, "GET", `/api/v1/participants/${participant}/care`, who.reader);
    await call(app, "GET", `/api/v1/participants/${participant}/contacts`, who.reader);
    await call(app, "GET", `/api/v1/participants/${participant}/consents`, who.reader);
    // A refused read is no read.
    await call(app, "GET", `/api/v1/participants/${participant}/care`, who.noAccess);
    const reads = await call(app, "GET", `/api/v1/audit-events?action=read&resource_id=${participant}`, who.admin);
    expect(reads.status).toBe(200);
    expect(reads.body.data.map((e: { resource_type: string }) => e.resource_type).sort()).toEqual([
      "care_record",
      "consents",
      "contacts",
    ]);
    for (const event of reads.body.data) {
      expect(event).toMatchObject({ action: "read", actor_via: "api_key", resource_id: participant, changes: {} });
      expect(event.actor_user_id).toEqual(expect.any(String));
    }
  });
});

describe("users and keys", () => {
  it("care_access is read and set by admins, write for new admins and none for new staff", async () => {
    const staff = await tenant.addUser("staff", { withKey: false });
    const read = await call(app, "GET", `/api/v1/users/${staff.userId}`, who.admin);
    expect(read.body.data.care_access).toBe("none");
    const admins = await call(app, "GET", `/api/v1/users/${adminId}`, who.admin);
    expect(admins.body.data.care_access).toBe("write");
    expect(
      (await call(app, "PATCH", `/api/v1/users/${staff.userId}`, { ...who.admin, body: { care_access: "all" } })).status,
    ).toBe(400);
    expect(
      (await call(app, "PATCH", `/api/v1/users/${staff.userId}`, { ...who.noAccessToken, body: { care_access: "write" } }))
        .status,
    ).toBe(403);
  });

  it("generate takes the care scope in any order, stores it in one, regenerate keeps it, and bad scopes are 400", async () => {
    const user = await tenant.addUser("staff", { withKey: false });
    const issued = await call(app, "POST", "/api/v1/api-keys/generate", {
      ...who.admin,
      body: { email: user.email, scopes: ["care", "read"] },
    });
    expect(issued.status).toBe(201);
    expect(issued.body.data.scopes).toEqual(["read", "care"]);
    const regenerated = await call(app, "POST", "/api/v1/api-keys/regenerate", { key: issued.body.data.key });
    expect(regenerated.status).toBe(200);
    expect(regenerated.body.data.scopes).toEqual(["read", "care"]);
    for (const scopes of [["write"], ["read", "read"], ["read", "admin"], []]) {
      const bad = await call(app, "POST", "/api/v1/api-keys/generate", { ...who.admin, body: { email: user.email, scopes } });
      expect(bad.status, JSON.stringify(scopes)).toBe(400);
    }
  });
});
