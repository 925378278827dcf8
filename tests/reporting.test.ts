import { randomBytes, randomUUID } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkRoleName, connectionDetails, grantReportingRole, revokeReportingRole } from "../functions/reporting/roles.ts";
import { scramSha256Verifier } from "../functions/reporting/scram.ts";
import { useTestDatabase } from "./support/database.ts";
import { run, TSX } from "./support/processes.ts";
import {
  buildDataset,
  byKey,
  type Dataset,
  expectedFigures,
  type Figures,
  insertDataset,
  VIEWS,
  type ViewName,
} from "./support/reporting-dataset.ts";

/**
 * The reporting schema at the SQL level: real logins of per-tenant reporting
 * roles over TCP, Supabase's `authenticated` role with a user's claims, and
 * `anon`. Every view's figures are checked against the same figures computed
 * in TypeScript from the seeded dataset. Roles are cluster-wide, so their
 * names carry this run's random tag and all of them are dropped at the end.
 */

const t = useTestDatabase();
const RUN = `rpt_${randomBytes(4).toString("hex")}`;
const VIEW_NAMES = Object.keys(VIEWS) as ViewName[];

let a: Dataset;
let b: Dataset;
let aSubject: string;
let roleA: { role: string; password: string; url: string };
let roleB: { role: string; url: string };
let asA: pg.Client;
const openClients: pg.Client[] = [];

async function login(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  // A revoked role's session is ended by the server; that must not crash the run.
  client.on("error", () => {});
  await client.connect();
  openClients.push(client);
  return client;
}

async function newRole(tenantId: string, label: string) {
  // Room for this file's sessions; the budget is the cluster's, shared with the test files running beside this one.
  const grant = await grantReportingRole(t().db, tenantId, `${RUN}_${label}`, { connectionLimit: 20, connectionBudget: 10_000 });
  return { ...grant, url: connectionDetails(t().url, grant).url };
}

/** What each view shows, sorted like the expected figures. */
async function readViews(query: (text: string) => Promise<pg.QueryResult>): Promise<Figures> {
  const figures: Record<string, unknown[]> = {};
  for (const view of VIEW_NAMES) figures[view] = byKey((await query(VIEWS[view].query)).rows, VIEWS[view].key);
  return figures as Figures;
}

/** The SQLSTATE a statement fails with, or "ok". */
async function outcome(client: pg.Client | pg.PoolClient, text: string): Promise<string> {
  try {
    await client.query(text);
    return "ok";
  } catch (error) {
    return (error as { code?: string }).code ?? "no code";
  }
}

/** Runs `work` as Supabase's `role` with `claims`, in a transaction that is rolled back. */
async function asSupabase<T>(role: "authenticated" | "anon", claims: object, work: (client: pg.PoolClient) => Promise<T>) {
  const client = await t().db.pool.connect();
  try {
    await client.query("begin");
    await client.query(`set local role ${role}`);
    await client.query("select set_config('request.jwt.claims', $1, true)", [JSON.stringify({ role, ...claims })]);
    return await work(client);
  } finally {
    await client.query("rollback");
    client.release();
  }
}

beforeAll(async () => {
  const tenant = async (name: string) =>
    (await t().admin("insert into public.tenants (name) values ($1) returning id", [name])).rows[0].id as string;
  a = buildDataset(await tenant("Tenant A"), 1, [40, 15]);
  b = buildDataset(await tenant("Tenant B"), 2, [25, 10]);
  // One operator's data load, as `camp participants import` would do it: the dataset puts a
  // room over its capacity on purpose (the views report it), which takes the operator's override.
  const loader = new pg.Client({ connectionString: t().url });
  await loader.connect();
  try {
    await loader.query("begin");
    await loader.query("select private.override_room_capacity()");
    await insertDataset((text, values) => loader.query(text, values), a);
    await insertDataset((text, values) => loader.query(text, values), b);
    await loader.query("commit");
  } finally {
    await loader.end();
  }
  aSubject = randomUUID();
  await t().admin("insert into public.users (tenant_id, email, role, auth_subject) values ($1, 'viewer@a.test', 'staff', $2)", [
    a.tenantId,
    aSubject,
  ]);
  await t().admin("insert into public.users (tenant_id, email, role, auth_subject) values ($1, 'viewer@b.test', 'staff', $2)", [
    b.tenantId,
    randomUUID(),
  ]);
  roleA = await newRole(a.tenantId, "a");
  roleB = await newRole(b.tenantId, "b");
  asA = await login(roleA.url);
});

afterAll(async () => {
  await Promise.all(openClients.map((c) => c.end().catch(() => {})));
  // Every role this run made, by the CLI too; the test database goes with its mappings.
  const roles = await t().admin("select rolname from pg_roles where rolname like $1", [`${RUN}%`]);
  for (const { rolname } of roles.rows) {
    await t().admin("select pg_terminate_backend(pid) from pg_stat_activity where usename = $1", [rolname]);
    await t().admin(`drop role if exists ${pg.escapeIdentifier(rolname)}`);
  }
});

describe("reporting views, as tenant A's reporting role", () => {
  for (const view of VIEW_NAMES) {
    it(`${view} shows exactly tenant A's figures`, async () => {
      const rows = byKey((await asA.query(VIEWS[view].query)).rows, VIEWS[view].key);
      expect(rows.length).toBeGreaterThan(0);
      expect(rows).toEqual(expectedFigures(a)[view]);
    });
  }

  it("shows tenant B's role tenant B's figures, so the figures above are not a coincidence", async () => {
    const asB = await login(roleB.url);
    expect(await readViews((text) => asB.query(text))).toEqual(expectedFigures(b));
  });
});

describe("a reporting role's isolation", () => {
  it("stays in tenant A when it sets request.jwt.claims to tenant B, for the session or the transaction", async () => {
    const client = await login(roleA.url);
    const claims = JSON.stringify({ tenant_id: b.tenantId, role: "camp_api", sub: randomUUID() });
    await client.query("select set_config('request.jwt.claims', $1, false), set_config('request.jwt.claim.sub', $2, false)", [
      claims,
      randomUUID(),
    ]);
    expect(await readViews((text) => client.query(text))).toEqual(expectedFigures(a));
    await client.query("begin");
    await client.query("select set_config('request.jwt.claims', $1, true)", [claims]);
    expect(await readViews((text) => client.query(text))).toEqual(expectedFigures(a));
    await client.query("rollback");
  });

  it("cannot set role to the API role, Supabase's roles, the owner or another tenant's reporting role", async () => {
    const owner = (await t().admin("select current_user as name")).rows[0].name;
    for (const role of ["camp_api", "authenticated", "anon", "service_role", owner, roleB.role]) {
      expect({ role, outcome: await outcome(asA, `set role ${pg.escapeIdentifier(role)}`) }).toEqual({ role, outcome: "42501" });
    }
    expect(await outcome(asA, `set session authorization ${pg.escapeIdentifier(roleB.role)}`)).toBe("42501");
    expect(await outcome(asA, `set session authorization ${pg.escapeIdentifier(owner)}`)).toBe("42501");
  });

  it("may set role camp_reporting, its group, and then still sees only tenant A", async () => {
    const client = await login(roleA.url);
    await client.query("set role camp_reporting");
    expect((await client.query("select current_user::text as c")).rows[0].c).toBe("camp_reporting");
    expect(await readViews((text) => client.query(text))).toEqual(expectedFigures(a));
  });

  it("reads only tenant A's rows from the base tables, and only the columns the views use", async () => {
    // The base table holds soft-deleted rows too: all of A's, none of B's.
    const counted = await asA.query("select count(*) as n from public.participants");
    expect(counted.rows[0].n).toBe(a.participants.length);
    const moved = await asA.query("select count(*)::int as n from public.attendance_movements");
    expect(moved.rows[0].n).toBe(a.movements.length);
    const ids = (await asA.query("select id from public.instances")).rows.map((r) => r.id).sort();
    expect(ids).toEqual(a.instances.map((i) => i.id).sort());
    for (const table of ["instances", "supergroups", "subgroups", "blocks", "rooms", "movements"]) {
      const seen = await asA.query(`select id from public.${table === "movements" ? "attendance_movements" : table}`);
      const theirs = (b as unknown as Record<string, Array<{ id: string }>>)[table]?.map((r) => r.id) ?? [];
      expect(seen.rows.filter((r) => theirs.includes(r.id))).toEqual([]);
    }
    for (const column of ["tenant_id", "photo_link", "pronouns", "*"]) {
      expect({ column, outcome: await outcome(asA, `select ${column} from public.participants`) }).toEqual({
        column,
        outcome: "42501",
      });
    }
  });

  it("cannot read tenants, users, API keys or the role mapping, nor call the service's private functions", async () => {
    const statements = [
      "select count(*) from public.tenants",
      "select count(*) from public.users",
      "select count(*) from public.api_keys",
      "select key_hash from public.api_keys",
      "select * from private.reporting_roles",
      "select * from private.resolve_token_user('x', 'viewer@b.test', true, null)",
      "select * from private.authenticate_api_key(sha256('x'::bytea))",
      "select private.request_tenant_id()",
      "select private.supabase_user_tenant_id()",
      "select * from supabase_migrations.schema_migrations",
      // On site: security codes prove who holds the guardian's slip; pickups' names are care data.
      "select code from public.attendance_codes",
      "select code from public.attendance_present_codes",
      "select tenant_id from public.attendance_movements",
      "select nonce from public.attendance_movements",
      "select name from public.participant_contacts",
      "select name from reporting.participant_contacts",
    ];
    for (const text of statements) {
      expect({ text, outcome: await outcome(asA, text) }).toEqual({ text, outcome: "42501" });
    }
  });

  it("cannot write, not even in a read-write transaction: no insert, update, delete, truncate or DDL", async () => {
    const client = await login(roleA.url);
    // Read-only by default: the first line of defence, which the role may lift...
    expect(await outcome(client, "insert into public.instances (name) values ('x')")).toBe("25006");
    await client.query("set default_transaction_read_only = off");
    // ...but it holds no write privilege anywhere.
    const statements = [
      "insert into public.instances (name) values ('x')",
      `update public.participants set status = 'inactive' where instance_id = '${a.instances[0]?.id}'`,
      "delete from public.participants",
      "truncate public.participants",
      `update private.reporting_roles set tenant_id = '${b.tenantId}'`,
      "insert into public.api_keys (user_id, key_hash, key_prefix) values (gen_random_uuid(), sha256('x'::bytea), 'camp_x')",
      "create table public.mine (x int)",
      "create view reporting.mine as select 1",
      "drop view reporting.participants",
      "alter table public.participants disable row level security",
      `alter role ${pg.escapeIdentifier(roleB.role)} rename to ${pg.escapeIdentifier(`${RUN}_renamed`)}`,
      `alter role ${pg.escapeIdentifier(roleA.role)} bypassrls`,
    ];
    for (const text of statements) {
      expect({ text, outcome: await outcome(client, text) }).toEqual({ text, outcome: "42501" });
    }
    // Its own name is what binds it to its tenant; Postgres never renames a session user.
    const rename = `alter role ${pg.escapeIdentifier(roleA.role)} rename to ${pg.escapeIdentifier(`${RUN}_renamed`)}`;
    expect(await outcome(client, rename)).toBe("0A000");
  });

  it("starts read-only with the reporting schema on its search path", async () => {
    expect((await asA.query("show default_transaction_read_only")).rows[0].default_transaction_read_only).toBe("on");
    const viaPath = await asA.query("select count(*) as n from instance_counts");
    expect(viaPath.rows[0].n).toBe(expectedFigures(a).instance_counts.length);
  });

  it("is a plain login role whose only membership is camp_reporting", async () => {
    const role = await t().admin(
      `select rolcanlogin, rolinherit, rolsuper, rolcreaterole, rolcreatedb, rolreplication, rolbypassrls,
              array(select m.roleid::regrole::text from pg_auth_members m where m.member = r.oid) as member_of
       from pg_roles r where rolname = $1`,
      [roleA.role],
    );
    expect(role.rows[0]).toEqual({
      rolcanlogin: true,
      rolinherit: true,
      rolsuper: false,
      rolcreaterole: false,
      rolcreatedb: false,
      rolreplication: false,
      rolbypassrls: false,
      member_of: ["camp_reporting"],
    });
  });
});

describe("Supabase users (role authenticated)", () => {
  it("see exactly their own tenant's figures through the same views", async () => {
    const figures = await asSupabase("authenticated", { sub: aSubject }, (client) => readViews((text) => client.query(text)));
    expect(figures).toEqual(expectedFigures(a));
  });

  it("take their tenant from their user, not from a tenant_id in the claims", async () => {
    const claims = { sub: aSubject, tenant_id: b.tenantId, app_metadata: { tenant_id: b.tenantId } };
    const figures = await asSupabase("authenticated", claims, (client) => readViews((text) => client.query(text)));
    expect(figures).toEqual(expectedFigures(a));
  });

  it("see nothing with the token of a subject that is no user of any tenant", async () => {
    const counts = await asSupabase("authenticated", { sub: randomUUID() }, async (client) => {
      const n: Record<string, number> = {};
      for (const view of VIEW_NAMES) n[view] = (await client.query(`select count(*) as n from reporting.${view}`)).rows[0].n;
      return n;
    });
    expect(Object.values(counts)).toEqual(VIEW_NAMES.map(() => 0));
  });

  it("cannot write or read the tables the views do not need", async () => {
    const statements = [
      "insert into public.instances (name) values ('x')",
      "update public.participants set status = 'inactive'",
      "delete from public.participants",
      "select count(*) from public.users",
      "select count(*) from public.api_keys",
      "select photo_link from public.participants",
    ];
    for (const text of statements) {
      const result = await asSupabase("authenticated", { sub: aSubject }, (client) => outcome(client, text));
      expect({ text, result }).toEqual({ text, result: "42501" });
    }
  });
});

describe("anon", () => {
  it("is refused every reporting view and every table", async () => {
    const statements = [
      ...VIEW_NAMES.map((view) => `select count(*) from reporting.${view}`),
      ...["tenants", "users", "api_keys", "instances", "supergroups", "subgroups", "blocks", "rooms", "participants"].map(
        (table) => `select count(*) from public.${table}`,
      ),
    ];
    for (const text of statements) {
      const result = await asSupabase("anon", {}, (client) => outcome(client, text));
      expect({ text, result }).toEqual({ text, result: "42501" });
    }
  });
});

describe("the reporting schema", () => {
  it("holds only security_invoker views, each documented, and this file checks every one", async () => {
    const views = await t().admin(
      `select c.relname, c.relkind, 'security_invoker=true' = any (c.reloptions) as invoker,
              obj_description(c.oid, 'pg_class') is not null as documented
       from pg_class c where c.relnamespace = 'reporting'::regnamespace order by 1`,
    );
    // audit_events is checked with the audit trail (tests/audit.test.ts), the care views with care data (tests/care-reporting.test.ts),
    // incidents in tests/incidents.test.ts, medication_administrations in tests/health-retention.test.ts.
    const careViews = [
      "incidents",
      "medication_administrations",
      "participant_care",
      "participant_consents",
      "participant_contacts",
      "participant_medications",
    ];
    expect(views.rows).toEqual(
      [...VIEW_NAMES, "audit_events", ...careViews]
        .sort()
        .map((relname) => ({ relname, relkind: "v", invoker: true, documented: true })),
    );
  });
});

describe("camp reporting", () => {
  const camp = (...args: string[]) => run(TSX, ["cli/main.ts", "reporting", ...args], { DATABASE_URL: t().url });

  it("grant prints a working login once; list shows it; revoke drops it and its open sessions", async () => {
    const role = `${RUN}_cli`;
    const granted = await camp("grant", "--tenant", a.tenantId, "--role", role, "--connection-budget", "10000");
    expect(granted.code).toBe(0);
    const out = JSON.parse(granted.stdout);
    expect(Object.keys(out).sort()).toEqual([
      "care",
      "database",
      "host",
      "limits",
      "password",
      "port",
      "role",
      "tenant_id",
      "url",
      "user",
      "warnings",
    ]);
    expect(out).toMatchObject({
      role,
      user: role,
      tenant_id: a.tenantId,
      care: false,
      database: new URL(t().url).pathname.slice(1),
    });
    expect(out.password).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(granted.stderr).not.toContain(out.password);

    const session = await login(out.url);
    expect((await session.query(VIEWS.instance_counts.query)).rows.length).toBe(expectedFigures(a).instance_counts.length);

    const listed = await camp("list");
    expect(listed.code).toBe(0);
    const rows = listed.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(rows.find((r) => r.role === role)).toMatchObject({
      tenant_id: a.tenantId,
      tenant_name: "Tenant A",
      care: false,
      role_exists: true,
    });
    expect(listed.stdout).not.toContain(out.password);

    const revoked = await camp("revoke", "--role", role);
    expect(revoked.code).toBe(0);
    expect(JSON.parse(revoked.stdout)).toEqual({ role, tenant_id: a.tenantId, dropped: true });
    expect(await outcome(session, "select count(*) from reporting.participants")).not.toBe("ok");
    // The role is gone: 28000 on a server that trusts local logins, 28P01 on one
    // that checks passwords (the embedded Postgres) — either way, no login.
    const refused = await login(out.url).then(
      () => "logged in",
      (error: { code?: string }) => error.code,
    );
    expect(["28000", "28P01"]).toContain(refused);
  });

  it("grant refuses an unknown tenant, an existing role and a bad name, and creates nothing", async () => {
    const cases: Array<[string[], RegExp]> = [
      [["grant", "--tenant", randomUUID(), "--role", `${RUN}_x`], /tenant not found/],
      [["grant", "--tenant", a.tenantId, "--role", roleB.role], /already exists/],
      [["grant", "--tenant", a.tenantId, "--role", "Robert'); drop table users; --"], /lower-case/],
    ];
    for (const [args, message] of cases) {
      const res = await camp(...args);
      expect({ args, code: res.code, stdout: res.stdout }).toEqual({ args, code: 1, stdout: "" });
      expect(res.stderr).toMatch(message);
    }
    expect((await t().admin("select from pg_roles where rolname = $1", [`${RUN}_x`])).rowCount).toBe(0);
    await expect(grantReportingRole(t().db, a.tenantId, "camp_api")).rejects.toThrow(/already exists/);
    for (const name of ["pg_reader", "ab", "Upper", "with space", "x".repeat(64), 'quo"te']) {
      expect(() => checkRoleName(name)).toThrow(/lower-case/);
    }
    const mapping = await t().admin("select tenant_id from private.reporting_roles where role_name = $1", [roleB.role]);
    expect(mapping.rows).toEqual([{ tenant_id: b.tenantId }]);
  });

  it("revoke refuses any role that grant did not make, and drops nothing", async () => {
    const handMade = `${RUN}_hand`;
    await t().admin(`create role ${handMade} login in role camp_reporting`);
    const owner = (await t().admin("select current_user as name")).rows[0].name;
    for (const role of ["camp_api", "camp_reporting", "authenticated", owner, handMade]) {
      await expect(revokeReportingRole(t().db, role)).rejects.toThrow(/not a reporting role|role:/);
      expect((await t().admin("select from pg_roles where rolname = $1", [role])).rowCount).toBe(1);
    }
    await expect(revokeReportingRole(t().db, `${RUN}_nobody`)).rejects.toThrow(/not found/);
  });
});

describe("the password verifier", () => {
  it("is the one Postgres computes itself for the same password and salt", async () => {
    const role = `${RUN}_scram`;
    const password = "Correct-horse_battery-staple-42";
    await t().admin(`set password_encryption = 'scram-sha-256'; create role ${role} password '${password}'`);
    const stored = (await t().admin("select rolpassword from pg_authid where rolname = $1", [role])).rows[0].rolpassword;
    const [, iterations, salt] = /^SCRAM-SHA-256\$(\d+):([^$]+)\$/.exec(stored) ?? [];
    const ours = await scramSha256Verifier(password, {
      iterations: Number(iterations),
      salt: new Uint8Array(Buffer.from(salt ?? "", "base64")),
    });
    expect(ours).toBe(stored);
  });

  it("refuses passwords it cannot hash exactly as Postgres would", async () => {
    await expect(scramSha256Verifier("pässword")).rejects.toThrow(/ASCII/);
  });
});
