import { describe, expect, it } from "vitest";
import { useTestDatabase } from "./support/database.ts";
import { call, testApp } from "./support/fixtures.ts";
import { run, TSX } from "./support/processes.ts";

const t = useTestDatabase();

/** `camp <args>` against this file's database. */
const camp = (...args: string[]) => run(TSX, ["cli/main.ts", ...args], { DATABASE_URL: t().url });

// Every case starts real processes; a loaded machine makes them slow, never wrong.
describe("the camp CLI", { timeout: 120_000 }, () => {
  it("migrate reports an up-to-date database", async () => {
    const res = await camp("migrate");
    expect(res.code).toBe(0);
    expect(res.stdout).toBe("");
    expect(res.stderr).toMatch(/up to date/);
  });

  it("tenant create prints the tenant, its admin and a working key as JSON on stdout", async () => {
    const res = await camp("tenant", "create", "Scouts North", "--admin", "lead@scouts.test");
    expect(res.code).toBe(0);
    const out = JSON.parse(res.stdout);
    expect(Object.keys(out).sort()).toEqual(["api_key", "tenant_id", "user_id"]);
    const mine = await call(testApp(t().db), "GET", "/api/v1/api-keys/my-key", { key: out.api_key });
    expect(mine.status).toBe(200);
    expect(mine.body.data.email).toBe("lead@scouts.test");
    const role = await t().admin("select role from users where id = $1", [out.user_id]);
    expect(role.rows[0].role).toBe("admin");
  });

  it("user add and keys issue give a staff user a working key", async () => {
    const tenant = JSON.parse((await camp("tenant", "create", "Guides", "--admin", "boss@guides.test")).stdout);
    const added = await camp("user", "add", "helper@guides.test", "--tenant", tenant.tenant_id, "--role", "staff");
    expect(added.code).toBe(0);
    expect(JSON.parse(added.stdout)).toMatchObject({ tenant_id: tenant.tenant_id, email: "helper@guides.test", role: "staff" });
    const issued = await camp("keys", "issue", "helper@guides.test");
    expect(issued.code).toBe(0);
    const { api_key, email } = JSON.parse(issued.stdout);
    expect(email).toBe("helper@guides.test");
    expect((await call(testApp(t().db), "GET", "/api/v1/api-keys/my-key", { key: api_key })).status).toBe(200);
  });

  it("keys issue --replace revokes a lost key and prints a new one that works", async () => {
    const tenant = JSON.parse((await camp("tenant", "create", "Rovers", "--admin", "lost@rovers.test")).stdout);
    const replaced = await camp("keys", "issue", "lost@rovers.test", "--replace");
    expect(replaced.code, replaced.stderr).toBe(0);
    const { api_key } = JSON.parse(replaced.stdout);
    const app = testApp(t().db);
    expect((await call(app, "GET", "/api/v1/api-keys/my-key", { key: api_key })).status).toBe(200);
    expect((await call(app, "GET", "/api/v1/api-keys/my-key", { key: tenant.api_key })).status).toBe(401);
  });

  it("keys issue --name gives a user further keys with their own scopes and expiry; --replace --name rotates one", async () => {
    const tenant = JSON.parse((await camp("tenant", "create", "Ventures", "--admin", "chief@ventures.test")).stdout);
    const [reader, carer] = await Promise.all([
      camp("keys", "issue", "chief@ventures.test", "--name", "dashboard", "--scopes", "read", "--expires", "30d"),
      camp("keys", "issue", "chief@ventures.test", "--name", "care script", "--scopes", "care,read,write"),
    ]);
    expect(reader.code, reader.stderr).toBe(0);
    expect(carer.code, carer.stderr).toBe(0);
    const r = JSON.parse(reader.stdout);
    const c = JSON.parse(carer.stdout);
    expect(r).toMatchObject({ email: "chief@ventures.test", tenant_id: tenant.tenant_id, name: "dashboard", scopes: ["read"] });
    const days = (Date.parse(r.expires_at) - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(29.9);
    expect(days).toBeLessThan(30.1);
    expect(c).toMatchObject({ name: "care script", scopes: ["read", "write", "care"], expires_at: null });
    const app = testApp(t().db);
    for (const key of [tenant.api_key, r.api_key, c.api_key]) {
      expect((await call(app, "GET", "/api/v1/api-keys/my-key", { key })).status).toBe(200);
    }
    expect((await call(app, "POST", "/api/v1/instances", { key: r.api_key, body: { name: "No" } })).status).toBe(403);

    // Several live keys: --replace needs --name, and then rotates that one only, keeping its scopes and expiry.
    const [ambiguous, clash, rotated] = await Promise.all([
      camp("keys", "issue", "chief@ventures.test", "--replace"),
      camp("keys", "issue", "chief@ventures.test", "--name", "DASHBOARD"),
      camp("keys", "issue", "chief@ventures.test", "--replace", "--name", "dashboard"),
    ]);
    expect(ambiguous.code).toBe(1);
    expect(ambiguous.stderr).toMatch(/holds 3 live keys .*--name/);
    expect(clash.code).toBe(1);
    expect(clash.stderr).toMatch(/live key with this name/);
    expect(rotated.code, rotated.stderr).toBe(0);
    const next = JSON.parse(rotated.stdout);
    expect(next).toMatchObject({ name: "dashboard", scopes: ["read"], expires_at: r.expires_at });
    expect((await call(app, "GET", "/api/v1/api-keys/my-key", { key: r.api_key })).status).toBe(401);
    for (const key of [tenant.api_key, next.api_key, c.api_key]) {
      expect((await call(app, "GET", "/api/v1/api-keys/my-key", { key })).status).toBe(200);
    }
  });

  it("keys issue refuses bad --scopes and --expires, and --replace with either, before touching the database", async () => {
    const cases: Array<[string[], RegExp]> = [
      [["--name", "x", "--scopes", "write"], /--scopes.*must include "read"/],
      [["--name", "x", "--scopes", "read,admin"], /--scopes.*read, write, care/],
      [["--name", "x", "--expires", "2001-01-01"], /--expires.*future/],
      [["--replace", "--scopes", "read"], /--replace keeps the key's scopes/],
    ];
    const results = await Promise.all(
      cases.map(([args]) =>
        run(TSX, ["cli/main.ts", "keys", "issue", "a@nowhere.test", ...args], {
          DATABASE_URL: "postgresql://nobody@127.0.0.1:1/none",
        }),
      ),
    );
    cases.forEach(([args, message], i) => {
      const res = results[i] as Awaited<ReturnType<typeof camp>>;
      expect({ args, code: res.code }).toEqual({ args, code: 1 });
      expect(res.stdout).toBe("");
      expect(res.stderr).toMatch(message);
    });
  });

  it("tenant list prints every tenant with its id, one JSON line each", async () => {
    const a = JSON.parse((await camp("tenant", "create", "Listed A", "--admin", "a@listed.test")).stdout);
    const listed = await camp("tenant", "list");
    expect(listed.code, listed.stderr).toBe(0);
    const lines = listed.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    const mine = lines.find((line) => line.tenant_id === a.tenant_id);
    expect(mine).toMatchObject({ tenant_id: a.tenant_id, name: "Listed A", users: 1, admins: 1 });
    expect(Object.keys(mine).sort()).toEqual(["admins", "created_at", "name", "tenant_id", "users"]);
    const total = await t().admin("select count(*)::int as n from tenants");
    expect(lines).toHaveLength(total.rows[0].n);
  });

  it("exits non-zero with a one-line message on bad input, and prints nothing on stdout", async () => {
    const tenant = JSON.parse((await camp("tenant", "create", "Cubs", "--admin", "a@cubs.test")).stdout);
    const cases: Array<[string[], RegExp]> = [
      [["tenant", "create", "No admin"], /--admin/],
      [["tenant", "create", "X", "--admin", "not-an-email"], /e-mail/],
      [["user", "add", "x@cubs.test", "--tenant", "not-a-uuid"], /uuid/],
      [["user", "add", "x@cubs.test", "--tenant", "00000000-0000-4000-8000-000000000000"], /tenant not found/],
      [["user", "add", "a@cubs.test", "--tenant", tenant.tenant_id], /already exists/],
      [["user", "add", "y@cubs.test", "--tenant", tenant.tenant_id, "--role", "owner"], /admin or staff/],
      [["keys", "issue", "nobody@cubs.test"], /user not found/],
      [["keys", "issue", "a@cubs.test"], /a@cubs\.test already has a live API key.*--replace.*--name/],
      [["no-such-command"], /unknown command/],
    ];
    // Each case is its own process; run them side by side.
    const results = await Promise.all(cases.map(([args]) => camp(...args)));
    cases.forEach(([args, message], i) => {
      const res = results[i] as Awaited<ReturnType<typeof camp>>;
      expect({ args, code: res.code }).toEqual({ args, code: 1 });
      expect(res.stdout).toBe("");
      expect(res.stderr).toMatch(message);
    });
  });
});
