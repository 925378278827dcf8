import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Database } from "../functions/db/database.ts";
import { useTestDatabase } from "./support/database.ts";
import { call, newTenant, type TestApp, testApp } from "./support/fixtures.ts";
import { type Bouncer, PGBOUNCER, startPgBouncer } from "./support/pgbouncer.ts";
import { canRun, named } from "./support/skips.ts";

/**
 * Behind a transaction-mode pooler (PgBouncer, as Supavisor on Supabase) with
 * DB_PREPARED_STATEMENTS=false: the whole request pipeline works, and the
 * tenant claims, set transaction-locally, never leak from one transaction to
 * the next on the one server connection they all share.
 */

const t = useTestDatabase();
// A developer's machine may lack pgbouncer; CI installs it and must run this.
const SUITE = "through PgBouncer in transaction mode";
const REMEDY = "pgbouncer is not installed (apt-get install pgbouncer; .ci/run does)";
const available = canRun(PGBOUNCER !== undefined, SUITE, REMEDY);

describe.runIf(available)(named(SUITE, available, REMEDY), { timeout: 60_000 }, () => {
  let bouncer: Bouncer;
  let db: Database;
  let app: TestApp;

  beforeAll(async () => {
    bouncer = await startPgBouncer(t().url, 1);
    db = new Database(bouncer.url, { max: 6, prepare: false });
    app = testApp(db);
  });
  afterAll(async () => {
    await db?.close();
    await bouncer?.stop();
  });

  it("serves key lookups, lists, creates, bulk creates and exports for two tenants at once, each seeing only its own", async () => {
    const tenants = await Promise.all([newTenant(t().db), newTenant(t().db)]);
    const work = tenants.map(async (tenant, n) => {
      const key = tenant.admin.key;
      const instance = await call(app, "POST", "/api/v1/instances", { key, body: { name: `Pooled ${n}` } });
      expect(instance.status).toBe(201);
      const instanceId = instance.body.data.id;
      const creates = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          call(app, "POST", "/api/v1/participants", {
            key,
            body: { user_id: `p${n}-${i}`, instance_id: instanceId, first_name: "Pat", surname: `Tenant${n}` },
          }),
        ),
      );
      expect(creates.map((r) => r.status)).toEqual(Array(10).fill(201));
      const bulk = await call(app, "POST", "/api/v1/participants/bulk", {
        key,
        body: {
          participants: Array.from({ length: 50 }, (_, i) => ({
            user_id: `b${n}-${i}`,
            instance_id: instanceId,
            first_name: "Bo",
            surname: `Tenant${n}`,
          })),
        },
      });
      expect(bulk.status).toBe(201);
      for (let round = 0; round < 5; round++) {
        const list = await call(app, "GET", "/api/v1/participants?limit=1000", { key });
        expect(list.status).toBe(200);
        expect(list.body.meta.total).toBe(60);
        expect(new Set(list.body.data.map((p: { surname: string }) => p.surname))).toEqual(new Set([`Tenant${n}`]));
      }
      const csv = await call(app, "GET", `/api/v1/participants/export.csv?instance_id=${instanceId}`, { key });
      expect(csv.status).toBe(200);
      expect(String(csv.body).trim().split("\n")).toHaveLength(61);
      expect(String(csv.body)).not.toContain(`Tenant${1 - n}`);
      const mine = await call(app, "GET", "/api/v1/api-keys/my-key", { key });
      expect(mine.body.data.email).toBe(tenant.admin.email);
    });
    await Promise.all(work);
  });

  it("leaves no claims or role behind on the shared server connection", async () => {
    const tenant = await newTenant(t().db);
    await Promise.all(Array.from({ length: 10 }, () => call(app, "GET", "/api/v1/instances", { key: tenant.admin.key })));
    const client = new pg.Client({ connectionString: bouncer.url });
    await client.connect();
    try {
      const owner = new URL(t().url).username;
      const after = await client.query(
        "select coalesce(current_setting('request.jwt.claims', true), '') as claims, current_user as role",
      );
      expect(after.rows[0]).toEqual({ claims: "", role: owner });
      // Nothing of any tenant is visible outside a request's scope, as the API role.
      const leaked = await client.query("begin; set local role camp_api; select count(*)::int as n from public.participants");
      expect((leaked as unknown as pg.QueryResult[])[2]?.rows[0].n).toBe(0);
      await client.query("rollback");
    } finally {
      await client.end();
    }
  });
});
