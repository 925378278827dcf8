import { randomBytes } from "node:crypto";
import pg from "pg";
import { beforeAll, describe, expect, it } from "vitest";
import { raiseIncidentAlerts } from "../functions/incidents/sweep.ts";
import { connectionDetails, grantReportingRole, revokeReportingRole } from "../functions/reporting/roles.ts";
import { addInstance } from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { feedUntil } from "./support/events.ts";
import { type CallOptions, call, newTenant, signToken, type TestApp, type TestTenant, testApp } from "./support/fixtures.ts";

/**
 * Health centre, part 4: incidents. Reported (201), listed with filters and
 * pages, amended (the original stays beside the current values), closed;
 * nothing changes or goes over HTTP (405) or in SQL (the API role and the
 * doors' role hold no privilege; a trigger refuses the owner). Safeguarding
 * incidents are read only by safeguarding leads, held by the database; an
 * incident needing attention (serious, or guardians not notified within the
 * tenant's deadline) is listed and raises one thin event, which only callers
 * allowed to read the incident see in the feed or get by webhook. Reads are
 * audited care reads, writes audited; every route is confined to the tenant;
 * erasing a child removes its links and the incidents left with nobody.
 */

const t = useTestDatabase();

let app: TestApp;
let tenant: TestTenant;
let other: TestTenant;
let instanceId: string;
let otherInstance: string;
type Who = "admin" | "writer" | "reader" | "noAccess" | "lead" | "leadKey" | "otherAdmin";
const who: Record<Who, CallOptions> = {} as never;
const keys: Record<"writer" | "lead" | "noAccess" | "reader", string> = {} as never;
let leadUser: string;
let writerUser: string;

const bearerOf = (email: string) => signToken({ sub: `sub-${email}`, email, email_verified: true });
const hoursAgo = (hours: number) => new Date(Date.now() - hours * 3_600_000).toISOString();

async function staff(care: "none" | "read" | "write", scopes: string[]): Promise<{ key: string; userId: string }> {
  const user = await tenant.addUser("staff", { withKey: false });
  if (care !== "none") {
    expect((await call(app, "PATCH", `/api/v1/users/${user.userId}`, { ...who.admin, body: { care_access: care } })).status).toBe(
      200,
    );
  }
  const issued = await call(app, "POST", "/api/v1/api-keys/generate", { ...who.admin, body: { email: user.email, scopes } });
  expect(issued.status).toBe(201);
  return { key: issued.body.data.key, userId: user.userId };
}

async function newParticipant(instance = instanceId, as: CallOptions = who.admin): Promise<string> {
  const created = await call(app, "POST", "/api/v1/participants", {
    ...as,
    body: { instance_id: instance, user_id: `u-${randomBytes(4).toString("hex")}`, first_name: "Ada", surname: "Lovelace" },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body.data.id;
}

const incident = (participants: string[], extra: Record<string, unknown> = {}) => ({
  instance_id: instanceId,
  occurred_at: hoursAgo(1),
  location: "Climbing wall",
  category: "injury",
  severity: "minor",
  participant_ids: participants,
  description: "Grazed knee coming down the wall",
  actions_taken: "Cleaned and dressed",
  guardian_notified_at: hoursAgo(0.5),
  guardian_notified_by: "Nurse Joy",
  ...extra,
});

async function report(body: unknown, as: CallOptions = who.writer): Promise<string> {
  const created = await call(app, "POST", "/api/v1/incidents", { ...as, body });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body.data.id;
}

beforeAll(async () => {
  app = testApp(t().db);
  tenant = await newTenant(t().db);
  other = await newTenant(t().db);
  instanceId = await addInstance(t(), tenant.tenantId);
  otherInstance = await addInstance(t(), tenant.tenantId, "Other camp");
  who.admin = { token: await bearerOf(tenant.admin.email) };
  who.otherAdmin = { token: await bearerOf(other.admin.email) };
  const writer = await staff("write", ["read", "write", "care"]);
  writerUser = writer.userId;
  keys.writer = writer.key;
  who.writer = { key: writer.key };
  keys.reader = (await staff("read", ["read", "care"])).key;
  who.reader = { key: keys.reader };
  keys.noAccess = (await staff("none", ["read", "write", "care"])).key;
  who.noAccess = { key: keys.noAccess };
  const lead = await staff("write", ["read", "write", "care"]);
  leadUser = lead.userId;
  keys.lead = lead.key;
  who.leadKey = { key: lead.key };
  const marked = await call(app, "PATCH", `/api/v1/users/${lead.userId}`, { ...who.admin, body: { safeguarding_lead: true } });
  expect(marked.status, JSON.stringify(marked.body)).toBe(200);
  expect(marked.body.data.safeguarding_lead).toBe(true);
  expect((await call(app, "GET", "/api/v1/me", { key: lead.key })).body.data.user.safeguarding_lead).toBe(true);
  who.lead = who.leadKey;
});

describe("reporting", () => {
  it("reports an incident (201, Location) by the caller, with the original beside the current values", async () => {
    const a = await newParticipant();
    const b = await newParticipant();
    const created = await call(app, "POST", "/api/v1/incidents", { ...who.writer, body: incident([a, b, a]) });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.headers.get("location")).toMatch(new RegExp(`/incidents/${created.body.data.id}$`));
    expect(created.body.data).toMatchObject({
      instance_id: instanceId,
      category: "injury",
      severity: "minor",
      status: "open",
      location: "Climbing wall",
      needs_attention: false,
      attention_reasons: [],
      amendments: [],
      reported_by: writerUser,
    });
    expect([...created.body.data.participant_ids].sort()).toEqual([a, b].sort());
    expect(created.body.data.original).toMatchObject({ status: "open", description: "Grazed knee coming down the wall" });
    const read = await call(app, "GET", `/api/v1/incidents/${created.body.data.id}`, who.reader);
    expect(read.status).toBe(200);
    expect(read.body.data).toEqual(created.body.data);
  });

  it("refuses a bad report with 400 naming the field", async () => {
    const a = await newParticipant();
    const elsewhere = await newParticipant(otherInstance);
    for (const [body, field] of [
      [incident([a], { category: "fire" }), "category"],
      [incident([a], { severity: "grave" }), "severity"],
      [incident([]), "participant_ids"],
      [incident([elsewhere]), "participant_ids"],
      [incident([a], { instance_id: a }), "instance_id"],
      [incident([a], { occurred_at: new Date(Date.now() + 3_600_000).toISOString() }), "occurred_at"],
      [incident([a], { description: "" }), "description"],
      [incident([a], { colour: "red" }), "colour"],
    ] as Array<[unknown, string]>) {
      const answer = await call(app, "POST", "/api/v1/incidents", { ...who.writer, body });
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(JSON.stringify(answer.body.error.details), JSON.stringify(body)).toContain(field);
    }
  });

  it("lists with filters, newest report first, in pages with the total", async () => {
    const a = await newParticipant(otherInstance);
    const b = await newParticipant(otherInstance);
    const base = { instance_id: otherInstance };
    const first = await report({ ...incident([a]), ...base, category: "illness", occurred_at: "2026-07-10T10:00:00Z" });
    const second = await report({ ...incident([a, b]), ...base, category: "behaviour", occurred_at: "2026-07-11T10:00:00Z" });
    const third = await report({ ...incident([b]), ...base, category: "near_miss", occurred_at: "2026-07-12T10:00:00Z" });
    const list = async (query: string) => {
      const answer = await call(app, "GET", `/api/v1/incidents?instance_id=${otherInstance}&${query}`, who.reader);
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      return answer.body;
    };
    expect((await list("")).data.map((i: { id: string }) => i.id)).toEqual([third, second, first]);
    expect((await list(`participant_id=${a}`)).data.map((i: { id: string }) => i.id)).toEqual([second, first]);
    expect((await list("category=near_miss")).data.map((i: { id: string }) => i.id)).toEqual([third]);
    expect(
      (await list("occurred_from=2026-07-11T00:00:00Z&occurred_to=2026-07-12T00:00:00Z")).data.map((i: { id: string }) => i.id),
    ).toEqual([second]);
    const page = await list("limit=1&offset=1");
    expect(page.meta).toMatchObject({ total: 3, limit: 1, offset: 1 });
    expect(page.data.map((i: { id: string }) => i.id)).toEqual([second]);
    await call(app, "POST", `/api/v1/incidents/${first}/close`, { ...who.writer, body: { reason: "resolved" } });
    expect((await list("status=closed")).data.map((i: { id: string }) => i.id)).toEqual([first]);
    expect((await list("status=open")).meta.total).toBe(2);
    for (const query of ["category=fire", "status=shut", "needs_attention=yes", "occurred_from=monday", "participant_id=x"]) {
      expect((await call(app, "GET", `/api/v1/incidents?${query}`, who.reader)).status, query).toBe(400);
    }
  });
});

describe("the list's cost", () => {
  /**
   * The calls of per-incident and per-check functions one list makes, as the
   * API role in a transaction of its own (rolled back). A backend's function
   * counts stay pending across transactions until it flushes them: the
   * difference of two readings.
   */
  async function callsOfList(filters: object, limit: number) {
    const client = await t().db.pool.connect();
    const counts = async () =>
      Object.fromEntries(
        (
          await client.query<{ funcname: string; calls: number }>(
            `select funcname, calls::int from pg_stat_xact_user_functions
             where schemaname = 'private' and funcname in ('incident_original', 'incident_current', 'care_access', 'is_safeguarding_lead')`,
          )
        ).rows.map((r) => [r.funcname, r.calls]),
      ) as Record<string, number | undefined>;
    try {
      await client.query("begin");
      await client.query("set local track_functions = 'all'");
      await client.query("set local role camp_api");
      await client.query("select set_config('request.jwt.claims', $1, true)", [
        JSON.stringify(bearerClaims(tenant.admin.userId)),
      ]);
      const before = await counts();
      const found = (await client.query("select private.incidents($1, $2, 0) as value", [JSON.stringify(filters), limit])).rows[0]
        .value;
      const after = await counts();
      const calls = (name: string) => (after[name] ?? 0) - (before[name] ?? 0);
      return {
        total: found.total as number,
        rows: found.rows.length as number,
        original: calls("incident_original"),
        current: calls("incident_current"),
        careAccess: calls("care_access"),
        lead: calls("is_safeguarding_lead"),
      };
    } finally {
      await client.query("rollback");
      client.release();
    }
  }

  it("builds the page's incidents only, and checks care access and leads once per statement, not per incident", async () => {
    const a = await newParticipant();
    // Every incident amended, so that every page reads amendments (a policy's check runs once, when first needed).
    for (let i = 0; i < 8; i++) {
      const id = await report(incident([a]));
      const amended = await call(app, "POST", `/api/v1/incidents/${id}/amendments`, {
        ...who.writer,
        body: { changes: { location: "Lake" }, reason: "moved" },
      });
      expect(amended.status).toBe(201);
    }
    const one = await callsOfList({ participant_id: a }, 1);
    const four = await callsOfList({ participant_id: a }, 4);
    expect([one.total, one.rows, four.total, four.rows]).toEqual([8, 1, 8, 4]);
    // Each page incident's original is built twice (for its current values and as its own field), no other incident's.
    expect([one.original, four.original, four.current]).toEqual([2, 8, 0]);
    // The policies' checks do not grow with the page.
    expect(one.careAccess).toBeGreaterThan(0);
    expect([four.careAccess, four.lead]).toEqual([one.careAccess, one.lead]);
  });
});

describe("amendments", () => {
  it("keep the original readable beside the amendments and the current values; closing is one", async () => {
    const a = await newParticipant();
    const id = await report(incident([a], { guardian_notified_at: null, guardian_notified_by: null }));
    const amended = await call(app, "POST", `/api/v1/incidents/${id}/amendments`, {
      ...who.writer,
      body: {
        changes: {
          severity: "moderate",
          location: "Boulder room",
          guardian_notified_at: hoursAgo(0.2),
          guardian_notified_by: "Sam",
        },
        reason: "wrong room; mother phoned",
      },
    });
    expect(amended.status, JSON.stringify(amended.body)).toBe(201);
    expect(amended.body.data).toMatchObject({ severity: "moderate", location: "Boulder room", guardian_notified_by: "Sam" });
    expect(amended.body.data.original).toMatchObject({
      severity: "minor",
      location: "Climbing wall",
      guardian_notified_at: null,
    });
    expect(amended.body.data.amendments).toHaveLength(1);
    expect(amended.body.data.amendments[0]).toMatchObject({
      changes: { severity: "moderate", location: "Boulder room", guardian_notified_by: "Sam" },
      reason: "wrong room; mother phoned",
      recorded_by: writerUser,
    });
    // A second amendment changes one field again: the later value stands, both amendments stay.
    const again = await call(app, "POST", `/api/v1/incidents/${id}/amendments`, {
      ...who.writer,
      body: { changes: { location: "Wall, lower section", severity: "moderate" }, reason: "more precise" },
    });
    expect(again.status).toBe(201);
    expect(again.body.data.amendments.map((m: { changes: object }) => m.changes)).toEqual([
      expect.objectContaining({ location: "Boulder room" }),
      { location: "Wall, lower section" },
    ]);
    expect(again.body.data.location).toBe("Wall, lower section");
    const closed = await call(app, "POST", `/api/v1/incidents/${id}/close`, { ...who.writer, body: { reason: "healed" } });
    expect(closed.status, JSON.stringify(closed.body)).toBe(200);
    expect(closed.body.data).toMatchObject({ status: "closed", original: { status: "open" } });
    expect(closed.body.data.amendments.at(-1)).toMatchObject({ changes: { status: "closed" }, reason: "healed" });
    expect((await call(app, "POST", `/api/v1/incidents/${id}/close`, who.writer)).status).toBe(409);
    const reopened = await call(app, "POST", `/api/v1/incidents/${id}/amendments`, {
      ...who.writer,
      body: { changes: { status: "open" }, reason: "infected after all" },
    });
    expect(reopened.body.data.status).toBe("open");
    expect(reopened.body.data.amendments).toHaveLength(4);

    for (const [body, field] of [
      [{ changes: { severity: "moderate" }, reason: "same" }, "changes"],
      [{ changes: {}, reason: "nothing" }, "changes"],
      [{ changes: { participant_ids: [a] }, reason: "x" }, "participant_ids"],
      [{ changes: { category: "safeguarding" }, reason: "x" }, "category"],
      [{ changes: { severity: "grave" }, reason: "x" }, "severity"],
      [{ changes: { location: "x" } }, "reason"],
    ] as Array<[unknown, string]>) {
      const answer = await call(app, "POST", `/api/v1/incidents/${id}/amendments`, { ...who.writer, body });
      expect([400, 409], JSON.stringify(body)).toContain(answer.status);
      expect(JSON.stringify(answer.body.error.details), JSON.stringify(body)).toContain(field);
    }
    // A reader cannot amend or close.
    expect(
      (
        await call(app, "POST", `/api/v1/incidents/${id}/amendments`, {
          ...who.reader,
          body: { changes: { location: "y" }, reason: "z" },
        })
      ).status,
    ).toBe(403);
    expect((await call(app, "POST", `/api/v1/incidents/${id}/close`, who.reader)).status).toBe(403);
  });

  it("cannot change or remove an incident over HTTP: PUT, PATCH and DELETE are 405", async () => {
    const id = await report(incident([await newParticipant()]));
    for (const path of [`/api/v1/incidents/${id}`, `/api/v1/incidents/${id}/amendments`]) {
      for (const method of ["PUT", "PATCH", "DELETE"]) {
        const answer = await call(app, method, path, {
          ...who.admin,
          body: method === "DELETE" ? undefined : { severity: "serious" },
        });
        expect(`${method} ${path}: ${answer.status}`).toBe(`${method} ${path}: 405`);
      }
    }
    expect((await call(app, "GET", `/api/v1/incidents/${id}`, who.admin)).body.data.severity).toBe("minor");
  });
});

/** Runs work as a role with the given claims in a transaction that is rolled back. */
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
const sqlState = (role: string, claims: object, text: string, values: unknown[] = []) =>
  as(role, claims, async (client) => {
    try {
      const result = await client.query(text, values);
      return `ok ${result.rowCount}`;
    } catch (error) {
      return (error as { code?: string }).code ?? "?";
    }
  });
const bearerClaims = (userId: string) => ({ tenant_id: tenant.tenantId, sub: userId, via: "bearer" });

describe("append-only, held by the database", () => {
  it("the API role and the doors' role can neither update nor delete incidents, amendments or links; the owner is refused", async () => {
    const a = await newParticipant();
    const id = await report(incident([a]));
    await call(app, "POST", `/api/v1/incidents/${id}/close`, who.writer);
    const claims = bearerClaims(tenant.admin.userId);
    for (const role of ["camp_api", "camp_care"]) {
      for (const text of [
        `update public.incidents set severity = 'serious' where id = '${id}'`,
        `delete from public.incidents where id = '${id}'`,
        "truncate public.incidents cascade",
        `update public.incident_amendments set reason = 'x' where incident_id = '${id}'`,
        `delete from public.incident_amendments where incident_id = '${id}'`,
        `delete from public.incident_participants where incident_id = '${id}'`,
        `update public.incident_participants set participant_id = participant_id where incident_id = '${id}'`,
      ]) {
        expect(`${role}: ${text}: ${await sqlState(role, claims, text)}`).toBe(`${role}: ${text}: 42501`);
      }
    }
    // The API role reads none of these tables at all.
    for (const table of ["incidents", "incident_amendments", "incident_participants"]) {
      expect(await sqlState("camp_api", claims, `select * from public.${table}`)).toBe("42501");
    }
    await expect(t().admin("update incidents set severity = 'serious' where id = $1", [id])).rejects.toThrow(/append-only/);
    await expect(t().admin("delete from incident_amendments where incident_id = $1", [id])).rejects.toThrow(/append-only/);
    await expect(t().admin("delete from incident_participants where incident_id = $1", [id])).rejects.toThrow(/append-only/);
    const stored = await t().admin(
      "select severity, (select count(*)::int from incident_amendments where incident_id = $1) as amendments from incidents where id = $1",
      [id],
    );
    expect(stored.rows).toEqual([{ severity: "minor", amendments: 1 }]);
  });
});

describe("safeguarding leads", () => {
  it("only admins mark leads", async () => {
    const staffOnly = await tenant.addUser("staff");
    expect(
      (await call(app, "PATCH", `/api/v1/users/${writerUser}`, { key: staffOnly.key, body: { safeguarding_lead: true } })).status,
    ).toBe(403);
    // Not by SQL either: the claims of a staff user may not set it.
    expect(
      await sqlState("camp_api", bearerClaims(writerUser), "update public.users set safeguarding_lead = true where id = $1", [
        writerUser,
      ]),
    ).toBe("CA403");
    // Another tenant's admin: not found.
    expect(
      (await call(app, "PATCH", `/api/v1/users/${writerUser}`, { ...who.otherAdmin, body: { safeguarding_lead: true } })).status,
    ).toBe(404);
    const user = await call(app, "GET", `/api/v1/users/${writerUser}`, who.admin);
    expect(user.body.data.safeguarding_lead).toBe(false);
  });

  it("anyone with care write access reports a safeguarding incident; only leads read, list or amend it, held by the database", async () => {
    const a = await newParticipant();
    const created = await call(app, "POST", "/api/v1/incidents", {
      ...who.writer,
      body: incident([a], { category: "safeguarding", description: "Disclosure made to a counsellor" }),
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.data.id;
    expect(created.body.data).toMatchObject({ category: "safeguarding", description: "Disclosure made to a counsellor" });
    const open = await report(incident([a]));

    // The reporter (care write, not a lead), a care reader and an admin with care access but no lead mark: nothing.
    for (const caller of [who.writer, who.reader, who.admin]) {
      expect((await call(app, "GET", `/api/v1/incidents/${id}`, caller)).status).toBe(404);
      const listed = await call(app, "GET", `/api/v1/incidents?participant_id=${a}`, caller);
      expect(listed.body.data.map((i: { id: string }) => i.id)).toEqual([open]);
      expect(listed.body.meta.total).toBe(1);
      // Writing needs care write access first (the reader: 403); with it, the incident is not found.
      const writes = caller === who.reader ? 403 : 404;
      expect(
        (
          await call(app, "POST", `/api/v1/incidents/${id}/amendments`, {
            ...caller,
            body: { changes: { location: "x" }, reason: "y" },
          })
        ).status,
      ).toBe(writes);
      expect((await call(app, "POST", `/api/v1/incidents/${id}/close`, caller)).status).toBe(writes);
    }
    // The lead reads, lists and amends it.
    expect((await call(app, "GET", `/api/v1/incidents/${id}`, who.lead)).body.data.description).toBe(
      "Disclosure made to a counsellor",
    );
    const leadList = await call(app, "GET", `/api/v1/incidents?participant_id=${a}&category=safeguarding`, who.lead);
    expect(leadList.body.data.map((i: { id: string }) => i.id)).toEqual([id]);
    const amended = await call(app, "POST", `/api/v1/incidents/${id}/amendments`, {
      ...who.lead,
      body: { changes: { actions_taken: "Referred to the local authority" }, reason: "referral made" },
    });
    expect(amended.status).toBe(201);
    // It can never be moved out of safeguarding.
    const moved = await call(app, "POST", `/api/v1/incidents/${id}/amendments`, {
      ...who.lead,
      body: { changes: { category: "behaviour" }, reason: "x" },
    });
    expect(moved.status).toBe(400);

    // SQL, as the API role through the doors with a non-lead's claims: not found, not listed.
    const writerClaims = bearerClaims(writerUser);
    expect(await sqlState("camp_api", writerClaims, "select private.incident($1)", [id])).toBe("CA404");
    const listedInSql = await as("camp_api", writerClaims, async (client) => {
      const found = await client.query("select private.incidents($1, 100, 0) as v", [JSON.stringify({ participant_id: a })]);
      return found.rows[0].v.rows.map((i: { id: string }) => i.id);
    });
    expect(listedInSql).toEqual([open]);
    // As the doors' role itself, the policies hide the rows: a mistake in a door could not show them.
    const rowsAsCare = await as("camp_care", writerClaims, async (client) => ({
      incidents: (await client.query("select id from public.incidents where id = $1", [id])).rowCount,
      links: (await client.query("select 1 from public.incident_participants where incident_id = $1", [id])).rowCount,
      amendments: (await client.query("select 1 from public.incident_amendments where incident_id = $1", [id])).rowCount,
    }));
    expect(rowsAsCare).toEqual({ incidents: 0, links: 0, amendments: 0 });
    const rowsAsLead = await as("camp_care", bearerClaims(leadUser), async (client) => ({
      incidents: (await client.query("select id from public.incidents where id = $1", [id])).rowCount,
      amendments: (await client.query("select 1 from public.incident_amendments where incident_id = $1", [id])).rowCount,
    }));
    expect(rowsAsLead).toEqual({ incidents: 1, amendments: 1 });

    // The audit trail: the lead sees the safeguarding incident's events; the admin (care access, no lead) does not, and asking is 403.
    const adminTrail = await call(app, "GET", `/api/v1/audit-events?resource_id=${id}`, who.admin);
    expect(adminTrail.status).toBe(200);
    expect(adminTrail.body.data).toEqual([]);
    expect((await call(app, "GET", "/api/v1/audit-events?resource_type=safeguarding_incident", who.admin)).status).toBe(403);
    const leadAdmin = await tenant.addUser("admin", { withKey: false });
    await call(app, "PATCH", `/api/v1/users/${leadAdmin.userId}`, { ...who.admin, body: { safeguarding_lead: true } });
    const leadTrail = await call(app, "GET", `/api/v1/audit-events?resource_id=${id}`, {
      token: await bearerOf(leadAdmin.email),
    });
    expect(
      leadTrail.body.data.map((e: { action: string; resource_type: string }) => `${e.action} ${e.resource_type}`).sort(),
    ).toEqual(
      [
        "create safeguarding_incident",
        "read safeguarding_incident",
        "read safeguarding_incident",
        "update safeguarding_incident",
      ].sort(),
    );
  });

  it("a stored answer (Idempotency-Key) of an amendment is not replayed to a caller who is no longer a lead", async () => {
    const id = await report(incident([await newParticipant()], { category: "safeguarding" }));
    const send = () =>
      call(app, "POST", `/api/v1/incidents/${id}/amendments`, {
        ...who.lead,
        headers: { "Idempotency-Key": `amend-${id}` },
        body: { changes: { location: "Office" }, reason: "where it was said" },
      });
    expect((await send()).status).toBe(201);
    const again = await send();
    expect([again.status, again.headers.get("idempotent-replayed")]).toEqual([201, "true"]);
    await call(app, "PATCH", `/api/v1/users/${leadUser}`, { ...who.admin, body: { safeguarding_lead: false } });
    try {
      const refused = await send();
      expect(refused.status).toBe(404);
      expect(JSON.stringify(refused.body)).not.toContain("Office");
    } finally {
      await call(app, "PATCH", `/api/v1/users/${leadUser}`, { ...who.admin, body: { safeguarding_lead: true } });
    }
  });

  it("a lead without care access reads nothing", async () => {
    const id = await report(incident([await newParticipant()], { category: "safeguarding" }));
    await call(app, "PATCH", `/api/v1/users/${leadUser}`, { ...who.admin, body: { care_access: "none" } });
    try {
      expect((await call(app, "GET", `/api/v1/incidents/${id}`, who.lead)).status).toBe(403);
    } finally {
      await call(app, "PATCH", `/api/v1/users/${leadUser}`, { ...who.admin, body: { care_access: "write" } });
    }
    expect((await call(app, "GET", `/api/v1/incidents/${id}`, who.lead)).status).toBe(200);
  });
});

describe("needing attention", () => {
  it("lists serious incidents and those whose guardians were not notified within the tenant's deadline", async () => {
    const instance = await addInstance(t(), tenant.tenantId, "Attention camp");
    const a = await newParticipant(instance);
    const at = (extra: Record<string, unknown>) => ({ ...incident([a]), instance_id: instance, ...extra });
    const serious = await report(at({ severity: "serious" }));
    const unnotified = await report(at({ occurred_at: hoursAgo(30), guardian_notified_at: null, guardian_notified_by: null }));
    const late = await report(at({ occurred_at: hoursAgo(30), guardian_notified_at: hoursAgo(2) }));
    await report(at({ occurred_at: hoursAgo(30), guardian_notified_at: hoursAgo(28) }));
    const recent = await report(at({ occurred_at: hoursAgo(2), guardian_notified_at: null, guardian_notified_by: null }));
    const attention = async () => {
      const listed = await call(app, "GET", `/api/v1/incidents?instance_id=${instance}&needs_attention=true`, who.reader);
      expect(listed.status).toBe(200);
      return Object.fromEntries(
        listed.body.data.map((i: { id: string; attention_reasons: string[] }) => [i.id, i.attention_reasons]),
      );
    };
    expect(await attention()).toEqual({
      [serious]: ["serious"],
      [unnotified]: ["guardians_not_notified"],
      [late]: ["guardians_notified_late"],
    });
    // The tenant's deadline is a setting: one hour makes the recent one late too.
    expect((await call(app, "GET", "/api/v1/tenant/settings", who.reader)).body.data).toMatchObject({
      incident_notice_hours: 24,
    });
    expect(
      (await call(app, "PATCH", "/api/v1/tenant/settings", { ...who.writer, body: { incident_notice_hours: 1 } })).status,
    ).toBe(403);
    expect(
      (await call(app, "PATCH", "/api/v1/tenant/settings", { ...who.admin, body: { incident_notice_hours: 0 } })).status,
    ).toBe(400);
    const changed = await call(app, "PATCH", "/api/v1/tenant/settings", { ...who.admin, body: { incident_notice_hours: 1 } });
    expect(changed.status).toBe(200);
    expect(changed.body.data).toMatchObject({ incident_notice_hours: 1 });
    try {
      expect((await attention())[recent]).toEqual(["guardians_not_notified"]);
      const trail = await call(app, "GET", "/api/v1/audit-events?resource_type=tenant", who.admin);
      expect(trail.body.data[0]).toMatchObject({ action: "update", changes: { incident_notice_hours: [24, 1] } });
    } finally {
      await call(app, "PATCH", "/api/v1/tenant/settings", { ...who.admin, body: { incident_notice_hours: 24 } });
    }
    // Closing takes it off the list; notifying the guardians (an amendment) too.
    await call(app, "POST", `/api/v1/incidents/${serious}/close`, who.writer);
    await call(app, "POST", `/api/v1/incidents/${unnotified}/amendments`, {
      ...who.writer,
      body: {
        changes: { guardian_notified_at: hoursAgo(29), guardian_notified_by: "Camp director" },
        reason: "call logged late",
      },
    });
    expect(Object.keys(await attention())).toEqual([late]);
    // The other tenant's settings are its own: its admin's change leaves this tenant's alone.
    expect(
      (await call(app, "PATCH", "/api/v1/tenant/settings", { ...who.otherAdmin, body: { incident_notice_hours: 48 } })).status,
    ).toBe(200);
    expect((await call(app, "GET", "/api/v1/tenant/settings", who.reader)).body.data).toMatchObject({
      incident_notice_hours: 24,
    });
    expect((await call(app, "GET", "/api/v1/tenant/settings", who.otherAdmin)).body.data).toMatchObject({
      incident_notice_hours: 48,
    });
  });

  it("raise one thin incident.needs_attention each, seen only by those who may read the incident", async () => {
    const instance = await addInstance(t(), tenant.tenantId, "Alert camp");
    const a = await newParticipant(instance);
    const at = (extra: Record<string, unknown>) => ({ ...incident([a]), instance_id: instance, ...extra });
    const serious = await report(at({ severity: "serious" }));
    const guarded = await report(at({ severity: "serious", category: "safeguarding" }));
    const unnotified = await report(at({ occurred_at: hoursAgo(30), guardian_notified_at: null, guardian_notified_by: null }));
    const quiet = await report(at({}));
    const alerts = async () =>
      (
        await t().admin("select resource_id, audience from events where tenant_id = $1 and type = 'incident.needs_attention'", [
          tenant.tenantId,
        ])
      ).rows;
    const of = async (id: string) => (await alerts()).filter((r) => r.resource_id === id);
    // Serious ones at once; the late notification by the sweep, once however often it runs.
    expect(await of(serious)).toEqual([{ resource_id: serious, audience: null }]);
    expect(await of(guarded)).toEqual([{ resource_id: guarded, audience: "safeguarding" }]);
    expect(await of(unnotified)).toEqual([]);
    expect(await raiseIncidentAlerts(t().db)).toBeGreaterThanOrEqual(1);
    await raiseIncidentAlerts(t().db);
    expect(await of(unnotified)).toEqual([{ resource_id: unnotified, audience: null }]);
    expect(await of(quiet)).toEqual([]);
    // Amended to serious later: raised then, once.
    await call(app, "POST", `/api/v1/incidents/${quiet}/amendments`, {
      ...who.writer,
      body: { changes: { severity: "serious" }, reason: "fracture on the X-ray" },
    });
    await call(app, "POST", `/api/v1/incidents/${serious}/amendments`, {
      ...who.writer,
      body: { changes: { severity: "moderate" }, reason: "less than feared" },
    });
    await call(app, "POST", `/api/v1/incidents/${serious}/amendments`, {
      ...who.writer,
      body: { changes: { severity: "serious" }, reason: "worse again" },
    });
    expect((await of(quiet)).length).toBe(1);
    expect((await of(serious)).length).toBe(1);

    // Who may see them, held by the events' policy (checked as the API role, whatever the feed's horizon):
    // a lead all four, a care user who is no lead all but the safeguarding one, a caller without care access none.
    const visible = async (claims: object) =>
      as("camp_api", claims, async (client) =>
        (
          await client.query(
            "select resource_id from public.events where type = 'incident.needs_attention' and resource_id = any ($1)",
            [[serious, guarded, unnotified, quiet]],
          )
        ).rows
          .map((r) => r.resource_id)
          .sort(),
      );
    const keyClaims = async (key: string) => {
      const me = (await call(app, "GET", "/api/v1/me", { key })).body.data;
      return { tenant_id: tenant.tenantId, sub: me.user.id, key_id: me.credential.id, via: "api_key" };
    };
    expect(await visible(await keyClaims(keys.lead))).toEqual([serious, guarded, unnotified, quiet].sort());
    expect(await visible(await keyClaims(keys.writer))).toEqual([serious, unnotified, quiet].sort());
    expect(await visible(await keyClaims(keys.reader))).toEqual([serious, unnotified, quiet].sort());
    expect(await visible(await keyClaims(keys.noAccess))).toEqual([]);
    expect(await visible(await keyClaims(tenant.admin.key))).toEqual([]);
    expect(await visible({ tenant_id: other.tenantId, sub: other.admin.userId, via: "bearer" })).toEqual([]);

    // And the feed over HTTP: thin events, ids only; the lead gets the safeguarding one, the writer not.
    const ours = new Set([serious, guarded, unnotified, quiet]);
    const mine = (events: Array<{ type: string; data: Record<string, string> }>) =>
      events
        .filter((e) => e.type === "incident.needs_attention" && ours.has(e.data.incident_id as string))
        .map((e) => e.data.incident_id);
    const leadFeed = await feedUntil(app, keys.lead, (events) => mine(events).length >= 4, {
      extra: "types=incident.needs_attention",
    });
    expect(mine(leadFeed.events).sort()).toEqual([serious, guarded, unnotified, quiet].sort());
    for (const event of leadFeed.events) {
      expect(Object.keys(event.data)).toEqual(["incident_id"]);
      expect(JSON.stringify(event)).not.toMatch(/Climbing|Grazed|Ada/);
    }
    const writerFeed = await feedUntil(app, keys.writer, (events) => mine(events).length >= 3, {
      extra: "types=incident.needs_attention",
    });
    expect(mine(writerFeed.events).sort()).toEqual([serious, unnotified, quiet].sort());
    // Served to the lead, so below the horizon for every reader now: a key without care access gets none.
    const noCare = await feedUntil(app, keys.noAccess, () => true);
    expect(noCare.events.filter((e) => e.type === "incident.needs_attention")).toEqual([]);
    expect((await call(app, "GET", "/api/v1/events?types=incident.needs_attention", who.noAccess)).status).toBe(403);
  });

  it("reach webhooks only of endpoints that name them, set by an admin with care access, never a safeguarding incident's", async () => {
    // An admin key without the care scope may not subscribe to care alerts.
    const refused = await call(app, "POST", "/api/v1/webhook-endpoints", {
      key: tenant.admin.key,
      body: { url: "https://hooks.example.test/care", types: ["incident.needs_attention"] },
    });
    expect(refused.status).toBe(403);
    expect(JSON.stringify(refused.body.error.details)).toContain("types");
    const everything = await call(app, "POST", "/api/v1/webhook-endpoints", {
      ...who.admin,
      body: { url: "https://hooks.example.test/all" },
    });
    const careHook = await call(app, "POST", "/api/v1/webhook-endpoints", {
      ...who.admin,
      body: { url: "https://hooks.example.test/care", types: ["incident.needs_attention", "participant.created"] },
    });
    expect([everything.status, careHook.status]).toEqual([201, 201]);
    const instance = await addInstance(t(), tenant.tenantId, "Hook camp");
    const a = await newParticipant(instance);
    const at = (extra: Record<string, unknown>) => ({ ...incident([a]), instance_id: instance, ...extra });
    const serious = await report(at({ severity: "serious" }));
    const guarded = await report(at({ severity: "serious", category: "safeguarding" }));
    const marker = await newParticipant(instance);
    const deliveries = async (endpoint: string) =>
      (await t().admin("select event_type, resource_id from webhook_deliveries where endpoint_id = $1", [endpoint])).rows;
    const deadline = Date.now() + 60_000;
    // Dispatch until the marker (a participant created after both incidents) has reached both endpoints.
    for (;;) {
      await t().admin("select private.dispatch_webhook_events(1000)");
      const all = await deliveries(everything.body.data.id);
      const care = await deliveries(careHook.body.data.id);
      if (all.some((d) => d.resource_id === marker) && care.some((d) => d.resource_id === marker)) break;
      if (Date.now() > deadline) throw new Error("the events were not dispatched within a minute");
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const all = await deliveries(everything.body.data.id);
    const care = await deliveries(careHook.body.data.id);
    expect(all.filter((d) => d.event_type === "incident.needs_attention")).toEqual([]);
    expect(care.filter((d) => d.event_type === "incident.needs_attention")).toEqual([
      { event_type: "incident.needs_attention", resource_id: serious },
    ]);
    expect(care.some((d) => d.resource_id === guarded)).toBe(false);
  });
});

describe("need to know", () => {
  it("403 without care access, 404 in another tenant, on every route; reads audited as care reads, writes audited", async () => {
    const a = await newParticipant();
    const id = await report(incident([a]));
    const routes: Array<[string, string, unknown?]> = [
      ["GET", "/api/v1/incidents"],
      ["GET", `/api/v1/incidents/${id}`],
      ["POST", "/api/v1/incidents", incident([a])],
      ["POST", `/api/v1/incidents/${id}/amendments`, { changes: { location: "Gym" }, reason: "moved" }],
      ["POST", `/api/v1/incidents/${id}/close`, { reason: "done" }],
    ];
    const reads = async () =>
      (
        await t().admin(
          "select count(*)::int as n from audit_events where action = 'read' and resource_type = 'incident' and resource_id = $1",
          [id],
        )
      ).rows[0].n;
    const before = await reads();
    for (const [method, path, body] of routes) {
      expect((await call(app, method, path, { ...who.noAccess, body })).status, `${method} ${path}`).toBe(403);
      expect((await call(app, method, path, { key: tenant.admin.key, body })).status, `${method} ${path} (no care scope)`).toBe(
        403,
      );
    }
    // Another tenant's admin: the incident is not found, the instance and participants are not its own, the list is empty.
    expect((await call(app, "GET", `/api/v1/incidents/${id}`, who.otherAdmin)).status).toBe(404);
    expect((await call(app, "POST", "/api/v1/incidents", { ...who.otherAdmin, body: incident([a]) })).status).toBe(400);
    expect(
      (
        await call(app, "POST", `/api/v1/incidents/${id}/amendments`, {
          ...who.otherAdmin,
          body: { changes: { location: "x" }, reason: "y" },
        })
      ).status,
    ).toBe(404);
    expect((await call(app, "POST", `/api/v1/incidents/${id}/close`, who.otherAdmin)).status).toBe(404);
    const otherList = await call(app, "GET", "/api/v1/incidents", who.otherAdmin);
    expect(otherList.status).toBe(200);
    expect(otherList.body.meta.total).toBe(0);
    expect((await call(app, "GET", `/api/v1/incidents/${id}`, { key: "camp_not-a-key" })).status).toBe(401);
    expect((await call(app, "GET", "/api/v1/incidents/not-a-uuid", who.reader)).status).toBe(404);
    expect(await reads()).toBe(before);

    await call(app, "GET", `/api/v1/incidents/${id}`, who.reader);
    await call(app, "GET", `/api/v1/incidents?participant_id=${a}`, who.reader);
    expect(await reads()).toBe(before + 2);
    await call(app, "POST", `/api/v1/incidents/${id}/amendments`, {
      ...who.writer,
      body: { changes: { location: "Gym" }, reason: "moved" },
    });
    await call(app, "POST", `/api/v1/incidents/${id}/close`, who.writer);
    const trail = await call(app, "GET", `/api/v1/audit-events?resource_type=incident&resource_id=${id}&limit=100`, who.admin);
    const writes = trail.body.data.filter((e: { action: string }) => e.action !== "read");
    expect(writes.map((e: { action: string; changes: object }) => [e.action, Object.keys(e.changes).sort()])).toEqual([
      ["update", ["reason", "status"]],
      ["update", ["location", "reason"]],
      ["create", expect.arrayContaining(["category", "description", "location", "occurred_at", "severity"])],
    ]);
    expect(writes[1].changes.location).toEqual(["Climbing wall", "Gym"]);
    // Without care access, the trail shows none of it.
    const blind = await call(app, "GET", `/api/v1/audit-events?resource_id=${id}`, { key: tenant.admin.key });
    expect(blind.body.data).toEqual([]);
  });
});

async function namedParticipant(first: string, surname: string): Promise<string> {
  const created = await call(app, "POST", "/api/v1/participants", {
    ...who.admin,
    body: { instance_id: instanceId, user_id: `u-${randomBytes(4).toString("hex")}`, first_name: first, surname },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body.data.id;
}

/** Every row of the tenant's incident tables and audit trail, as text: what a data dump would hold of them. */
async function dumpOf(tenantId: string): Promise<string> {
  const rows = await t().admin(
    `select (select coalesce(jsonb_agg(to_jsonb(i)), '[]') from incidents i where i.tenant_id = $1)::text
         || (select coalesce(jsonb_agg(to_jsonb(a)), '[]') from incident_amendments a where a.tenant_id = $1)::text
         || (select coalesce(jsonb_agg(to_jsonb(e)), '[]') from audit_events e where e.tenant_id = $1)::text
         || (select coalesce(jsonb_agg(to_jsonb(p)), '[]') from participants p where p.tenant_id = $1)::text as dump`,
    [tenantId],
  );
  return rows.rows[0].dump;
}

describe("erasure (no retention period)", () => {
  it("removes the child's link to a shared incident and its name from the incident's text; an incident left with nobody goes", async () => {
    const tag = randomBytes(3).toString("hex");
    const first = `Zebedee${tag}`;
    const surname = `Quillfeather${tag}`;
    const a = await namedParticipant(first, surname);
    const b = await namedParticipant(`Bob${tag}`, "Other");
    const shared = await report(
      incident([a, b], { description: `${first} ${surname} and Bob${tag} collided`, guardian_notified_by: `${first}'s mother` }),
    );
    await call(app, "POST", `/api/v1/incidents/${shared}/amendments`, {
      ...who.writer,
      body: { changes: { actions_taken: `ice for ${first.toLowerCase()}` }, reason: `${surname} family asked` },
    });
    const alone = await report(incident([a], { description: `${first} fell`, severity: "serious" }));
    await call(app, "POST", `/api/v1/incidents/${alone}/amendments`, {
      ...who.writer,
      body: { changes: { actions_taken: `${first} sent to hospital` }, reason: "update" },
    });
    expect((await dumpOf(tenant.tenantId)).includes(first)).toBe(true);
    expect((await call(app, "POST", `/api/v1/participants/${a}/erase`, who.admin)).status).toBe(200);
    const kept = await call(app, "GET", `/api/v1/incidents/${shared}`, who.reader);
    expect(kept.status).toBe(200);
    expect(kept.body.data).toMatchObject({
      participant_ids: [b],
      description: `[erased] and Bob${tag} collided`,
      guardian_notified_by: "[erased]'s mother",
      actions_taken: "ice for [erased]",
    });
    expect(kept.body.data.amendments[0].reason).toBe("[erased] family asked");
    expect((await call(app, "GET", `/api/v1/incidents/${alone}`, who.reader)).status).toBe(404);
    const left = await t().admin(
      `select (select count(*)::int from incidents where id = $1) as incidents,
              (select count(*)::int from incident_amendments where incident_id = $1) as amendments,
              (select count(*)::int from incident_participants where participant_id = $2) as links`,
      [alone, a],
    );
    expect(left.rows[0]).toEqual({ incidents: 0, amendments: 0, links: 0 });
    const dump = await dumpOf(tenant.tenantId);
    expect(dump.includes(first) || dump.toLowerCase().includes(first.toLowerCase()) || dump.includes(surname)).toBe(false);
    expect(dump.includes(`Bob${tag}`)).toBe(true);
  });
});

describe("erasure under a retention period (the SQL its erasure calls)", () => {
  it("keeps an incident left with nobody, detached and without the name, until the sweep deletes it after the period", async () => {
    const tag = randomBytes(3).toString("hex");
    const first = `Xanthe${tag}`;
    const a = await namedParticipant(first, `Marlowe${tag}`);
    const alone = await report(incident([a], { description: `${first} was stung`, category: "illness" }));
    const until = new Date(Date.now() + 365 * 86_400_000);
    // What the retention period's erasure does before blanking the participant, then the erasure itself.
    const kept = await t().admin("select private.retain_incidents_of_participant($1, $2, $3) as n", [
      tenant.tenantId,
      a,
      until.toISOString(),
    ]);
    expect(kept.rows[0].n).toBe(1);
    expect((await call(app, "POST", `/api/v1/participants/${a}/erase`, who.admin)).status).toBe(200);
    const read = await call(app, "GET", `/api/v1/incidents/${alone}`, who.reader);
    expect(read.status).toBe(200);
    expect(read.body.data).toMatchObject({ participant_ids: [], description: "[erased] was stung", category: "illness" });
    const stored = await t().admin("select retained_until from incidents where id = $1", [alone]);
    expect(stored.rows[0].retained_until).toEqual(until);
    expect((await dumpOf(tenant.tenantId)).includes(first)).toBe(false);
    // Still append-only for everyone else, and the sweep leaves it until the period ends.
    await expect(t().admin("delete from incidents where id = $1", [alone])).rejects.toThrow(/append-only/);
    expect((await t().admin("select private.sweep_retained_incidents(now()) as n")).rows[0].n).toBe(0);
    const after = new Date(until.getTime() + 1000).toISOString();
    expect((await t().admin("select private.sweep_retained_incidents($1) as n", [after])).rows[0].n).toBe(1);
    expect((await call(app, "GET", `/api/v1/incidents/${alone}`, who.reader)).status).toBe(404);
  });
});

describe("reporting.incidents", () => {
  it("is for roles granted --care only, with current values, and never holds safeguarding incidents", async () => {
    const a = await newParticipant();
    const plainId = await report(incident([a], { location: "Lake" }));
    await call(app, "POST", `/api/v1/incidents/${plainId}/amendments`, {
      ...who.writer,
      body: { changes: { location: "Lake shore", status: "closed" }, reason: "precise; done" },
    });
    const guarded = await report(incident([a], { category: "safeguarding" }));
    const run = `inc_${randomBytes(4).toString("hex")}`;
    const clients: pg.Client[] = [];
    const connect = async (care: boolean) => {
      const grant = await grantReportingRole(t().db, tenant.tenantId, `${run}_${care ? "care" : "plain"}`, {
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
    try {
      const plain = await connect(false);
      for (const text of ["select count(*) from incidents", "select count(*) from public.incidents"]) {
        const state = await plain.query(text).then(
          () => "answered",
          (error: { code?: string }) => error.code,
        );
        expect(`${text}: ${state}`).toBe(`${text}: 42501`);
      }
      const care = await connect(true);
      const rows = await care.query(
        "select id, location, status, amendments, participant_ids from incidents where $1 = any (participant_ids) order by recorded_at",
        [a],
      );
      expect(rows.rows).toEqual([{ id: plainId, location: "Lake shore", status: "closed", amendments: 1, participant_ids: [a] }]);
      const hidden = await care.query(
        `select (select count(*)::int from public.incidents where id = $1) as incidents,
                (select count(*)::int from public.incident_participants where incident_id = $1) as links,
                (select count(*)::int from audit_events where resource_id = $1) as audit`,
        [guarded],
      );
      expect(hidden.rows[0]).toEqual({ incidents: 0, links: 0, audit: 0 });
    } finally {
      for (const client of clients) await client.end().catch(() => {});
      for (const care of [true, false]) await revokeReportingRole(t().db, `${run}_${care ? "care" : "plain"}`).catch(() => {});
    }
  });
});
