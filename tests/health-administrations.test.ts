import { randomBytes } from "node:crypto";
import type pg from "pg";
import { beforeAll, describe, expect, it } from "vitest";
import { addInstance } from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { type CallOptions, call, newTenant, signToken, type TestApp, type TestTenant, testApp } from "./support/fixtures.ts";

/**
 * Health centre, part 2: the medication administration record. Doses are
 * charted (201), corrections are new entries listed beside what they amend,
 * nothing changes or goes over HTTP (405) or in SQL (the API role and the
 * doors' role hold no privilege; a trigger refuses even the owner), as-needed
 * limits refuse a dose (409 naming the last doses) unless overridden, also
 * under concurrent charting, a nonce makes a re-upload idempotent, and reads
 * are audited care reads confined to the tenant.
 */

const t = useTestDatabase();

let app: TestApp;
let tenant: TestTenant;
let other: TestTenant;
let instanceId: string;
const who: Record<"admin" | "writer" | "reader" | "noAccess" | "otherAdmin", CallOptions> = {} as never;

const bearerOf = (email: string) => signToken({ sub: `sub-${email}`, email, email_verified: true });
const hoursAgo = (hours: number) => new Date(Date.now() - hours * 3_600_000).toISOString();

async function staffKey(care: "none" | "read" | "write", scopes: string[]): Promise<string> {
  const user = await tenant.addUser("staff", { withKey: false });
  if (care !== "none") {
    expect((await call(app, "PATCH", `/api/v1/users/${user.userId}`, { ...who.admin, body: { care_access: care } })).status).toBe(
      200,
    );
  }
  const issued = await call(app, "POST", "/api/v1/api-keys/generate", { ...who.admin, body: { email: user.email, scopes } });
  expect(issued.status).toBe(201);
  return issued.body.data.key;
}

async function newParticipant(): Promise<string> {
  const created = await call(app, "POST", "/api/v1/participants", {
    ...who.admin,
    body: { instance_id: instanceId, user_id: `u-${randomBytes(4).toString("hex")}`, first_name: "Ada", surname: "Lovelace" },
  });
  expect(created.status).toBe(201);
  return created.body.data.id;
}

async function newMedication(participant: string, body: unknown): Promise<string> {
  const created = await call(app, "POST", `/api/v1/participants/${participant}/medications`, { ...who.writer, body });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body.data.id;
}

const chart = (participant: string, body: unknown, as: CallOptions = who.writer) =>
  call(app, "POST", `/api/v1/participants/${participant}/medication-administrations`, { ...as, body });

beforeAll(async () => {
  app = testApp(t().db);
  tenant = await newTenant(t().db);
  other = await newTenant(t().db);
  instanceId = await addInstance(t(), tenant.tenantId);
  await t().admin("update instances set time_zone = 'Europe/London' where id = $1", [instanceId]);
  who.admin = { token: await bearerOf(tenant.admin.email) };
  who.otherAdmin = { token: await bearerOf(other.admin.email) };
  who.writer = { key: await staffKey("write", ["read", "write", "care"]) };
  who.reader = { key: await staffKey("read", ["read", "care"]) };
  who.noAccess = { key: await staffKey("none", ["read", "write", "care"]) };
});

describe("charting", () => {
  it("charts a scheduled dose against its due time, by the caller, with the medication's name and dose", async () => {
    const participant = await newParticipant();
    const medication = await newMedication(participant, { name: "Insulin", dose: "4 units", times: ["08:00", "20:00"] });
    // 08:10 London time in July is 07:10 UTC: it charts the 08:00 dose.
    const given = await chart(participant, {
      medication_id: medication,
      outcome: "given",
      administered_at: "2026-07-14T07:10:00Z",
    });
    expect(given.status, JSON.stringify(given.body)).toBe(201);
    expect(given.headers.get("location")).toContain(`/medication-administrations/${given.body.data.id}`);
    expect(given.body.data).toMatchObject({
      participant_id: participant,
      medication_id: medication,
      medication_name: "Insulin",
      outcome: "given",
      administered_at: "2026-07-14T07:10:00.000Z",
      due_at: "2026-07-14T07:00:00.000Z",
      dose_given: "4 units",
      amends: null,
      current: true,
      amended_by: [],
    });
    expect(given.body.data.recorded_by).toBeTruthy();
    const refused = await chart(participant, {
      medication_id: medication,
      outcome: "refused",
      administered_at: "2026-07-14T19:05:00Z",
      notes: "spat it out",
    });
    expect(refused.status).toBe(201);
    expect(refused.body.data).toMatchObject({ outcome: "refused", due_at: "2026-07-14T19:00:00.000Z", dose_given: null });
    for (const [body, field] of [
      [{ outcome: "given" }, "medication_id"],
      [{ medication_id: medication, outcome: "spilled" }, "outcome"],
      [{ medication_id: medication, outcome: "given", administered_at: "yesterday" }, "administered_at"],
      [{ medication_id: medication, outcome: "given", administered_at: hoursAgo(-2) }, "administered_at"],
      [{ medication_id: medication, outcome: "given", due_at: "2026-07-14T08:30:00Z" }, "due_at"],
      [{ medication_id: medication, outcome: "given", reason: "x" }, "reason"],
      [{ medication_id: participant, outcome: "given" }, "medication_id"],
      [{ medication_id: medication, outcome: "given", colour: "blue" }, "colour"],
    ] as Array<[unknown, string]>) {
      const answer = await chart(participant, body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(JSON.stringify(answer.body.error.details), JSON.stringify(body)).toContain(field);
    }
  });

  it("keeps a correction beside the entry it amends, which stays readable", async () => {
    const participant = await newParticipant();
    const medication = await newMedication(participant, { name: "Ritalin", dose: "10 mg", times: ["12:00"] });
    const wrong = await chart(participant, {
      medication_id: medication,
      outcome: "given",
      administered_at: "2026-07-14T11:00:00Z",
    });
    const later = await chart(participant, {
      medication_id: medication,
      outcome: "given",
      administered_at: "2026-07-15T11:00:00Z",
    });
    const fixed = await chart(participant, {
      amends: wrong.body.data.id,
      outcome: "refused",
      reason: "charted on the wrong child's sheet",
    });
    expect(fixed.status, JSON.stringify(fixed.body)).toBe(201);
    expect(fixed.body.data).toMatchObject({
      amends: wrong.body.data.id,
      outcome: "refused",
      medication_id: medication,
      administered_at: "2026-07-14T11:00:00.000Z",
      due_at: "2026-07-14T11:00:00.000Z",
      reason: "charted on the wrong child's sheet",
    });
    expect((await chart(participant, { amends: wrong.body.data.id, outcome: "refused" })).status).toBe(400);
    const listed = await call(app, "GET", `/api/v1/participants/${participant}/medication-administrations`, who.reader);
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((e: { id: string; current: boolean }) => [e.id, e.current])).toEqual([
      [wrong.body.data.id, false],
      [fixed.body.data.id, true],
      [later.body.data.id, true],
    ]);
    expect(listed.body.data[0]).toMatchObject({ outcome: "given", amended_by: [fixed.body.data.id] });
    const original = await call(
      app,
      "GET",
      `/api/v1/participants/${participant}/medication-administrations/${wrong.body.data.id}`,
      who.reader,
    );
    expect(original.status).toBe(200);
    expect(original.body.data).toMatchObject({ outcome: "given", current: false });
  });

  it("cannot change or remove an entry over HTTP: PUT, PATCH and DELETE are 405", async () => {
    const participant = await newParticipant();
    const medication = await newMedication(participant, { name: "Calpol", prn: true });
    const entry = await chart(participant, { medication_id: medication, outcome: "given" });
    const path = `/api/v1/participants/${participant}/medication-administrations/${entry.body.data.id}`;
    for (const method of ["PUT", "PATCH", "DELETE"]) {
      const answer = await call(app, method, path, {
        ...who.admin,
        body: method === "DELETE" ? undefined : { outcome: "refused" },
      });
      expect(`${method} ${answer.status} ${answer.body.error.code}`).toBe(`${method} 405 METHOD_NOT_ALLOWED`);
    }
    const still = await call(app, "GET", path, who.admin);
    expect(still.body.data).toMatchObject({ outcome: "given", current: true });
  });

  it("answers a nonce seen before with the entry stored then (200), charting once", async () => {
    const participant = await newParticipant();
    const medication = await newMedication(participant, { name: "Vitamin D", times: ["09:00"] });
    const body = { medication_id: medication, outcome: "given", administered_at: "2026-07-14T08:01:00Z", nonce: "tablet-7:42" };
    const first = await chart(participant, body);
    const again = await chart(participant, body);
    expect([first.status, again.status]).toEqual([201, 200]);
    expect(again.body.data.id).toBe(first.body.data.id);
    const concurrent = await Promise.all([1, 2, 3].map(() => chart(participant, { ...body, nonce: "tablet-7:43" })));
    expect(concurrent.map((r) => r.status).sort()).toEqual([200, 200, 201]);
    expect(new Set(concurrent.map((r) => r.body.data.id)).size).toBe(1);
    const listed = await call(app, "GET", `/api/v1/participants/${participant}/medication-administrations`, who.reader);
    expect(listed.body.meta.total).toBe(2);
    // Another participant's nonce is not this one's entry.
    const second = await newParticipant();
    const secondMedication = await newMedication(second, { name: "Vitamin D", times: ["09:00"] });
    expect((await chart(second, { ...body, medication_id: secondMedication })).status).toBe(409);
  });
});

describe("as-needed limits", () => {
  it("refuse a dose within min_interval_hours (409 naming the last dose) unless overridden, and the override is on the record", async () => {
    const participant = await newParticipant();
    const medication = await newMedication(participant, { name: "Ibuprofen", dose: "200 mg", prn: true, min_interval_hours: 6 });
    const first = await chart(participant, { medication_id: medication, outcome: "given", administered_at: hoursAgo(4) });
    expect(first.status).toBe(201);
    const tooSoon = await chart(participant, { medication_id: medication, outcome: "given" });
    expect(tooSoon.status).toBe(409);
    expect(tooSoon.body.error.code).toBe("CONFLICT");
    expect(tooSoon.body.error.details).toEqual([
      expect.objectContaining({
        field: "medication_id",
        entry_id: first.body.data.id,
        administered_at: first.body.data.administered_at,
      }),
    ]);
    // A refusal is no dose: it is charted whatever the limits.
    expect((await chart(participant, { medication_id: medication, outcome: "refused" })).status).toBe(201);
    const overridden = await chart(participant, {
      medication_id: medication,
      outcome: "given",
      override_reason: "fever 39.5, doctor advised by phone",
    });
    expect(overridden.status).toBe(201);
    expect(overridden.body.data.override_reason).toBe("fever 39.5, doctor advised by phone");
    // A reader cannot chart at all, override or not.
    expect(
      (await chart(participant, { medication_id: medication, outcome: "given", override_reason: "x" }, who.reader)).status,
    ).toBe(403);
  });

  it("refuse a dose past max_doses_per_24h, counting only doses that stand", async () => {
    const participant = await newParticipant();
    const medication = await newMedication(participant, { name: "Salbutamol", prn: true, max_doses_per_24h: 2 });
    const a = await chart(participant, { medication_id: medication, outcome: "given", administered_at: hoursAgo(20) });
    await chart(participant, { medication_id: medication, outcome: "given", administered_at: hoursAgo(10) });
    const third = await chart(participant, { medication_id: medication, outcome: "given" });
    expect(third.status).toBe(409);
    expect(third.body.error.details).toHaveLength(2);
    // The first dose was charted in error: corrected to not given, it no longer counts.
    expect((await chart(participant, { amends: a.body.data.id, outcome: "missed", reason: "wrong child" })).status).toBe(201);
    expect((await chart(participant, { medication_id: medication, outcome: "given" })).status).toBe(201);
    // A dose 25 hours ago is outside the window.
    const older = await newMedication(participant, { name: "Cetirizine", prn: true, max_doses_per_24h: 1 });
    expect((await chart(participant, { medication_id: older, outcome: "given", administered_at: hoursAgo(25) })).status).toBe(
      201,
    );
    expect((await chart(participant, { medication_id: older, outcome: "given" })).status).toBe(201);
  });

  it("hold under concurrent charting: of five doses at once, one is given", async () => {
    const participant = await newParticipant();
    const medication = await newMedication(participant, {
      name: "Paracetamol",
      prn: true,
      min_interval_hours: 4,
      max_doses_per_24h: 4,
    });
    const answers = await Promise.all(
      [1, 2, 3, 4, 5].map(() => chart(participant, { medication_id: medication, outcome: "given" })),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([201, 409, 409, 409, 409]);
  });
});

describe("as-needed limits between two open transactions", () => {
  it("make the second chart wait for the first and then refuse it (the medication's row is locked)", async () => {
    const participant = await newParticipant();
    const medication = await newMedication(participant, { name: "Codeine", prn: true, min_interval_hours: 4 });
    const claims = JSON.stringify({ tenant_id: tenant.tenantId, sub: tenant.admin.userId, via: "bearer" });
    const open = async () => {
      const client = await t().db.pool.connect();
      await client.query("begin");
      await client.query("select set_config('role', 'camp_api', true), set_config('request.jwt.claims', $1, true)", [claims]);
      return client;
    };
    const chartIn = (client: pg.PoolClient) =>
      client.query("select private.medication_administration_create($1, $2)", [
        participant,
        JSON.stringify({ medication_id: medication, outcome: "given" }),
      ]);
    const first = await open();
    const second = await open();
    try {
      await chartIn(first);
      let settled = false;
      const racing = chartIn(second).then(
        () => "charted",
        (error: { code?: string }) => error.code ?? "?",
      );
      void racing.then(() => {
        settled = true;
      });
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(settled).toBe(false);
      await first.query("commit");
      expect(await racing).toBe("CA409");
    } finally {
      for (const client of [first, second]) {
        await client.query("rollback").catch(() => {});
        client.release();
      }
    }
  });
});

describe("need to know", () => {
  it("403 without care access, 404 in another tenant, on every route; every read is audited", async () => {
    const participant = await newParticipant();
    const medication = await newMedication(participant, { name: "Melatonin", times: ["21:00"] });
    const entry = await chart(participant, { medication_id: medication, outcome: "given" });
    const base = `/api/v1/participants/${participant}/medication-administrations`;
    const routes: Array<[string, string, unknown?]> = [
      ["GET", base],
      ["GET", `${base}/${entry.body.data.id}`],
      ["POST", base, { medication_id: medication, outcome: "held" }],
    ];
    const before = await t().admin(
      "select count(*)::int as n from audit_events where action = 'read' and resource_type = 'medication_administrations' and resource_id = $1",
      [participant],
    );
    for (const [method, path, body] of routes) {
      expect((await call(app, method, path, { ...who.noAccess, body })).status, `${method} ${path}`).toBe(403);
      expect((await call(app, method, path, { ...who.otherAdmin, body })).status, `${method} ${path}`).toBe(404);
      expect((await call(app, method, path, { ...who.reader, body })).status, `${method} ${path}`).toBe(
        method === "GET" ? 200 : 403,
      );
    }
    const after = await t().admin(
      "select count(*)::int as n from audit_events where action = 'read' and resource_type = 'medication_administrations' and resource_id = $1",
      [participant],
    );
    expect(after.rows[0].n - before.rows[0].n).toBe(2);
    // An entry of another participant is not found under this one.
    const second = await newParticipant();
    expect(
      (await call(app, "GET", `/api/v1/participants/${second}/medication-administrations/${entry.body.data.id}`, who.admin))
        .status,
    ).toBe(404);
  });
});

describe("append-only, held by the database", () => {
  async function as<T>(role: string, claims: object, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await t().db.pool.connect();
    try {
      await client.query("begin");
      await client.query(`set local role ${role}`);
      await client.query("select set_config('request.jwt.claims', $1, true)", [JSON.stringify(claims)]);
      return await work(client);
    } finally {
      await client.query("rollback");
      client.release();
    }
  }
  const sqlState = async (role: string, claims: object, text: string) =>
    as(role, claims, async (client) => {
      try {
        await client.query(text);
        return "ok";
      } catch (error) {
        return (error as { code?: string }).code ?? "?";
      }
    });

  it("the API role and the doors' role can neither update nor delete an entry; the owner is refused by the trigger", async () => {
    const participant = await newParticipant();
    const medication = await newMedication(participant, { name: "Amoxicillin", times: ["08:00"] });
    const entry = (await chart(participant, { medication_id: medication, outcome: "given" })).body.data.id;
    const claims = { tenant_id: tenant.tenantId, sub: tenant.admin.userId, via: "bearer" };
    for (const role of ["camp_api", "camp_care"]) {
      for (const text of [
        `update public.medication_administrations set outcome = 'refused' where id = '${entry}'`,
        `delete from public.medication_administrations where id = '${entry}'`,
        "truncate public.medication_administrations",
      ]) {
        const state = await sqlState(role, claims, text);
        expect(`${role}: ${text}: ${state}`).toBe(`${role}: ${text}: 42501`);
      }
    }
    // Setting the rewrite flag does not give camp_api a privilege it lacks.
    expect(
      await as("camp_api", claims, async (client) => {
        await client.query("select set_config('camp.health_rewrite', 'on', true)");
        try {
          await client.query(`delete from public.medication_administrations where id = '${entry}'`);
          return "ok";
        } catch (error) {
          return (error as { code: string }).code;
        }
      }),
    ).toBe("42501");
    await expect(t().admin("update medication_administrations set outcome = 'refused' where id = $1", [entry])).rejects.toThrow(
      /append-only/,
    );
    await expect(t().admin("delete from medication_administrations where id = $1", [entry])).rejects.toThrow(/append-only/);
    const stored = await t().admin("select outcome from medication_administrations where id = $1", [entry]);
    expect(stored.rows).toEqual([{ outcome: "given" }]);
  });

  it("erasure (no retention set) removes the participant's entries and medications", async () => {
    const participant = await newParticipant();
    const medication = await newMedication(participant, { name: "Zyrtec", prn: true });
    const entry = await chart(participant, { medication_id: medication, outcome: "given", notes: "after lunch" });
    await chart(participant, { amends: entry.body.data.id, outcome: "held", reason: "nurse held it" });
    expect((await call(app, "POST", `/api/v1/participants/${participant}/erase`, who.admin)).status).toBe(200);
    const left = await t().admin(
      "select (select count(*) from medication_administrations where participant_id = $1)::int as entries, (select count(*) from participant_medications where participant_id = $1)::int as meds",
      [participant],
    );
    expect(left.rows[0]).toEqual({ entries: 0, meds: 0 });
    expect((await chart(participant, { medication_id: medication, outcome: "given" })).status).toBe(404);
  });
});
