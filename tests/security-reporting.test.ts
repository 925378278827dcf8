import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectionDetails, enforceReportingLimits, grantReportingRole } from "../functions/reporting/roles.ts";
import { useTestDatabase } from "./support/database.ts";
import { call, newTenant, type TestApp, testApp } from "./support/fixtures.ts";
import { startServerProcess } from "./support/server-process.ts";

/**
 * A reporting role tries every way it has to hurt the service: more
 * connections than it was given, a statement or a transaction that never
 * ends (after lifting its own timeouts), temporary tables and spilled sorts,
 * other databases of the cluster. Each attempt fails, and the API keeps
 * answering while reporting roles hold all they may.
 */

const t = useTestDatabase();
const RUN = `rsec_${randomBytes(4).toString("hex")}`;
const clients: pg.Client[] = [];
const scratchDatabases: string[] = [];
let tenantId = "";
let key = "";
let app: TestApp;

beforeAll(async () => {
  const tenant = await newTenant(t().db);
  tenantId = tenant.tenantId;
  key = tenant.admin.key;
  app = testApp(t().db);
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.end().catch(() => {})));
  const roles = await t().admin("select rolname from pg_roles where rolname like $1", [`${RUN}%`]);
  for (const { rolname } of roles.rows) {
    await t().admin("select pg_terminate_backend(pid) from pg_stat_activity where usename = $1", [rolname]);
    await t().admin(`drop role if exists ${pg.escapeIdentifier(rolname)}`);
  }
  for (const name of scratchDatabases) await t().admin(`drop database if exists ${pg.escapeIdentifier(name)} with (force)`);
});

async function newRole(label: string, options: Parameters<typeof grantReportingRole>[3] = {}) {
  // The budget is the cluster's, shared with every test file running beside this one; its own test sets it.
  const grant = await grantReportingRole(t().db, tenantId, `${RUN}_${label}`, { connectionBudget: 10_000, ...options });
  return { ...grant, url: connectionDetails(t().url, grant).url };
}

async function login(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  // A session the guard ends must not crash the run.
  client.on("error", () => {});
  await client.connect();
  clients.push(client);
  return client;
}

/** The SQLSTATE a promise fails with, or "ok". */
const outcome = (work: Promise<unknown>) =>
  work.then(
    () => "ok",
    (error: { code?: string }) => error.code ?? String(error),
  );

/** Waits until the role has a session in `state` for longer than `ms`. */
async function sessionOlderThan(role: string, state: string, ms: number) {
  for (let i = 0; i < 300; i++) {
    const found = await t().admin(
      `select from pg_stat_activity where usename = $1 and state = $2
         and clock_timestamp() - (case when state = 'active' then query_start else state_change end) > make_interval(secs => $3::float8 / 1000)`,
      [role, state, ms],
    );
    if (found.rowCount) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no ${state} session of ${role}`);
}

describe("a reporting role's limits", () => {
  it("gets no more connections than its limit", async () => {
    const role = await newRole("conn", { connectionLimit: 2 });
    await login(role.url);
    await login(role.url);
    expect(await outcome(login(role.url))).toBe("53300");
  });

  it("starts with its statement and idle timeouts, and cannot lift temp_file_limit", async () => {
    const role = await newRole("settings", { statementTimeoutMs: 4_000, idleTimeoutMs: 7_000, tempFileLimitKb: 2048 });
    const session = await login(role.url);
    const show = async (name: string) => (await session.query(`show ${name}`)).rows[0][name];
    expect(await show("statement_timeout")).toBe("4s");
    expect(await show("idle_in_transaction_session_timeout")).toBe("7s");
    expect(await show("temp_file_limit")).toBe("2MB");
    expect(await outcome(session.query("set temp_file_limit = -1"))).toBe("42501");
    expect(role.warnings.filter((w) => w.includes("temp_file_limit"))).toEqual([]);
  });

  it("has a statement cancelled past its limit, even after setting statement_timeout = 0", async () => {
    const role = await newRole("slow", { statementTimeoutMs: 300 });
    const session = await login(role.url);
    expect(await outcome(session.query("select pg_sleep(5)"))).toBe("57014");

    await session.query("set statement_timeout = 0");
    const running = outcome(session.query("select pg_sleep(60)"));
    await sessionOlderThan(role.role, "active", 300);
    const actions = await enforceReportingLimits(t().db);
    expect(actions.filter((a) => a.role_name === role.role)).toMatchObject([{ action: "cancel" }]);
    expect(await running).toBe("57014");
    // Only what ran too long is cancelled: the session itself goes on.
    expect((await session.query("select 1 as one")).rows).toEqual([{ one: 1 }]);
  });

  it("has a session idle in a transaction ended past its limit, even after lifting its own timeout", async () => {
    const role = await newRole("idle", { idleTimeoutMs: 300 });
    const session = await login(role.url);
    await session.query("set idle_in_transaction_session_timeout = 0");
    await session.query("begin");
    await session.query("select count(*) from reporting.participants");
    await sessionOlderThan(role.role, "idle in transaction", 300);
    const actions = await enforceReportingLimits(t().db);
    expect(actions.filter((a) => a.role_name === role.role)).toMatchObject([{ action: "terminate" }]);
    expect(await outcome(session.query("select 1"))).not.toBe("ok");
  });

  it("is held to its limits by the running server's guard, without anyone calling it", { timeout: 120_000 }, async () => {
    const server = await startServerProcess({ DATABASE_URL: t().url, REPORTING_GUARD_INTERVAL_MS: "200" });
    try {
      const role = await newRole("guarded", { statementTimeoutMs: 300 });
      const session = await login(role.url);
      await session.query("set statement_timeout = 0");
      expect(await outcome(session.query("select pg_sleep(60)"))).toBe("57014");
      const logged = () =>
        server
          .stderr()
          .split("\n")
          .filter((line) => line.startsWith("{"))
          .map((line) => JSON.parse(line))
          .find((entry) => entry.role === role.role);
      for (let i = 0; i < 100 && !logged(); i++) await new Promise((r) => setTimeout(r, 50));
      expect(logged()).toMatchObject({ level: "WARN", action: "cancel", role: role.role });
    } finally {
      await server.stop();
    }
  });

  it("leaves alone what stays within its limits", async () => {
    const role = await newRole("calm", { statementTimeoutMs: 60_000, idleTimeoutMs: 60_000 });
    const session = await login(role.url);
    await session.query("begin");
    const running = outcome(session.query("select pg_sleep(0.5)"));
    await sessionOlderThan(role.role, "active", 100);
    expect((await enforceReportingLimits(t().db)).filter((a) => a.role_name === role.role)).toEqual([]);
    expect(await running).toBe("ok");
    await session.query("commit");
  });

  it("cannot create temporary tables, in a read-write transaction either", async () => {
    const role = await newRole("temp");
    const session = await login(role.url);
    await session.query("set default_transaction_read_only = off");
    expect(await outcome(session.query("create temp table hoard (x text)"))).toBe("42501");
    expect(await outcome(session.query("create temporary table hoard as select 1"))).toBe("42501");
    expect(role.warnings.filter((w) => w.includes("temporary tables"))).toEqual([]);
  });

  it("cannot spill more than its temp_file_limit to disk", async () => {
    const role = await newRole("spill", { tempFileLimitKb: 1024 });
    const session = await login(role.url);
    await session.query("set work_mem = '64kB'");
    const sort = "select count(*) from (select g from generate_series(1, 2000000) g order by g desc offset 1) s";
    expect(await outcome(session.query(sort))).toBe("53400");
  });

  it("is told which other databases it can still reach, and reaches none whose owner revoked PUBLIC's CONNECT", async () => {
    const open = `${RUN}_open`;
    const closed = `${RUN}_closed`;
    for (const name of [open, closed]) {
      await t().admin(`create database ${pg.escapeIdentifier(name)}`);
      scratchDatabases.push(name);
    }
    await t().admin(`revoke connect on database ${pg.escapeIdentifier(closed)} from public`);
    const role = await newRole("reach");
    const reach = role.warnings.find((w) => w.includes("may also connect to")) ?? "";
    expect(reach).toContain(open);
    expect(reach).not.toContain(closed);
    expect(reach).not.toContain(new URL(t().url).pathname.slice(1));
    const elsewhere = (name: string) => {
      const url = new URL(role.url);
      url.pathname = `/${name}`;
      return url.toString();
    };
    expect(await outcome(login(elsewhere(closed)))).toBe("42501");
  });
});

describe("the connection budget of reporting roles", () => {
  it("refuses a role whose limit does not fit the budget, and creates nothing", async () => {
    const role = `${RUN}_over`;
    await expect(grantReportingRole(t().db, tenantId, role, { connectionLimit: 2, connectionBudget: 1 })).rejects.toMatchObject({
      status: 409,
    });
    expect((await t().admin("select from pg_roles where rolname = $1", [role])).rowCount).toBe(0);
  });

  it("keeps the API answering while reporting roles open all the connections they can", async () => {
    const roles = [await newRole("flood_a", { connectionLimit: 3 }), await newRole("flood_b", { connectionLimit: 3 })];
    const attempts = roles.flatMap((role) => Array.from({ length: 28 }, () => outcome(login(role.url))));
    const sessions = await Promise.all(attempts);
    expect(sessions.filter((o) => o === "ok")).toHaveLength(6);
    expect(sessions.filter((o) => o === "53300")).toHaveLength(50);

    // Each admitted session keeps its connection busy while the API serves.
    const busy = clients.slice(-6).map((client) => outcome(client.query("select pg_sleep(1)")));
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => call(app, "GET", "/api/v1/instances", { key }).then((res) => res.status)),
    );
    expect(answers.every((status) => status === 200)).toBe(true);
    await Promise.all(busy);
  });
});
