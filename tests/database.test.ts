import { beforeAll, describe, expect, it } from "vitest";
import { Database } from "../functions/db/database.ts";
import { useTestDatabase } from "./support/database.ts";
import { newTenant, type TestTenant } from "./support/fixtures.ts";

const t = useTestDatabase();
let tenant: TestTenant;
beforeAll(async () => {
  tenant = await newTenant(t().db);
});

const principal = () => ({ tenantId: tenant.tenantId, userId: tenant.admin.userId, role: "admin" as const });

/** Statements this connection has prepared, read in the same transaction as the work. */
const prepared = "select count(*)::int as n from pg_prepared_statements";

describe("the tenant transaction", () => {
  it("prepares parameterised statements by default", async () => {
    const n = await t().db.asTenant(principal(), async (sql) => {
      await sql.query("select id from public.tenants where id = $1", [tenant.tenantId]);
      return (await sql.one<{ n: number }>(prepared, []))?.n;
    });
    expect(n).toBeGreaterThan(0);
  });

  it("sends only unnamed statements with prepare: false, for transaction-mode poolers", async () => {
    const db = new Database(t().url, { max: 1, prepare: false });
    try {
      const result = await db.asTenant(principal(), async (sql) => {
        const rows = await sql.query<{ id: string }>("select id from public.tenants where id = $1", [tenant.tenantId]);
        return { rows, n: (await sql.one<{ n: number }>(prepared, []))?.n };
      });
      expect(result.rows).toEqual([{ id: tenant.tenantId }]);
      expect(result.n).toBe(0);
    } finally {
      await db.close();
    }
  });

  it("reads dates and timestamps in ISO form whatever DateStyle the connection starts with", async () => {
    const url = new URL(t().url);
    url.searchParams.set("options", "-c DateStyle=SQL,DMY");
    const db = new Database(url.toString(), { max: 1 });
    try {
      const row = await db.asTenant(principal(), (sql) =>
        sql.one<{ day: string; at: Date }>(
          "select '2010-05-04'::date as day, '2010-05-04 10:11:12.345+00'::timestamptz as at",
          [],
        ),
      );
      expect(row?.day).toBe("2010-05-04");
      expect(row?.at.toISOString()).toBe("2010-05-04T10:11:12.345Z");
      // The setting is the request's only: the connection's own comes back after it.
      const client = await db.pool.connect();
      try {
        expect((await client.query("show DateStyle")).rows[0].DateStyle).toBe("SQL, DMY");
      } finally {
        client.release();
      }
    } finally {
      await db.close();
    }
  });

  it("scopes every statement to the principal's tenant and the API role", async () => {
    const other = await newTenant(t().db);
    const seen = await t().db.asTenant(principal(), (sql) =>
      sql.query<{ id: string; role: string }>("select id, current_user as role from public.tenants", []),
    );
    expect(seen).toEqual([{ id: tenant.tenantId, role: "camp_api" }]);
    expect(seen.map((r) => r.id)).not.toContain(other.tenantId);
  });
});
