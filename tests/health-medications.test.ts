import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { MIGRATIONS_DIR, migrate } from "../node/migrate.ts";
import { addInstance } from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { type CallOptions, call, newTenant, signToken, type TestApp, type TestTenant, testApp } from "./support/fixtures.ts";
import { databaseUrl } from "./support/urls.ts";

/**
 * Health centre, part 1: instances carry an IANA time zone; a participant's
 * medications are records behind the care gate (403 without care access, 404
 * across tenants, reads on the record); the care record lists them as before,
 * read-only; and the care records' old medication lists migrate into records.
 */

const t = useTestDatabase();

let app: TestApp;
let tenant: TestTenant;
let other: TestTenant;
let instanceId: string;
const who: Record<"admin" | "writer" | "reader" | "noAccess" | "otherAdmin", CallOptions> = {} as never;

const bearerOf = (email: string) => signToken({ sub: `sub-${email}`, email, email_verified: true });

async function staffKey(care: "none" | "read" | "write", scopes: string[]): Promise<string> {
  const user = await tenant.addUser("staff", { withKey: false });
  if (care !== "none") {
    const changed = await call(app, "PATCH", `/api/v1/users/${user.userId}`, { ...who.admin, body: { care_access: care } });
    expect(changed.status).toBe(200);
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

beforeAll(async () => {
  app = testApp(t().db);
  tenant = await newTenant(t().db);
  other = await newTenant(t().db);
  instanceId = await addInstance(t(), tenant.tenantId);
  who.admin = { token: await bearerOf(tenant.admin.email) };
  who.otherAdmin = { token: await bearerOf(other.admin.email) };
  who.writer = { key: await staffKey("write", ["read", "write", "care"]) };
  who.reader = { key: await staffKey("read", ["read", "care"]) };
  who.noAccess = { key: await staffKey("none", ["read", "write", "care"]) };
});

describe("instances' time zone", () => {
  it("defaults to UTC, takes an IANA zone and refuses anything else naming time_zone", async () => {
    const created = await call(app, "POST", "/api/v1/instances", { ...who.admin, body: { name: "Zoned" } });
    expect(created.status).toBe(201);
    expect(created.body.data.time_zone).toBe("UTC");
    const path = `/api/v1/instances/${created.body.data.id}`;
    const changed = await call(app, "PATCH", path, { ...who.admin, body: { time_zone: "America/New_York" } });
    expect(changed.status).toBe(200);
    expect(changed.body.data.time_zone).toBe("America/New_York");
    for (const bad of ["Mars/Olympus_Mons", "EST", "UTC+3", "", "Europe/London\n"]) {
      const refused = await call(app, "PATCH", path, { ...who.admin, body: { time_zone: bad } });
      expect(refused.status, bad).toBe(400);
      expect(JSON.stringify(refused.body.error.details), bad).toContain("time_zone");
    }
    // The database holds the rule too: a zone written by SQL as the owner is checked.
    await expect(
      t().admin("update instances set time_zone = 'Mars/Olympus_Mons' where id = $1", [created.body.data.id]),
    ).rejects.toThrow(/IANA/);
    expect((await call(app, "GET", path, who.admin)).body.data.time_zone).toBe("America/New_York");
  });
});

describe("medications", () => {
  it("are created, read, changed and deleted, with schedules checked", async () => {
    const participant = await newParticipant();
    const base = `/api/v1/participants/${participant}/medications`;
    const created = await call(app, "POST", base, {
      ...who.writer,
      body: { name: "Amoxicillin", dose: "250 mg", route: "oral", times: ["20:00", "08:00", "08:00"], start_date: "2026-07-01" },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.headers.get("location")).toBe(`./medications/${created.body.data.id}`);
    expect(created.body.data).toMatchObject({
      participant_id: participant,
      name: "Amoxicillin",
      dose: "250 mg",
      route: "oral",
      times: ["08:00", "20:00"],
      prn: false,
      min_interval_hours: null,
      max_doses_per_24h: null,
      start_date: "2026-07-01",
      end_date: null,
      deleted_at: null,
    });
    const prn = await call(app, "POST", base, {
      ...who.writer,
      body: { name: "Paracetamol", dose: "500 mg", prn: true, min_interval_hours: 4, max_doses_per_24h: 4 },
    });
    expect(prn.status).toBe(201);
    expect(prn.body.data).toMatchObject({ prn: true, times: null, min_interval_hours: 4, max_doses_per_24h: 4 });

    const bad: Array<[unknown, string]> = [
      [{ name: "X", times: ["8:00"] }, "times"],
      [{ name: "X", times: ["24:00"] }, "times"],
      [{ name: "X", times: [] }, "times"],
      [{ name: "X", prn: true, times: ["08:00"] }, "times"],
      [{ name: "X", min_interval_hours: 4 }, "min_interval_hours"],
      [{ name: "X", prn: true, max_doses_per_24h: 0 }, "max_doses_per_24h"],
      [{ name: "X", start_date: "2026-07-02", end_date: "2026-07-01" }, "end_date"],
      [{ name: "" }, "name"],
      [{ name: "X", colour: "red" }, "colour"],
    ];
    for (const [body, field] of bad) {
      const answer = await call(app, "POST", base, { ...who.writer, body });
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(JSON.stringify(answer.body.error), JSON.stringify(body)).toContain(field);
    }

    const one = `${base}/${created.body.data.id}`;
    const read = await call(app, "GET", one, who.reader);
    expect(read.status).toBe(200);
    const etag = read.headers.get("etag") as string;
    expect(etag).toBeTruthy();
    expect((await call(app, "GET", one, { ...who.reader, headers: { "If-None-Match": etag } })).status).toBe(304);
    const patched = await call(app, "PATCH", one, { ...who.writer, body: { times: ["09:00"] }, headers: { "If-Match": etag } });
    expect(patched.status).toBe(200);
    expect(patched.body.data.times).toEqual(["09:00"]);
    expect((await call(app, "PATCH", one, { ...who.writer, body: { dose: "1" }, headers: { "If-Match": etag } })).status).toBe(
      412,
    );
    // Turning a scheduled medication into an as-needed one without clearing its times breaks the database's rule.
    const mixed = await call(app, "PATCH", one, { ...who.writer, body: { prn: true } });
    expect(mixed.status).toBe(400);
    const switched = await call(app, "PATCH", one, { ...who.writer, body: { prn: true, times: null, min_interval_hours: 6 } });
    expect(switched.status).toBe(200);
    expect(switched.body.data).toMatchObject({ prn: true, times: null, min_interval_hours: 6 });

    const listed = await call(app, "GET", base, who.reader);
    expect(listed.status).toBe(200);
    expect(listed.body.meta).toEqual({ total: 2, limit: 100, offset: 0 });
    expect(listed.body.data.map((m: { name: string }) => m.name)).toEqual(["Amoxicillin", "Paracetamol"]);

    expect((await call(app, "DELETE", one, who.writer)).status).toBe(200);
    expect((await call(app, "GET", one, who.writer)).status).toBe(404);
    const withDeleted = await call(app, "GET", `${base}?include_deleted=true`, who.reader);
    expect(withDeleted.body.data).toHaveLength(2);
    expect((await call(app, "GET", base, who.reader)).body.data).toHaveLength(1);
  });

  it("are care data: 403 without care access, reads only for a reader, 404 for another tenant, every read audited", async () => {
    const participant = await newParticipant();
    const base = `/api/v1/participants/${participant}/medications`;
    const created = await call(app, "POST", base, { ...who.writer, body: { name: "Ventolin", prn: true } });
    const one = `${base}/${created.body.data.id}`;
    const routes: Array<[string, string, unknown?]> = [
      ["GET", base],
      ["POST", base, { name: "Cetirizine" }],
      ["GET", one],
      ["PATCH", one, { dose: "2 puffs" }],
      ["DELETE", one],
    ];
    for (const [method, path, body] of routes) {
      const none = await call(app, method, path, { ...who.noAccess, body });
      expect(`${method} ${path} ${none.status}`).toBe(`${method} ${path} 403`);
      const reader = await call(app, method, path, { ...who.reader, body });
      expect(`${method} ${path} ${reader.status}`).toBe(`${method} ${path} ${method === "GET" ? 200 : 403}`);
      const otherTenant = await call(app, method, path, { ...who.otherAdmin, body });
      expect(`${method} ${path} ${otherTenant.status}`).toBe(`${method} ${path} 404`);
    }
    const reads = await t().admin(
      "select count(*)::int as n from audit_events where action = 'read' and resource_type = 'medications' and resource_id = $1",
      [participant],
    );
    expect(reads.rows[0].n).toBe(2);
    expect((await call(app, "GET", `/api/v1/participants/${participant}/medications/nope`, who.writer)).status).toBe(404);
  });

  it("are what the care record lists, read-only there", async () => {
    const participant = await newParticipant();
    await call(app, "POST", `/api/v1/participants/${participant}/medications`, {
      ...who.writer,
      body: { name: "Insulin", dose: "4 units", times: ["07:30", "18:00"] },
    });
    await call(app, "POST", `/api/v1/participants/${participant}/medications`, {
      ...who.writer,
      body: { name: "EpiPen", dose: "0.3 mg", prn: true },
    });
    const care = await call(app, "GET", `/api/v1/participants/${participant}/care`, who.reader);
    expect(care.status).toBe(200);
    expect(care.body.data.medications.map(({ id: _, ...rest }: { id: string }) => rest)).toEqual([
      { name: "Insulin", dose: "4 units", schedule: "07:30, 18:00" },
      { name: "EpiPen", dose: "0.3 mg", schedule: "as needed" },
    ]);
    // Sent back as read: ignored. A new item: 400, saying where medications went.
    const echoed = await call(app, "PUT", `/api/v1/participants/${participant}/care`, {
      ...who.writer,
      body: { care_notes: "diabetic", medications: care.body.data.medications },
    });
    expect(echoed.status).toBe(200);
    expect(echoed.body.data.medications).toHaveLength(2);
    const added = await call(app, "PATCH", `/api/v1/participants/${participant}/care`, {
      ...who.writer,
      body: { medications: [{ name: "Aspirin" }] },
    });
    expect(added.status).toBe(400);
    expect(added.body.error.message).toContain("/medications");
  });
});

describe("the migration of care records' medications", () => {
  it("turns each {name, dose, schedule} into a record, the schedule text kept as instructions", async () => {
    const adminUrl = inject("adminUrl");
    const name = `camp_test_${process.ppid}_${randomBytes(4).toString("hex")}_meds`;
    const before = mkdtempSync(join(tmpdir(), "camp-migrations-"));
    const server = new pg.Client({ connectionString: adminUrl });
    await server.connect();
    try {
      await server.query(`create database ${name}`);
      for (const file of readdirSync(MIGRATIONS_DIR).filter((f) => f < "20261128040000")) {
        symlinkSync(join(MIGRATIONS_DIR, file), join(before, file));
      }
      const url = databaseUrl(adminUrl, name);
      await migrate(url, () => {}, before);
      const db = new pg.Client({ connectionString: url });
      await db.connect();
      try {
        const tenantId = (await db.query("insert into tenants (name) values ('Old') returning id")).rows[0].id;
        const instance = (await db.query("insert into instances (tenant_id, name) values ($1, 'C') returning id", [tenantId]))
          .rows[0].id;
        const participant = (
          await db.query(
            "insert into participants (tenant_id, instance_id, user_id, first_name, surname) values ($1, $2, 'u', 'A', 'B') returning id",
            [tenantId, instance],
          )
        ).rows[0].id;
        await db.query(
          `insert into participant_care (tenant_id, id, medications) values ($1, $2,
             '[{"name": "Ritalin", "dose": "10 mg", "schedule": "with breakfast"}, {"name": "Calpol"}]')`,
          [tenantId, participant],
        );
        await migrate(url);
        const moved = await db.query(
          "select name, dose, instructions, times, prn from participant_medications where participant_id = $1 order by created_at",
          [participant],
        );
        expect(moved.rows).toEqual([
          { name: "Ritalin", dose: "10 mg", instructions: "with breakfast", times: null, prn: false },
          { name: "Calpol", dose: null, instructions: null, times: null, prn: false },
        ]);
        const column = await db.query(
          "select 1 from information_schema.columns where table_schema = 'public' and table_name = 'participant_care' and column_name = 'medications'",
        );
        expect(column.rowCount).toBe(0);
      } finally {
        await db.end();
      }
    } finally {
      await server.query(`drop database if exists ${name} with (force)`);
      await server.end();
      rmSync(before, { recursive: true, force: true });
    }
  }, 120_000);
});
