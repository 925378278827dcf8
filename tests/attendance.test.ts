import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { addCampStructure, addInstance } from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { type CallOptions, call, newTenant, signToken, type TestApp, type TestTenant, testApp } from "./support/fixtures.ts";

/**
 * Check-in and check-out over HTTP: the pickup rule, the security code,
 * contradictions of the current presence, concurrent check-outs, archived
 * instances and deleted participants, the list, presence on participants,
 * tenant isolation and erasure.
 */

const t = useTestDatabase();

let app: TestApp;
let tenant: TestTenant;
let other: TestTenant;
let instanceId: string;
let admin: CallOptions;
let staff: CallOptions;
let otherAdmin: CallOptions;

async function bearerOf(email: string) {
  return { token: await signToken({ sub: `sub-${email}`, email, email_verified: true }) };
}

async function newParticipant(instance = instanceId): Promise<string> {
  const created = await call(app, "POST", "/api/v1/participants", {
    ...admin,
    body: { instance_id: instance, user_id: `u-${randomUUID().slice(0, 8)}`, first_name: "Ada", surname: "Lovelace" },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body.data.id;
}

async function addContact(participant: string, body: Record<string, unknown>): Promise<string> {
  const created = await call(app, "POST", `/api/v1/participants/${participant}/contacts`, { ...admin, body });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body.data.id;
}

const move = (who: CallOptions, body: Record<string, unknown>) => call(app, "POST", "/api/v1/attendance", { ...who, body });

beforeAll(async () => {
  app = testApp(t().db);
  tenant = await newTenant(t().db);
  other = await newTenant(t().db);
  instanceId = (await addCampStructure(t(), tenant.tenantId)).instanceId;
  admin = await bearerOf(tenant.admin.email);
  const staffUser = await tenant.addUser("staff");
  staff = { key: staffUser.key as string };
  otherAdmin = { key: other.admin.key };
});

describe("check-in", () => {
  it("records a check-in with a security code, and the participant is present", async () => {
    const child = await newParticipant();
    const before = await call(app, "GET", `/api/v1/participants/${child}`, admin);
    expect(before.body.data.presence).toBeNull();
    expect(before.body.data.presence_since).toBeNull();

    const recorded_at = new Date(Date.now() - 60_000).toISOString();
    const checkIn = await move(staff, { participant_id: child, direction: "in", location: "Main gate", recorded_at });
    expect(checkIn.status, JSON.stringify(checkIn.body)).toBe(201);
    expect(checkIn.body.data).toMatchObject({ participant_id: child, instance_id: instanceId, direction: "in", recorded_at });
    expect(checkIn.body.data.security_code).toMatch(/^[A-Z0-9]{4}$/);
    expect(checkIn.body.data.conflict).toBe(false);
    expect(checkIn.headers.get("Location")).toContain(checkIn.body.data.id);

    const after = await call(app, "GET", `/api/v1/participants/${child}`, admin);
    expect(after.body.data.presence).toBe("in");
    expect(after.body.data.presence_since).toBe(recorded_at);

    const again = await move(staff, { participant_id: child, direction: "in" });
    expect(again.status).toBe(409);
    expect(again.body.error.details).toMatchObject([{ field: "direction" }]);
  });

  it("refuses a check-out of a participant who is not in, and a recorded_at in the future or before the last movement", async () => {
    const child = await newParticipant();
    const contact = await addContact(child, { name: "Mum", authorised_pickup: true });
    const out = await move(staff, { participant_id: child, direction: "out", pickup_contact_id: contact });
    expect(out.status).toBe(409);
    const future = await move(staff, {
      participant_id: child,
      direction: "in",
      recorded_at: new Date(Date.now() + 3_600_000).toISOString(),
    });
    expect(future.status).toBe(400);
    expect((await move(staff, { participant_id: child, direction: "in" })).status).toBe(201);
    const backdated = await move(staff, {
      participant_id: child,
      direction: "out",
      pickup_contact_id: contact,
      recorded_at: new Date(Date.now() - 3_600_000).toISOString(),
    });
    expect(backdated.status).toBe(409);
    expect(backdated.body.error.details).toMatchObject([{ field: "recorded_at" }]);
  });

  it("refuses check-out fields on a check-in, and an unknown or deleted participant", async () => {
    const child = await newParticipant();
    const withCode = await move(staff, { participant_id: child, direction: "in", security_code: "ABCD" });
    expect(withCode.status).toBe(400);
    const unknown = await move(staff, { participant_id: randomUUID(), direction: "in" });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.details).toMatchObject([{ field: "participant_id" }]);
    expect((await call(app, "DELETE", `/api/v1/participants/${child}`, admin)).status).toBe(200);
    const deleted = await move(staff, { participant_id: child, direction: "in" });
    expect(deleted.status).toBe(400);
  });

  it("refuses movements in an archived instance", async () => {
    const camp = await addInstance(t(), tenant.tenantId, `Archived ${randomUUID().slice(0, 6)}`);
    const child = await newParticipant(camp);
    expect((await call(app, "PATCH", `/api/v1/instances/${camp}`, { ...admin, body: { status: "archived" } })).status).toBe(200);
    const refused = await move(staff, { participant_id: child, direction: "in" });
    expect(refused.status).toBe(409);
    expect(
      await t().admin("select count(*)::int as n from public.attendance_movements where participant_id = $1", [child]),
    ).toMatchObject({
      rows: [{ n: 0 }],
    });
  });
});

describe("the pickup rule", () => {
  let child: string;
  let code: string;
  let authorised: string;
  let notAuthorised: string;
  let deletedContact: string;
  let someoneElses: string;

  beforeAll(async () => {
    child = await newParticipant();
    authorised = await addContact(child, { name: "Grandad", authorised_pickup: true });
    notAuthorised = await addContact(child, { name: "Neighbour", authorised_pickup: false });
    deletedContact = await addContact(child, { name: "Ex-nanny", authorised_pickup: true });
    expect((await call(app, "DELETE", `/api/v1/participants/${child}/contacts/${deletedContact}`, admin)).status).toBe(200);
    someoneElses = await addContact(await newParticipant(), { name: "Other mum", authorised_pickup: true });
    const checkIn = await move(staff, { participant_id: child, direction: "in" });
    expect(checkIn.status).toBe(201);
    code = checkIn.body.data.security_code;
  });

  it.each([
    ["no pickup at all", {}],
    ["a contact not authorised to collect", { pickup: "notAuthorised" }],
    ["a deleted contact", { pickup: "deletedContact" }],
    ["another participant's contact", { pickup: "someoneElses" }],
    ["an unknown contact", { pickup: "unknown" }],
    ["an authorised contact with the wrong code", { pickup: "authorised", code: "ZZZZ" }],
  ])("refuses a check-out with %s (409), and the child stays in", async (_, how: { pickup?: string; code?: string }) => {
    const ids: Record<string, string> = { authorised, notAuthorised, deletedContact, someoneElses, unknown: randomUUID() };
    const body: Record<string, unknown> = { participant_id: child, direction: "out" };
    if (how.pickup) body.pickup_contact_id = ids[how.pickup];
    if (how.code) body.security_code = how.code;
    const refused = await move(staff, body);
    expect(refused.status, JSON.stringify(refused.body)).toBe(409);
    expect((await call(app, "GET", `/api/v1/participants/${child}`, admin)).body.data.presence).toBe("in");
  });

  it("refuses a staff override (403), and an admin's override is recorded with its reason", async () => {
    const staffOverride = await move(staff, { participant_id: child, direction: "out", override_reason: "Police collected" });
    expect(staffOverride.status).toBe(403);
    expect(staffOverride.body.error.code).toBe("FORBIDDEN");

    const twin = await newParticipant();
    expect((await move(staff, { participant_id: twin, direction: "in" })).status).toBe(201);
    const adminOverride = await move(admin, { participant_id: twin, direction: "out", override_reason: "Ambulance to hospital" });
    expect(adminOverride.status, JSON.stringify(adminOverride.body)).toBe(201);
    expect(adminOverride.body.data).toMatchObject({
      direction: "out",
      override_reason: "Ambulance to hospital",
      pickup_contact_id: null,
    });
    const audit = await t().admin(
      "select changes from public.audit_events where resource_type = 'movement' and resource_id = $1 and action = 'create'",
      [adminOverride.body.data.id],
    );
    expect(audit.rows[0].changes.override_reason).toBe("Ambulance to hospital");
  });

  it("releases the child to an authorised pickup presenting the check-in's code (in any case)", async () => {
    const released = await move(staff, {
      participant_id: child,
      direction: "out",
      pickup_contact_id: authorised,
      security_code: code.toLowerCase(),
    });
    expect(released.status, JSON.stringify(released.body)).toBe(201);
    expect(released.body.data).toMatchObject({ direction: "out", pickup_contact_id: authorised, security_code: null });
    expect((await call(app, "GET", `/api/v1/participants/${child}`, admin)).body.data.presence).toBe("out");
  });

  it("judges a check-out without a code by its pickup alone", async () => {
    const kid = await newParticipant();
    const mum = await addContact(kid, { name: "Mum", authorised_pickup: true });
    expect((await move(staff, { participant_id: kid, direction: "in" })).status).toBe(201);
    expect((await move(staff, { participant_id: kid, direction: "out", pickup_contact_id: mum })).status).toBe(201);
  });
});

describe("concurrency and nonces", () => {
  it("takes two concurrent check-outs of one child one after the other: one wins, one is a conflict", async () => {
    for (let round = 0; round < 3; round++) {
      const child = await newParticipant();
      const mum = await addContact(child, { name: "Mum", authorised_pickup: true });
      expect((await move(staff, { participant_id: child, direction: "in" })).status).toBe(201);
      const both = await Promise.all([
        move(staff, { participant_id: child, direction: "out", pickup_contact_id: mum }),
        move(admin, { participant_id: child, direction: "out", pickup_contact_id: mum }),
      ]);
      expect(both.map((r) => r.status).sort()).toEqual([201, 409]);
      const stored = await t().admin("select count(*)::int as n from public.attendance_movements where participant_id = $1", [
        child,
      ]);
      expect(stored.rows[0].n).toBe(2);
    }
  });

  it("refuses a nonce already recorded (409), and keeps one movement", async () => {
    const child = await newParticipant();
    const nonce = randomUUID();
    expect((await move(staff, { participant_id: child, direction: "in", nonce })).status).toBe(201);
    const mum = await addContact(child, { name: "Mum", authorised_pickup: true });
    const again = await move(staff, { participant_id: child, direction: "out", pickup_contact_id: mum, nonce });
    expect(again.status).toBe(409);
    expect(again.body.error.details).toMatchObject([{ field: "nonce" }]);
  });

  it("issues codes unique among the instance's present participants", async () => {
    const codes = new Set<string>();
    for (let i = 0; i < 25; i++) {
      const checkIn = await move(staff, { participant_id: await newParticipant(), direction: "in" });
      codes.add(checkIn.body.data.security_code);
    }
    expect(codes.size).toBe(25);
  });
});

describe("lists", () => {
  it("lists movements in recorded_at order with filters and pages, and participants by presence", async () => {
    const camp = await addInstance(t(), tenant.tenantId, `Listed ${randomUUID().slice(0, 6)}`);
    const [a, b] = [await newParticipant(camp), await newParticipant(camp)];
    const mum = await addContact(a, { name: "Mum", authorised_pickup: true });
    const base = Date.now() - 600_000;
    const at = (minutes: number) => new Date(base + minutes * 60_000).toISOString();
    expect((await move(staff, { participant_id: a, direction: "in", recorded_at: at(1) })).status).toBe(201);
    expect((await move(staff, { participant_id: b, direction: "in", recorded_at: at(2) })).status).toBe(201);
    expect((await move(staff, { participant_id: a, direction: "out", pickup_contact_id: mum, recorded_at: at(3) })).status).toBe(
      201,
    );

    const all = await call(app, "GET", `/api/v1/attendance?instance_id=${camp}`, staff);
    expect(all.status).toBe(200);
    expect(all.body.meta).toEqual({ total: 3, limit: 100, offset: 0 });
    expect(all.body.data.map((m: { recorded_at: string }) => m.recorded_at)).toEqual([at(1), at(2), at(3)]);
    expect(all.body.data[0]).not.toHaveProperty("security_code");

    const page = await call(app, "GET", `/api/v1/attendance?instance_id=${camp}&limit=1&offset=1`, staff);
    expect(page.body.data.map((m: { participant_id: string }) => m.participant_id)).toEqual([b]);
    const outs = await call(app, "GET", `/api/v1/attendance?instance_id=${camp}&direction=out`, staff);
    expect(outs.body.data.map((m: { participant_id: string }) => m.participant_id)).toEqual([a]);
    const ofA = await call(app, "GET", `/api/v1/attendance?participant_id=${a}&since=${encodeURIComponent(at(2))}`, staff);
    expect(ofA.body.data.map((m: { direction: string }) => m.direction)).toEqual(["out"]);

    const present = await call(app, "GET", `/api/v1/participants?instance_id=${camp}&presence=in`, staff);
    expect(present.body.data.map((p: { id: string }) => p.id)).toEqual([b]);
    const gone = await call(app, "GET", `/api/v1/participants?instance_id=${camp}&presence=out`, staff);
    expect(gone.body.data.map((p: { id: string }) => p.id)).toEqual([a]);
    const c = await newParticipant(camp);
    const never = await call(app, "GET", `/api/v1/participants?instance_id=${camp}&presence=none`, staff);
    expect(never.body.data.map((p: { id: string }) => p.id)).toEqual([c]);
    expect((await call(app, "GET", "/api/v1/attendance?direction=sideways", staff)).status).toBe(400);
  });

  it("keeps presence out of the API role's direct writes", async () => {
    const child = await newParticipant();
    const patched = await call(app, "PATCH", `/api/v1/participants/${child}`, {
      ...admin,
      body: { presence: "in", first_name: "Al" },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.data.presence).toBeNull();
  });
});

describe("tenant isolation", () => {
  it("shows another tenant's credential none of the movements, and refuses its writes on them", async () => {
    const child = await newParticipant();
    const checkIn = await move(staff, { participant_id: child, direction: "in" });
    const id = checkIn.body.data.id;
    expect((await call(app, "GET", `/api/v1/attendance/${id}`, otherAdmin)).status).toBe(404);
    const theirs = await call(app, "GET", `/api/v1/attendance?participant_id=${child}`, otherAdmin);
    expect(theirs.body.meta.total).toBe(0);
    const onOurs = await move(otherAdmin, { participant_id: child, direction: "out", override_reason: "take" });
    expect(onOurs.status).toBe(400);
    expect((await call(app, "GET", `/api/v1/attendance/${id}`, staff)).status).toBe(200);
    expect((await call(app, "GET", "/api/v1/attendance/not-a-uuid", staff)).status).toBe(404);
  });
});

describe("erasure", () => {
  it("removes the participant's movements, codes and presence, and the values of their audit events", async () => {
    const child = await newParticipant();
    const mum = await addContact(child, { name: "Mum", authorised_pickup: true });
    const checkIn = await move(staff, { participant_id: child, direction: "in", location: "Boathouse-erasure" });
    expect(checkIn.status).toBe(201);
    expect(
      (
        await move(staff, {
          participant_id: child,
          direction: "out",
          pickup_contact_id: mum,
          security_code: checkIn.body.data.security_code,
        })
      ).status,
    ).toBe(201);
    expect((await move(staff, { participant_id: child, direction: "in" })).status).toBe(201);
    const erased = await call(app, "POST", `/api/v1/participants/${child}/erase`, admin);
    expect(erased.status, JSON.stringify(erased.body)).toBe(200);
    const left = await t().admin(
      `select (select count(*) from public.attendance_movements where participant_id = $1)::int as movements,
              (select count(*) from public.attendance_present_codes where participant_id = $1)::int as codes,
              (select presence from public.participants where id = $1) as presence,
              (select count(*) from public.audit_events where resource_type = 'movement' and changes::text like '%Boathouse-erasure%')::int as audit`,
      [child],
    );
    expect(left.rows[0]).toEqual({ movements: 0, codes: 0, presence: null, audit: 0 });
    expect((await call(app, "GET", `/api/v1/attendance/${checkIn.body.data.id}`, staff)).status).toBe(404);
    const after = await move(admin, { participant_id: child, direction: "in" });
    expect(after.status).toBe(400);
  });
});
