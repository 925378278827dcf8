import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sweepRetainedHealthRecords } from "../functions/medications/sweep.ts";
import { connectionDetails, grantReportingRole, revokeReportingRole } from "../functions/reporting/roles.ts";
import { addInstance } from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { type CallOptions, call, newTenant, signToken, type TestApp, type TestTenant, testApp } from "./support/fixtures.ts";
import { run } from "./support/processes.ts";

/**
 * Health centre, part 5: erasure and retention. Without a retention period
 * erasure removes a child's medications and administration record with the
 * rest; with one, it removes the child and every other record and keeps the
 * administration entries detached from any name (no participant, medication,
 * nonce, notes or reasons) until the period ends, when the sweep deletes
 * them. Each erasure is checked on a full data dump (pg_dump --data-only),
 * as tests/erasure-footprint.test.ts does for the rest of a child's data.
 * The record's reporting view (reporting.medication_administrations) is for
 * roles granted --care only, and shows kept entries without a participant.
 */

const t = useTestDatabase();
const tag = randomBytes(3).toString("hex");
const mark = (what: string) => `${what}${tag}`;

let app: TestApp;
let tenant: TestTenant;
let instanceId: string;
let admin: CallOptions;

async function dump(): Promise<string> {
  const result = await run("pg_dump", ["--data-only", "--no-owner", t().url], {});
  expect(result.code, result.stderr).toBe(0);
  return result.stdout;
}

/** The rows of one table in a data dump (its COPY block). */
function rowsOf(text: string, table: string): string {
  const start = text.indexOf(`COPY public.${table} `);
  expect(start).toBeGreaterThanOrEqual(0);
  return text.slice(start, text.indexOf("\n\\.\n", start));
}

const found = (text: string, marks: string[]) => marks.filter((m) => text.includes(m));

async function setRetention(days: number | null): Promise<void> {
  const changed = await call(app, "PATCH", "/api/v1/tenant/settings", { ...admin, body: { health_retention_days: days } });
  expect(changed.status, JSON.stringify(changed.body)).toBe(200);
  expect(changed.body.data.health_retention_days).toBe(days);
}

/**
 * A child with care data, two medications and every kind of entry: a dose
 * with notes and a nonce, its correction with a reason, and an as-needed dose
 * given too soon with an override reason. Answers the child, the entries'
 * ids and the text that names the child.
 */
async function childWithRecord(label: string) {
  const marks = {
    surname: mark(`Quill${label}`),
    notes: mark(`SaidHisTummyHurt${label}`),
    nonce: mark(`tablet-7-${label}-`),
    reason: mark(`WrongChildCharted${label}`),
    override: mark(`DoctorSaidSo${label}`),
    instructions: mark(`WithBreakfast${label}`),
    care: mark(`CareNote${label}`),
  };
  const created = await call(app, "POST", "/api/v1/participants", {
    ...admin,
    body: { instance_id: instanceId, user_id: mark(`u-${label}`), first_name: "Zephyrine", surname: marks.surname },
  });
  expect(created.status).toBe(201);
  const id: string = created.body.data.id;
  const put = await call(app, "PUT", `/api/v1/participants/${id}/care`, { ...admin, body: { care_notes: marks.care } });
  expect(put.status, JSON.stringify(put.body)).toBe(200);
  const medication = async (body: Record<string, unknown>) => {
    const made = await call(app, "POST", `/api/v1/participants/${id}/medications`, { ...admin, body });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    return made.body.data.id as string;
  };
  const insulin = await medication({ name: "Insulin", dose: "4 units", times: ["08:00"], instructions: marks.instructions });
  const inhaler = await medication({ name: "Salbutamol", dose: "2 puffs", prn: true, min_interval_hours: 4 });
  const chart = async (body: Record<string, unknown>) => {
    const charted = await call(app, "POST", `/api/v1/participants/${id}/medication-administrations`, { ...admin, body });
    expect(charted.status, JSON.stringify(charted.body)).toBe(201);
    return charted.body.data.id as string;
  };
  const at = (hoursAgo: number) => new Date(Date.now() - hoursAgo * 3_600_000).toISOString();
  const given = await chart({
    medication_id: insulin,
    outcome: "given",
    administered_at: at(3),
    notes: marks.notes,
    nonce: marks.nonce,
  });
  const corrected = await chart({ amends: given, outcome: "refused", reason: marks.reason });
  const puff = await chart({ medication_id: inhaler, outcome: "given", administered_at: at(2) });
  const tooSoon = await chart({
    medication_id: inhaler,
    outcome: "given",
    administered_at: at(1),
    override_reason: marks.override,
  });
  return { id, entries: [given, corrected, puff, tooSoon], marks: Object.values(marks) };
}

const erase = (id: string) => call(app, "POST", `/api/v1/participants/${id}/erase`, admin);

beforeAll(async () => {
  app = testApp(t().db);
  tenant = await newTenant(t().db);
  instanceId = await addInstance(t(), tenant.tenantId);
  admin = { token: await signToken({ sub: `sub-${tenant.admin.email}`, email: tenant.admin.email, email_verified: true }) };
});

describe("the retention setting", () => {
  it("is none by default, set by admins only, from 1 day to 100 years or null, in the tenant alone and its audit trail", async () => {
    const other = await newTenant(t().db);
    const settings = (key: string) => call(app, "GET", "/api/v1/tenant/settings", { key });
    expect((await settings(tenant.admin.key)).body.data.health_retention_days).toBeNull();
    const staff = (await tenant.addUser("staff")).key as string;
    const refused = await call(app, "PATCH", "/api/v1/tenant/settings", { key: staff, body: { health_retention_days: 30 } });
    expect(refused.status).toBe(403);
    for (const bad of [0, 36_501, 1.5, "30"]) {
      const invalid = await call(app, "PATCH", "/api/v1/tenant/settings", { ...admin, body: { health_retention_days: bad } });
      expect(`${bad}: ${invalid.status} ${invalid.body.error?.details?.[0]?.field}`).toBe(`${bad}: 400 health_retention_days`);
    }
    await setRetention(2555);
    // Another setting changed alone leaves it as it is; null ends it.
    const other24 = await call(app, "PATCH", "/api/v1/tenant/settings", { ...admin, body: { incident_notice_hours: 24 } });
    expect(other24.body.data.health_retention_days).toBe(2555);
    expect((await settings(staff)).body.data.health_retention_days).toBe(2555);
    expect((await settings(other.admin.key)).body.data.health_retention_days).toBeNull();
    const trail = await call(app, "GET", "/api/v1/audit-events?resource_type=tenant", admin);
    expect(trail.status, JSON.stringify(trail.body)).toBe(200);
    expect(trail.body.data.some((e: { changes: Record<string, unknown> }) => "health_retention_days" in e.changes)).toBe(true);
    await setRetention(null);
  });
});

describe("erasure of health records", () => {
  it("without a retention period removes the medications and the administration record with the rest", async () => {
    await setRetention(null);
    const child = await childWithRecord("None");
    expect(found(await dump(), child.marks).sort()).toEqual([...child.marks].sort());

    const erased = await erase(child.id);
    expect(erased.status, JSON.stringify(erased.body)).toBe(200);
    expect(erased.body.data).toEqual({ id: child.id, retained: [] });
    expect(erased.body.message).toBe("participant erased");

    const after = await dump();
    expect(found(after, child.marks)).toEqual([]);
    expect(found(rowsOf(after, "medication_administrations"), child.entries)).toEqual([]);
    const left = await t().admin(
      "select (select count(*) from medication_administrations where id = any ($1))::int as entries, (select count(*) from participant_medications where participant_id = $2)::int as medications",
      [child.entries, child.id],
    );
    expect(left.rows[0]).toEqual({ entries: 0, medications: 0 });
  });

  it("with one keeps the entries and the child's incident detached from any name until it ends, and says so", async () => {
    await setRetention(3650);
    const child = await childWithRecord("Kept");
    const surname = child.marks[0] as string;
    const reported = await call(app, "POST", "/api/v1/incidents", {
      ...admin,
      body: {
        instance_id: instanceId,
        occurred_at: new Date(Date.now() - 3_600_000).toISOString(),
        location: "Pool",
        category: "injury",
        severity: "minor",
        participant_ids: [child.id],
        description: `Zephyrine ${surname} slipped by the pool`,
        actions_taken: `Cleaned ${surname}'s knee`,
      },
    });
    expect(reported.status, JSON.stringify(reported.body)).toBe(201);
    const before = Date.now();
    const erased = await erase(child.id);
    expect(erased.status, JSON.stringify(erased.body)).toBe(200);
    const [kept, incident] = erased.body.data.retained;
    expect(erased.body.data.retained).toHaveLength(2);
    expect(kept).toMatchObject({ record: "medication_administrations", count: 4 });
    expect(incident).toEqual({ record: "incidents", count: 1, retained_until: kept.retained_until });
    const incidents = await t().admin(
      "select retained_until, description, (select count(*)::int from incident_participants l where l.incident_id = i.id) as links from incidents i where id = $1",
      [reported.body.data.id],
    );
    expect(incidents.rows).toEqual([
      { retained_until: new Date(kept.retained_until), description: "[erased] slipped by the pool", links: 0 },
    ]);
    const until = Date.parse(kept.retained_until);
    expect(until).toBeGreaterThanOrEqual(before + 3650 * 86_400_000 - 60_000);
    expect(until).toBeLessThanOrEqual(Date.now() + 3650 * 86_400_000 + 60_000);
    expect(erased.body.message).toBe(
      `participant erased; 4 medication administrations kept until ${kept.retained_until}; 1 incident kept until ${kept.retained_until}`,
    );

    // The dump holds none of the child's text, and the kept entries point at nothing of the child.
    const after = await dump();
    expect(found(after, child.marks)).toEqual([]);
    const entries = rowsOf(after, "medication_administrations");
    expect(entries).not.toContain(child.id);
    expect(entries).toContain("Insulin");
    const stored = await t().admin(
      `select participant_id, medication_id, medication_name, outcome, dose_given, notes, nonce, reason, override_reason,
              amends is not null as corrects, recorded_by is not null as charted_by_someone, retained_until
       from medication_administrations where id = any ($1) order by recorded_at`,
      [child.entries],
    );
    const detached = { participant_id: null, medication_id: null, notes: null, nonce: null, charted_by_someone: true };
    expect(stored.rows.map(({ retained_until, ...row }) => ({ ...row, until: retained_until.toISOString() }))).toEqual(
      [
        {
          ...detached,
          medication_name: "Insulin",
          outcome: "given",
          dose_given: "4 units",
          reason: null,
          override_reason: null,
          corrects: false,
        },
        {
          ...detached,
          medication_name: "Insulin",
          outcome: "refused",
          dose_given: "4 units",
          reason: "removed at erasure",
          override_reason: null,
          corrects: true,
        },
        {
          ...detached,
          medication_name: "Salbutamol",
          outcome: "given",
          dose_given: "2 puffs",
          reason: null,
          override_reason: null,
          corrects: false,
        },
        {
          ...detached,
          medication_name: "Salbutamol",
          outcome: "given",
          dose_given: "2 puffs",
          reason: null,
          override_reason: "removed at erasure",
          corrects: false,
        },
      ].map((row) => ({ ...row, until: new Date(until).toISOString() })),
    );
    // Everything else of the child went: medications, care record; the participant row is the usual erased shell.
    const rest = await t().admin(
      `select (select count(*) from participant_medications where participant_id = $1)::int as medications,
              (select count(*) from participant_care where id = $1)::int as care,
              (select first_name from participants where id = $1) as first_name`,
      [child.id],
    );
    expect(rest.rows[0]).toEqual({ medications: 0, care: 0, first_name: "Erased" });
    // Still append-only: kept entries are not changed or deleted by anyone but the sweep.
    await expect(
      t().admin("update medication_administrations set notes = 'x' where id = $1", [child.entries[0]]),
    ).rejects.toThrow(/append-only/);
  });

  it("the sweep deletes kept entries and incidents once their period has ended, and not before", async () => {
    await setRetention(30);
    const child = await childWithRecord("Swept");
    const reported = await call(app, "POST", "/api/v1/incidents", {
      ...admin,
      body: {
        instance_id: instanceId,
        occurred_at: new Date(Date.now() - 3_600_000).toISOString(),
        location: "Field",
        category: "illness",
        severity: "minor",
        participant_ids: [child.id],
        description: "Felt sick",
        actions_taken: "Rest",
      },
    });
    expect(reported.status, JSON.stringify(reported.body)).toBe(201);
    const erased = await erase(child.id);
    expect(erased.body.data.retained.map((r: { count: number }) => r.count)).toEqual([4, 1]);
    const left = async () =>
      (
        await t().admin(
          "select (select count(*) from medication_administrations where id = any ($1))::int + (select count(*) from incidents where id = $2)::int as n",
          [child.entries, reported.body.data.id],
        )
      ).rows[0].n;
    // The sweep's clock is moved, not the test's: 29 days on they stay, 31 days on they go.
    const days = (n: number) => new Date(Date.now() + n * 86_400_000);
    await sweepRetainedHealthRecords(t().db, days(29));
    expect(await left()).toBe(5);
    expect(await sweepRetainedHealthRecords(t().db, days(31))).toBeGreaterThanOrEqual(5);
    expect(await left()).toBe(0);
    expect(found(await dump(), child.marks)).toEqual([]);
  });
});

describe("reporting.medication_administrations", () => {
  const roleTag = `ret_${randomBytes(4).toString("hex")}`;
  const clients: pg.Client[] = [];
  afterAll(async () => {
    for (const client of clients) await client.end().catch(() => {});
    for (const role of [`${roleTag}_care`, `${roleTag}_plain`]) await revokeReportingRole(t().db, role).catch(() => {});
  });
  const connect = async (care: boolean) => {
    const grant = await grantReportingRole(t().db, tenant.tenantId, `${roleTag}_${care ? "care" : "plain"}`, {
      connectionLimit: 2,
      connectionBudget: 10_000,
      care,
    });
    const client = new pg.Client({ connectionString: connectionDetails(t().url, grant).url });
    client.on("error", () => {});
    await client.connect();
    clients.push(client);
    return client;
  };

  it("is refused to roles not granted --care, and lists the tenant's record, kept entries without a name, to those granted it", async () => {
    await setRetention(3650);
    const live = await childWithRecord("Live");
    const gone = await childWithRecord("Gone");
    expect((await erase(gone.id)).body.data.retained[0]).toMatchObject({ count: 4 });
    const other = await newTenant(t().db);
    const otherInstance = await addInstance(t(), other.tenantId);
    const stranger = await t().admin(
      "insert into participants (tenant_id, instance_id, user_id, first_name, surname) values ($1, $2, 'x', 'Other', 'Tenant') returning id",
      [other.tenantId, otherInstance],
    );
    await t().admin(
      "insert into medication_administrations (tenant_id, participant_id, medication_name, outcome, administered_at) values ($1, $2, 'Elsewhere', 'given', now())",
      [other.tenantId, stranger.rows[0].id],
    );

    const plain = await connect(false);
    for (const text of [
      "select count(*) from medication_administrations",
      "select count(*) from public.medication_administrations",
    ]) {
      const refused = await plain.query(text).then(
        () => "answered",
        (error: { code?: string }) => error.code,
      );
      expect(`${text}: ${refused}`).toBe(`${text}: 42501`);
    }

    const care = await connect(true);
    const rows = await care.query(
      `select id, participant_id, instance_id, participant_name, medication_name, outcome, dose_given, notes, reason,
              override_reason, current, retained_until is not null as kept, recorded_by_email
       from medication_administrations order by recorded_at`,
    );
    expect(rows.rows.map((r) => r.medication_name)).not.toContain("Elsewhere");
    const ofLive = rows.rows.filter((r) => live.entries.includes(r.id));
    const name = `Zephyrine ${live.marks[0]}`;
    expect(ofLive.map((r) => [r.participant_name, r.instance_id, r.outcome, r.current, r.kept])).toEqual([
      [name, instanceId, "given", false, false],
      [name, instanceId, "refused", true, false],
      [name, instanceId, "given", true, false],
      [name, instanceId, "given", true, false],
    ]);
    expect(ofLive[0].notes).toBe(live.marks[1]);
    expect(ofLive.every((r) => r.participant_id === live.id && r.recorded_by_email === tenant.admin.email)).toBe(true);
    const ofGone = rows.rows.filter((r) => gone.entries.includes(r.id));
    expect(ofGone).toHaveLength(4);
    for (const row of ofGone) {
      expect(row).toMatchObject({ participant_id: null, instance_id: null, participant_name: null, notes: null, kept: true });
    }
    expect(found(JSON.stringify(ofGone), gone.marks)).toEqual([]);
    await setRetention(null);
  });
});
