import fc from "fast-check";
import pg from "pg";
import { beforeAll, describe, expect, it } from "vitest";
import { Database } from "../functions/db/database.ts";
import { quoteLiteral } from "../functions/db/statements.ts";
import { countingDatabase, useTestDatabase } from "./support/database.ts";
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

describe("a one-statement transaction", () => {
  const hostile = ['O\'Brien \\ "x" 😀 $1 ; commit; --', "\\x00"];
  const statement = "select $1::text as a, $2::text as b, $3::bytea as c, $4::int as d, $5::boolean as e, $6::text as f";
  const values = [...hostile, Buffer.from([0, 39, 92, 255]), 42, true, null];

  it("sends the statement with the commit in one round trip once the connection has prepared it, with the same values", async () => {
    const { db, sent } = countingDatabase(t().url);
    try {
      const once = () => db.asTenant(principal(), (sql) => sql.one(statement, values), { oneStatement: true });
      const first = await once();
      expect(sent).toHaveLength(3); // scope, the statement (prepared now), commit
      sent.length = 0;
      const second = await once();
      expect(sent).toHaveLength(2); // scope, execute … ; commit
      expect(sent[1]).toMatch(/^execute camp_\d+\(.*\); commit$/s);
      expect(second).toEqual(first);
      expect(first).toEqual({ a: hostile[0], b: hostile[1], c: Buffer.from([0, 39, 92, 255]), d: 42, e: true, f: null });
    } finally {
      await db.close();
    }
  });

  it("commits a write it sends with the commit, under the tenant scope", async () => {
    const { db, sent } = countingDatabase(t().url);
    try {
      const add = (email: string) =>
        db.asTenant(
          principal(),
          (sql) =>
            sql.one<{ tenant_id: string }>("insert into public.users (email, role) values ($1, 'staff') returning tenant_id", [
              email,
            ]),
          {
            oneStatement: true,
          },
        );
      await add(`first-${crypto.randomUUID()}@example.org`);
      sent.length = 0;
      const email = `second-${crypto.randomUUID()}@example.org`;
      expect((await add(email))?.tenant_id).toBe(tenant.tenantId);
      expect(sent).toHaveLength(2);
      const seen = await t().db.asOwner((sql) => sql.one("select tenant_id from public.users where email = $1", [email]));
      expect(seen).toEqual({ tenant_id: tenant.tenantId });
    } finally {
      await db.close();
    }
  });

  it("rolls back when the statement fails, and the connection serves the next request", async () => {
    const { db } = countingDatabase(t().url);
    try {
      const email = `dup-${crypto.randomUUID()}@example.org`;
      const add = () =>
        db.asTenant(
          principal(),
          (sql) => sql.one("insert into public.users (email, role) values ($1, 'staff') returning id", [email]),
          {
            oneStatement: true,
          },
        );
      await add();
      await expect(add()).rejects.toMatchObject({ code: "23505" });
      expect(
        await db.asTenant(
          principal(),
          (sql) => sql.one("select count(*)::int as n from public.users where email = $1", [email]),
          { oneStatement: true },
        ),
      ).toEqual({ n: 1 });
    } finally {
      await db.close();
    }
  });

  it("refuses a second statement", async () => {
    await expect(
      t().db.asTenant(
        principal(),
        async (sql) => {
          await sql.query("select 1 as one", []);
          return sql.query("select 2 as two", []);
        },
        { oneStatement: true },
      ),
    ).rejects.toThrow("a one-statement transaction was given a second statement");
  });

  it("sends the commit on its own with prepare: false, for transaction-mode poolers", async () => {
    const { db, sent } = countingDatabase(t().url, false);
    try {
      for (let i = 0; i < 2; i++) {
        sent.length = 0;
        expect(await db.asTenant(principal(), (sql) => sql.one(statement, values), { oneStatement: true })).toMatchObject({
          a: hostile[0],
          d: 42,
        });
        expect(sent).toHaveLength(3);
      }
    } finally {
      await db.close();
    }
  });
});

describe("quoteLiteral", () => {
  it("writes every string as pg's escapeLiteral does", () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom("a", "'", "\\", "é", " ", "\n", "x") }), fc.string(), (special, any) => {
        expect(quoteLiteral(special)).toBe(pg.escapeLiteral(special));
        expect(quoteLiteral(any)).toBe(pg.escapeLiteral(any));
      }),
      { numRuns: 500 },
    );
  });

  it("reads back in Postgres as the same string", async () => {
    const values = ["plain", "it's", "back\\slash", "both \\' here", "", "\\"];
    for (const value of values) {
      const [row] = await t().db.query<{ v: string }>(`select ${quoteLiteral(value)} as v`);
      expect(row?.v).toBe(value);
    }
  });
});
