import { randomBytes } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { raiseOverdueDoses } from "../functions/medications/sweep.ts";
import { addInstance } from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { drainFeed, feedUntil } from "./support/events.ts";
import { type CallOptions, call, newTenant, signToken, type TestApp, type TestTenant, testApp } from "./support/fixtures.ts";

/**
 * Health centre, part 3: a day's medication pass in the instance's time
 * zone (due, charted with its entry, overdue past the grace period), the one
 * medication.overdue event each overdue dose raises however often the sweep
 * runs, and the pass's gate (care access, tenant, audited reads).
 */

const t = useTestDatabase();

let app: TestApp;
let tenant: TestTenant;
let other: TestTenant;
let instanceId: string;
const who: Record<"admin" | "reader" | "noAccess" | "otherAdmin", CallOptions> = {} as never;
const ZONE = "America/New_York";

const bearerOf = (email: string) => signToken({ sub: `sub-${email}`, email, email_verified: true });

async function staffKey(care: "none" | "read", scopes: string[]): Promise<string> {
  const user = await tenant.addUser("staff", { withKey: false });
  if (care !== "none") await call(app, "PATCH", `/api/v1/users/${user.userId}`, { ...who.admin, body: { care_access: care } });
  const issued = await call(app, "POST", "/api/v1/api-keys/generate", { ...who.admin, body: { email: user.email, scopes } });
  return issued.body.data.key;
}

async function participant(name: string): Promise<string> {
  const created = await call(app, "POST", "/api/v1/participants", {
    ...who.admin,
    body: { instance_id: instanceId, user_id: `u-${randomBytes(4).toString("hex")}`, first_name: name, surname: "Test" },
  });
  expect(created.status).toBe(201);
  return created.body.data.id;
}

async function medication(owner: string, body: unknown): Promise<string> {
  const created = await call(app, "POST", `/api/v1/participants/${owner}/medications`, { ...who.admin, body });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body.data.id;
}

/** HH:MM in the zone, `minutes` from now. */
function localTime(minutes: number): string {
  return new Intl.DateTimeFormat("en-GB", { timeZone: ZONE, hour: "2-digit", minute: "2-digit", hourCycle: "h23" }).format(
    new Date(Date.now() + minutes * 60_000),
  );
}

const pass = (query: string, as: CallOptions = who.reader) =>
  call(app, "GET", `/api/v1/instances/${instanceId}/medication-pass${query}`, as);

let ann: string;
let ben: string;
let annInsulin: string;
let benRitalin: string;

beforeAll(async () => {
  app = testApp(t().db);
  tenant = await newTenant(t().db);
  other = await newTenant(t().db);
  instanceId = await addInstance(t(), tenant.tenantId);
  who.admin = { token: await bearerOf(tenant.admin.email) };
  who.otherAdmin = { token: await bearerOf(other.admin.email) };
  who.reader = { key: await staffKey("read", ["read", "care"]) };
  who.noAccess = { key: await staffKey("none", ["read", "care"]) };
  expect((await call(app, "PATCH", `/api/v1/instances/${instanceId}`, { ...who.admin, body: { time_zone: ZONE } })).status).toBe(
    200,
  );
  ann = await participant("Ann");
  ben = await participant("Ben");
  // 08:00 in New York on 14 July 2026 is 12:00 UTC (daylight saving time).
  annInsulin = await medication(ann, { name: "Insulin", dose: "4 units", times: ["08:00", "20:00"], start_date: "2026-07-14" });
  benRitalin = await medication(ben, { name: "Ritalin", dose: "10 mg", route: "oral", times: ["08:00"] });
  await medication(ben, { name: "Old course", times: ["08:00"], end_date: "2026-07-13" });
  await medication(ben, { name: "Ventolin", prn: true });
});

describe("a day's medication pass", () => {
  it("lists the doses due in the window, charted with their entry, overdue past the grace period", async () => {
    const given = await call(app, "POST", `/api/v1/participants/${ann}/medication-administrations`, {
      ...who.admin,
      body: { medication_id: annInsulin, outcome: "given", administered_at: "2026-07-14T12:07:00Z" },
    });
    expect(given.status).toBe(201);
    const morning = await pass("?at=2026-07-14T12:00:00Z");
    expect(morning.status).toBe(200);
    expect(morning.body.meta.total).toBe(2);
    expect(
      morning.body.data.map((d: Record<string, unknown>) => [d.participant_name, d.medication_name, d.due_at, d.state]),
    ).toEqual([
      ["Ann Test", "Insulin", "2026-07-14T12:00:00.000Z", "charted"],
      ["Ben Test", "Ritalin", "2026-07-14T12:00:00.000Z", "overdue"],
    ]);
    expect(morning.body.data[0].entry).toMatchObject({ id: given.body.data.id, outcome: "given" });
    expect(morning.body.data[1]).toMatchObject({
      participant_id: ben,
      medication_id: benRitalin,
      dose: "10 mg",
      route: "oral",
      entry: null,
    });
    // The evening: Ann's 20:00 dose (00:00 UTC the next day); a narrow window leaves the morning out.
    const evening = await pass("?at=2026-07-15T00:10:00Z&window_minutes=30");
    expect(evening.body.data.map((d: Record<string, unknown>) => [d.medication_name, d.due_at])).toEqual([
      ["Insulin", "2026-07-15T00:00:00.000Z"],
    ]);
    // A correction that says the dose was not given keeps it charted, with the correction as its entry.
    const fixed = await call(app, "POST", `/api/v1/participants/${ann}/medication-administrations`, {
      ...who.admin,
      body: { amends: given.body.data.id, outcome: "refused", reason: "charted before she took it" },
    });
    const after = await pass("?at=2026-07-14T12:00:00Z");
    expect(after.body.data[0]).toMatchObject({ state: "charted", entry: { id: fixed.body.data.id, outcome: "refused" } });
  });

  it("shows a dose due soon as due, and refuses a bad query", async () => {
    const cara = await participant("Cara");
    // From today (in the zone) on, so the sweeps below, set in July, do not see it.
    const today = new Intl.DateTimeFormat("en-CA", { timeZone: ZONE }).format(new Date());
    await medication(cara, { name: "Melatonin", times: [localTime(20)], start_date: today });
    const now = await pass("");
    expect(now.status).toBe(200);
    expect(now.body.data.find((d: { participant_id: string }) => d.participant_id === cara)).toMatchObject({ state: "due" });
    for (const query of ["?at=today", "?window_minutes=0", "?window_minutes=1e2", "?colour=red"]) {
      expect((await pass(query)).status, query).toBe(400);
    }
  });

  it("is care data of the tenant: 403 without care access, 404 for another tenant or no instance, each listed participant an audited read", async () => {
    expect((await pass("?at=2026-07-14T12:00:00Z", who.noAccess)).status).toBe(403);
    expect((await pass("?at=2026-07-14T12:00:00Z", who.otherAdmin)).status).toBe(404);
    expect((await call(app, "GET", `/api/v1/instances/${randomUUIDLike()}/medication-pass`, who.reader)).status).toBe(404);
    expect((await call(app, "GET", "/api/v1/instances/nope/medication-pass", who.reader)).status).toBe(404);
    const reads = await t().admin(
      "select resource_id, count(*)::int as n from audit_events where action = 'read' and resource_type = 'medications' and resource_id = any ($1) group by 1",
      [[ann, ben]],
    );
    expect(reads.rows.length).toBe(2);
  });
});

describe("the pass's plan", () => {
  it("reads the instance's participants and their medications by their indexes, not every tenant's", async () => {
    // At a size where reading every row costs more: another tenant of 400 instances, 6,000 participants and
    // 2,000 medications (not yet started, so that the sweeps below never see them).
    const crowd = await newTenant(t().db);
    await t().admin(
      `with made as (
         insert into public.instances (tenant_id, name) select $1, 'Crowd ' || g from generate_series(1, 400) g returning id)
       , people as (
         insert into public.participants (tenant_id, instance_id, user_id, first_name, surname)
         select $1, m.id, 'crowd-' || m.id || '-' || g, 'First', 'Last' || g from made m cross join generate_series(1, 15) g
         returning id)
       insert into public.participant_medications (tenant_id, participant_id, name, dose, times, start_date)
       select $1, id, 'Med', '10 mg', '{08:00,20:00}', '2099-01-01' from people limit 2000`,
      [crowd.tenantId],
    );
    await t().admin("analyze public.instances, public.participants, public.participant_medications");
    // As the pass runs it: the function's own statement, planned with its arguments as parameters (a SQL function
    // with a SET clause is not inlined), and without JIT (*_medication_pass_jit.sql).
    const [fn] = (
      await t().admin("select prosrc from pg_proc where proname = 'scheduled_doses' and pronamespace = 'private'::regnamespace")
    ).rows;
    const body = (fn.prosrc as string)
      .replaceAll("p_instance", "$1::uuid")
      .replaceAll("p_from", "$2::timestamptz")
      .replaceAll("p_to", "$3::timestamptz");
    const client = await t().db.pool.connect();
    try {
      await client.query("begin");
      await client.query("set local jit = off");
      await client.query("set local plan_cache_mode = force_generic_plan");
      await client.query(`prepare pass_plan(uuid, timestamptz, timestamptz) as ${body}`);
      const plan = (
        await client.query(
          `explain (costs off) execute pass_plan('${instanceId}', timestamptz '2026-07-14T11:00:00Z', timestamptz '2026-07-14T13:00:00Z')`,
        )
      ).rows.map((r) => r["QUERY PLAN"] as string);
      const text = plan.join("\n");
      expect(text, text).not.toMatch(/Seq Scan on (participants|participant_medications)\b/);
      expect(text, text).toMatch(/Scan (on|using) participants_presence/);
      expect(text, text).toMatch(/Scan using participant_medications_by_participant/);
    } finally {
      await client.query("rollback");
      client.release();
    }
  });
});

function randomUUIDLike(): string {
  const hex = randomBytes(16).toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

describe("overdue doses", () => {
  it("raise one thin medication.overdue event each, however often the sweep runs", async () => {
    const events = () =>
      t().admin(
        "select type, resource_id, occurred_at from events where tenant_id = $1 and type = 'medication.overdue' order by id",
        [tenant.tenantId],
      );
    // 14:00 UTC: Ben's 08:00 (12:00 UTC) dose is past its hour of grace and uncharted; Ann's was charted.
    const sweepAt = new Date("2026-07-14T14:00:00Z");
    const raised = await raiseOverdueDoses(t().db, sweepAt);
    expect(raised).toBe(1);
    expect((await events()).rows).toEqual([{ type: "medication.overdue", resource_id: benRitalin, occurred_at: sweepAt }]);
    expect(await raiseOverdueDoses(t().db, sweepAt)).toBe(0);
    expect(await raiseOverdueDoses(t().db, new Date("2026-07-14T14:01:00Z"))).toBe(0);
    // Within the grace period nothing is raised: at 12:59 UTC the 12:00 dose of a new medication is not yet overdue.
    const dan = await participant("Dan");
    const late = await medication(dan, { name: "Iron", times: ["08:00"], start_date: "2026-07-14" });
    const of = async (id: string) => (await events()).rows.filter((r) => r.resource_id === id).length;
    await raiseOverdueDoses(t().db, new Date("2026-07-14T12:59:00Z"));
    expect(await of(late)).toBe(0);
    await raiseOverdueDoses(t().db, new Date("2026-07-14T13:01:00Z"));
    await raiseOverdueDoses(t().db, new Date("2026-07-14T13:02:00Z"));
    expect(await of(late)).toBe(1);
    // Other tenants' feeds do not show it.
    const otherEvents = await t().admin(
      "select count(*)::int as n from events where tenant_id = $1 and type = 'medication.overdue'",
      [other.tenantId],
    );
    expect(otherEvents.rows[0].n).toBe(0);
  });

  it("reach the feed as ids only, for callers with care access only", async () => {
    const reader = who.reader.key as string;
    const seen = await feedUntil(app, reader, (events) => events.some((e) => e.type === "medication.overdue"));
    for (const event of seen.events.filter((e) => e.type === "medication.overdue")) {
      expect(Object.keys(event.data)).toEqual(["medication_id"]);
      expect(JSON.stringify(event)).not.toMatch(/Ritalin|Iron|Ben|Dan/);
    }
    // The same feed, now past those events, read by the admin's key (no care scope) and a staff user without care access.
    const staff = (await tenant.addUser("staff")).key as string;
    for (const key of [tenant.admin.key, staff]) {
      const all = await drainFeed(app, key);
      expect(all.events.length).toBeGreaterThan(0);
      expect(all.events.filter((e) => e.type.startsWith("medication."))).toEqual([]);
      // Asked for by name, refused rather than answered empty (as the audit trail's care types).
      const named = await call(app, "GET", "/api/v1/events?types=participant.created,medication.overdue", { key });
      expect(`${named.status} ${named.body.error?.details?.[0]?.field}`).toBe("403 types");
    }
  });

  it("reach a webhook endpoint only when it names them, which needs care access", async () => {
    const hook = { url: "https://example.org/health-hook" };
    // An endpoint of every type, and an admin without care access naming the care event: 403, naming types.
    const everything = await call(app, "POST", "/api/v1/webhook-endpoints", { key: tenant.admin.key, body: hook });
    expect(everything.status).toBe(201);
    const refused = await call(app, "POST", "/api/v1/webhook-endpoints", {
      key: tenant.admin.key,
      body: { ...hook, types: ["medication.overdue"] },
    });
    expect(`${refused.status} ${refused.body.error?.details?.[0]?.field}`).toBe("403 types");
    const named = await call(app, "POST", "/api/v1/webhook-endpoints", {
      ...who.admin,
      body: { ...hook, types: ["medication.overdue"] },
    });
    expect(named.status, JSON.stringify(named.body)).toBe(201);
    // Without care access it cannot be re-aimed or re-typed; it can be described or turned off.
    const path = `/api/v1/webhook-endpoints/${named.body.data.id}`;
    for (const body of [{ url: "https://example.net/elsewhere" }, { types: ["medication.overdue", "participant.created"] }]) {
      const changed = await call(app, "PATCH", path, { key: tenant.admin.key, body });
      expect(`${changed.status} ${changed.body.error?.details?.[0]?.field}`).toBe("403 types");
    }
    expect((await call(app, "PATCH", path, { key: tenant.admin.key, body: { description: "nurse pager" } })).status).toBe(200);

    const eve = await participant("Eve");
    const eveDose = await medication(eve, { name: "Iron", times: ["09:00"], start_date: "2026-07-20", end_date: "2026-07-20" });
    expect(await raiseOverdueDoses(t().db, new Date("2026-07-20T18:00:00Z"))).toBeGreaterThan(0);
    const deliveries = (endpoint: string) =>
      t().admin("select event_type, resource_id from webhook_deliveries where endpoint_id = $1", [endpoint]);
    const deadline = Date.now() + 30_000;
    while (!(await deliveries(named.body.data.id)).rows.some((d) => d.resource_id === eveDose)) {
      if (Date.now() > deadline) throw new Error("the overdue dose was not queued for the endpoint that names it");
      await t().admin("select private.dispatch_webhook_events(1000)");
      await new Promise((r) => setTimeout(r, 50));
    }
    await t().admin("select private.dispatch_webhook_events(1000)");
    expect((await deliveries(everything.body.data.id)).rows.filter((d) => d.event_type.startsWith("medication."))).toEqual([]);
    // Its deliveries are listed to admins with care access only.
    const listed = async (as: CallOptions) => {
      const page = await call(app, "GET", `${path}/deliveries?limit=100`, as);
      expect(page.status, JSON.stringify(page.body)).toBe(200);
      return page.body.data.length;
    };
    expect(await listed(who.admin)).toBeGreaterThan(0);
    expect(await listed({ key: tenant.admin.key })).toBe(0);
  });
});
