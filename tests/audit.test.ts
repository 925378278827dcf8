import { randomBytes } from "node:crypto";
import pg from "pg";
import { beforeAll, describe, expect, it } from "vitest";
import { MemoryPhotoStore } from "../functions/photos/memory-store.ts";
import { connectionDetails, grantReportingRole } from "../functions/reporting/roles.ts";
import { type CampStructure, tenantWithCamp } from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { call, newTenant, type TestApp, type TestTenant, testApp } from "./support/fixtures.ts";
import { image } from "./support/images.ts";
import { photoApp, upload } from "./support/photos.ts";
import { run, TSX } from "./support/processes.ts";

/** The audit trail the database writes, its append-only rule, and erasure. */

const t = useTestDatabase();
let app: TestApp;
let tenant: TestTenant;
let camp: CampStructure;

beforeAll(async () => {
  ({ app, tenant, camp } = await tenantWithCamp(t()));
});

interface Event {
  actor_user_id: string | null;
  actor_email: string | null;
  actor_via: string;
  actor_key_id: string | null;
  request_id: string | null;
  client_request_id: string | null;
  action: string;
  resource_type: string;
  resource_id: string;
  changes: Record<string, [unknown, unknown]>;
}

const eventsOf = async (resourceId: string, key = tenant.admin.key): Promise<Event[]> =>
  (await call(app, "GET", `/api/v1/audit-events?resource_id=${resourceId}&limit=1000`, { key })).body.data;

describe("audit events", () => {
  it("record who created, changed and deleted a record over the API, with the request id and only what changed", async () => {
    const key = tenant.admin.key;
    const keyId = (await call(app, "GET", "/api/v1/api-keys/my-key", { key })).body.data.id;
    const created = await call(app, "POST", "/api/v1/participants", {
      key,
      body: { user_id: "audit-1", instance_id: camp.instanceId, first_name: "Ada", surname: "Byron" },
      headers: { "X-Request-Id": "req-create-1" },
    });
    const id = created.body.data.id;
    const serverId = created.headers.get("x-request-id");
    await call(app, "PATCH", `/api/v1/participants/${id}`, { key, body: { surname: "Lovelace" } });
    await call(app, "DELETE", `/api/v1/participants/${id}`, { key });
    const events = await eventsOf(id);
    expect(events.map((e) => e.action)).toEqual(["delete", "update", "create"]);
    const [deleted, updated, first] = events as [Event, Event, Event];
    expect(first).toMatchObject({
      actor_user_id: tenant.admin.userId,
      actor_email: tenant.admin.email,
      actor_via: "api_key",
      actor_key_id: keyId,
      request_id: serverId,
      client_request_id: "req-create-1",
      resource_type: "participant",
    });
    expect(updated.client_request_id).toBeNull();
    // A client cannot pass its id off as the server's: request_id filters by the server's id only.
    const byClaimed = await call(app, "GET", "/api/v1/audit-events?request_id=req-create-1", { key });
    expect(byClaimed.body.data).toEqual([]);
    const byClient = await call(app, "GET", "/api/v1/audit-events?client_request_id=req-create-1", { key });
    expect(byClient.body.data.map((e: Event) => e.request_id)).toEqual([serverId]);
    expect(first.changes.first_name).toEqual([null, "Ada"]);
    expect(updated.changes).toEqual({ surname: ["Byron", "Lovelace"], full_name: ["Ada Byron", "Ada Lovelace"] });
    expect(Object.keys(deleted.changes)).toEqual(["deleted_at"]);
  });

  it("cover bulk create, CSV import, structure, users, keys, photos and the CLI", async () => {
    const key = tenant.admin.key;
    const bulk = await call(app, "POST", "/api/v1/participants/bulk", {
      key,
      body: {
        participants: [
          { user_id: "bulk-a", instance_id: camp.instanceId, first_name: "A", surname: "One" },
          { user_id: "bulk-b", instance_id: camp.instanceId, first_name: "B", surname: "Two" },
        ],
      },
    });
    for (const row of bulk.body.data) expect((await eventsOf(row.id)).map((e) => e.action)).toEqual(["create"]);

    const csv = new TextEncoder().encode("user_id,first_name,surname\ncsv-a,C,Three\n");
    await call(app, "POST", `/api/v1/participants/import?instance_id=${camp.instanceId}`, {
      key,
      raw: csv,
      headers: { "Content-Type": "text/csv", "Content-Length": String(csv.length) },
    });
    const imported = await t().admin("select id from participants where user_id = 'csv-a'");
    expect((await eventsOf(imported.rows[0].id))[0]).toMatchObject({ action: "create", actor_via: "api_key" });

    const room = await call(app, "PATCH", `/api/v1/rooms/${camp.roomId}`, { key, body: { capacity: 9 } });
    expect(room.status).toBe(200);
    const roomEvent = (await eventsOf(camp.roomId))[0] as Event;
    expect(roomEvent).toMatchObject({ action: "update", resource_type: "room" });
    expect(roomEvent.changes.capacity?.[1]).toBe(9);

    const user = await call(app, "POST", "/api/v1/users", { key, body: { email: "audited@example.test", role: "staff" } });
    const issued = await call(app, "POST", "/api/v1/api-keys/generate", { key, body: { email: "audited@example.test" } });
    expect((await eventsOf(user.body.data.id))[0]).toMatchObject({ action: "create", resource_type: "user" });
    const keyEvents = await eventsOf(issued.body.data.id);
    expect(keyEvents[0]).toMatchObject({ action: "create", resource_type: "api_key" });
    expect(JSON.stringify(keyEvents)).not.toMatch(/key_hash|camp_[A-Za-z0-9_-]{43}/);

    const photoTarget = bulk.body.data[0].id;
    await upload(photoApp(t().db, new MemoryPhotoStore()), key, photoTarget, await image("png"));
    expect((await eventsOf(photoTarget))[0]).toMatchObject({
      action: "update",
      changes: { photo_key: [null, expect.any(String)] },
    });

    const cli = await run(TSX, ["cli/main.ts", "user", "add", "cli.user@example.test", "--tenant", tenant.tenantId], {
      DATABASE_URL: t().url,
    });
    expect(cli.code, cli.stderr).toBe(0);
    const cliUser = JSON.parse(cli.stdout).user_id;
    expect((await eventsOf(cliUser))[0]).toMatchObject({ action: "create", actor_via: "operator", actor_user_id: null });
  });

  it("filter by type, actor, action and time, newest first, for admins only", async () => {
    const key = tenant.admin.key;
    const since = new Date(Date.now() - 1000).toISOString();
    await call(app, "POST", "/api/v1/instances", { key, body: { name: "Filtered" } });
    const found = await call(
      app,
      "GET",
      `/api/v1/audit-events?resource_type=instance&action=create&actor_user_id=${tenant.admin.userId}&since=${encodeURIComponent(since)}`,
      { key },
    );
    expect(found.body.data.map((e: Event) => e.changes.name?.[1])).toEqual(["Filtered"]);
    expect((await call(app, "GET", "/api/v1/audit-events?resource_type=spaceship", { key })).status).toBe(400);
  });

  it("are append-only for every role but the retention job, the owner included", async () => {
    const attempts = [
      "update public.audit_events set action = 'update'",
      "delete from public.audit_events",
      "truncate public.audit_events",
    ];
    for (const statement of attempts) {
      const outcome = await t()
        .admin(statement)
        .then(() => "ok")
        .catch((error: { code?: string }) => error.code);
      expect(outcome, statement).toBe("42501");
    }
    const client = await t().db.pool.connect();
    try {
      await client.query("begin");
      await client.query("set local role camp_api");
      await client.query("select set_config('request.jwt.claims', $1, true)", [JSON.stringify({ tenant_id: tenant.tenantId })]);
      const asApi = await client.query("update public.audit_events set action = 'update'").then(
        () => "ok",
        (error: { code?: string }) => error.code,
      );
      expect(asApi).toBe("42501");
    } finally {
      await client.query("rollback");
      client.release();
    }
    // The retention job is the one way out: an event older than the cut-off goes, the rest stay.
    await t().admin(
      `insert into audit_events (tenant_id, occurred_at, actor_via, action, resource_type, resource_id)
       values ($1, '1999-06-01', 'operator', 'create', 'instance', gen_random_uuid())`,
      [tenant.tenantId],
    );
    const before = (await t().admin("select count(*)::int as n from audit_events")).rows[0].n;
    const pruned = await run(TSX, ["cli/main.ts", "audit", "prune", "--before", "2000-01-01"], { DATABASE_URL: t().url });
    expect(pruned.code, pruned.stderr).toBe(0);
    expect(JSON.parse(pruned.stdout)).toEqual({ deleted: 1 });
    expect((await t().admin("select count(*)::int as n from audit_events")).rows[0].n).toBe(before - 1);
  });

  it("show a reporting role its tenant's events only", async () => {
    const role = `audit_rep_${randomBytes(4).toString("hex")}`;
    const grant = await grantReportingRole(t().db, tenant.tenantId, role, { connectionBudget: 10_000 });
    const client = new pg.Client({ connectionString: connectionDetails(t().url, grant).url });
    await client.connect();
    try {
      const other = await newTenant(t().db);
      const edited = await call(app, "PATCH", `/api/v1/instances/${camp.instanceId}`, {
        key: tenant.admin.key,
        body: { description: "seen by reporting" },
        headers: { "X-Request-Id": "req-reporting-1" },
      });
      expect(edited.status).toBe(200);
      const rows = (await client.query("select distinct resource_id from reporting.audit_events")).rows.map((r) => r.resource_id);
      expect(rows).toContain(camp.instanceId);
      expect(rows).not.toContain(other.admin.userId);
      // The server's request id and, beside it, the client's own.
      const tagged = await client.query(
        "select request_id, client_request_id from reporting.audit_events where client_request_id = 'req-reporting-1'",
      );
      expect(tagged.rows).toEqual([{ request_id: edited.headers.get("x-request-id"), client_request_id: "req-reporting-1" }]);
    } finally {
      await client.end();
      await t()
        .admin(`drop role if exists ${role}`)
        .catch(() => undefined);
    }
  });
});

describe("erasure", () => {
  it("leaves nothing of the person anywhere in the database or the photo store, and keeps the row's id and instance", async () => {
    const key = tenant.admin.key;
    const person = {
      user_id: "ERASE-ME-77",
      instance_id: camp.instanceId,
      first_name: "Zerubbabel",
      surname: "Quigglesworth",
      full_name: "Zerubbabel X. Quigglesworth",
      pronouns: "xe/xem",
      date_of_birth: "2011-03-09",
      school_year: "Yearzz 7",
      rank: "Rankzz",
      unit_name: "Unitzz Alpha",
      school_institute: "Schoolzz Omega",
    };
    const created = await call(app, "POST", "/api/v1/participants", { key, body: person });
    const id = created.body.data.id;
    await call(app, "PATCH", `/api/v1/participants/${id}`, { key, body: { surname: "Quigglesworth-Smythe" } });
    const store = new MemoryPhotoStore();
    await upload(photoApp(t().db, store), key, id, await image("jpeg"));
    expect(store.objects.size).toBe(1);

    const erasing = testApp(t().db);
    // The erase route deletes the photo from the store the app was given.
    const photoAware = photoApp(t().db, store);
    expect(
      (await call(photoAware, "POST", `/api/v1/participants/${id}/erase`, { key: (await tenant.addUser("staff")).key })).status,
    ).toBe(403);
    const erased = await call(photoAware, "POST", `/api/v1/participants/${id}/erase`, { key });
    expect(erased.status).toBe(200);
    expect(store.objects.size).toBe(0);
    expect((await call(erasing, "GET", `/api/v1/participants/${id}`, { key })).status).toBe(404);
    expect((await call(photoAware, "POST", `/api/v1/participants/${id}/erase`, { key })).status).toBe(404);

    const row = await t().admin("select id, instance_id, erased_at, deleted_at from participants where id = $1", [id]);
    expect(row.rows[0]).toMatchObject({
      id,
      instance_id: camp.instanceId,
      erased_at: expect.any(Date),
      deleted_at: expect.any(Date),
    });

    // Every text column of every table, events included: nothing of the person remains.
    const needles = [
      "Zerubbabel",
      "Quigglesworth",
      "ERASE-ME-77",
      "xe/xem",
      "2011-03-09",
      "Yearzz",
      "Rankzz",
      "Unitzz",
      "Schoolzz",
    ];
    const columns = await t().admin(
      `select table_schema, table_name, column_name from information_schema.columns
       where table_schema in ('public', 'private') and data_type in ('text', 'jsonb', 'json', 'character varying', 'date')
         and table_name in (select table_name from information_schema.tables where table_type = 'BASE TABLE')`,
    );
    for (const { table_schema, table_name, column_name } of columns.rows) {
      const hits = await t().admin(
        `select count(*)::int as n from ${table_schema}.${table_name} where ${pg.escapeIdentifier(column_name)}::text ~* $1`,
        [needles.map((n) => n.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")).join("|")],
      );
      expect(hits.rows[0].n, `${table_schema}.${table_name}.${column_name}`).toBe(0);
    }
    const trail = await eventsOf(id);
    expect(trail[0]).toMatchObject({ action: "erase", changes: {} });
    // Earlier events keep which fields changed; every value reads "erased" (a create's "before" is null).
    for (const event of trail.slice(1)) {
      for (const [before, after] of Object.values(event.changes)) {
        expect(after).toBe("erased");
        expect([null, "erased"]).toContain(before);
      }
    }
  });
});
