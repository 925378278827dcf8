import { beforeAll, describe, expect, it } from "vitest";
import { useTestDatabase } from "./support/database.ts";
import { call, newTenant, signToken, type TestApp, type TestTenant, testApp } from "./support/fixtures.ts";
import { run, TSX } from "./support/processes.ts";

/**
 * Keys keep their limits (issue 27, item 4): regenerate keeps expiry, name
 * and scopes; no key is issued to a deactivated user, by any path; and the
 * last-active-admin rule keeps an admin who can still administer.
 */

const t = useTestDatabase();
let app: TestApp;
let tenant: TestTenant;

beforeAll(async () => {
  app = testApp(t().db);
  tenant = await newTenant(t().db);
});

const generate = (by: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  call(app, "POST", "/api/v1/api-keys/generate", { key: by, body, headers });
const patchUser = (by: string, id: string, body: Record<string, unknown>) =>
  call(app, "PATCH", `/api/v1/users/${id}`, { key: by, body });
const camp = (...args: string[]) => run(TSX, ["cli/main.ts", ...args], { DATABASE_URL: t().url });

describe("regenerate", () => {
  it("keeps the key's expiry, name and scopes", async () => {
    const contractor = await tenant.addUser("staff", { withKey: false });
    const expires = new Date(Date.now() + 7 * 86_400_000);
    const issued = await generate(tenant.admin.key, {
      email: contractor.email,
      expires_at: expires.toISOString(),
      name: "contractor's report",
      scopes: ["read"],
    });
    expect(issued.status).toBe(201);
    const rotated = await call(app, "POST", "/api/v1/api-keys/regenerate", { key: issued.body.data.key });
    expect(rotated.status).toBe(200);
    expect(rotated.body.data).toMatchObject({ name: "contractor's report", scopes: ["read"], revoked_at: null });
    expect(Date.parse(rotated.body.data.expires_at)).toBe(expires.getTime());
    const stored = await t().admin("select expires_at, name, scopes from api_keys where id = $1", [rotated.body.data.id]);
    expect(stored.rows[0]).toEqual({ expires_at: expires, name: "contractor's report", scopes: ["read"] });
  });

  it("keeps them for a Bearer caller rotating their live key too", async () => {
    const user = await tenant.addUser("staff", { withKey: false });
    await t().admin("update users set auth_subject = $1 where id = $2", [`sub-${user.userId}`, user.userId]);
    const token = await signToken({ sub: `sub-${user.userId}` });
    const expires = new Date(Date.now() + 86_400_000);
    expect((await generate(tenant.admin.key, { email: user.email, expires_at: expires.toISOString() })).status).toBe(201);
    const rotated = await call(app, "POST", "/api/v1/api-keys/regenerate", { token });
    expect(rotated.status).toBe(200);
    expect(Date.parse(rotated.body.data.expires_at)).toBe(expires.getTime());
  });
});

describe("`camp keys issue --replace`", () => {
  it("replaces a lost key with one of the same expiry, name and scopes", { timeout: 120_000 }, async () => {
    const user = await tenant.addUser("staff", { withKey: false });
    const expires = new Date(Date.now() + 3 * 86_400_000);
    const body = { email: user.email, expires_at: expires.toISOString(), name: "nightly sync", scopes: ["read"] };
    expect((await generate(tenant.admin.key, body)).status).toBe(201);
    const replaced = await camp("keys", "issue", user.email, "--tenant", tenant.tenantId, "--replace");
    expect(replaced.code, replaced.stderr).toBe(0);
    const mine = await call(app, "GET", "/api/v1/api-keys/my-key", { key: JSON.parse(replaced.stdout).api_key });
    expect(mine.body.data).toMatchObject({ name: "nightly sync", scopes: ["read"] });
    expect(Date.parse(mine.body.data.expires_at)).toBe(expires.getTime());
  });
});

describe("a revoked key", () => {
  it("stays revoked, whoever tries to bring it back", async () => {
    const user = await tenant.addUser("staff");
    const record = (await call(app, "GET", "/api/v1/api-keys/my-key", { key: user.key })).body.data;
    expect((await call(app, "DELETE", "/api/v1/api-keys/revoke", { key: user.key })).status).toBe(200);
    await expect(t().admin("update api_keys set revoked_at = null where id = $1", [record.id])).rejects.toMatchObject({
      code: "CA409",
    });
    expect((await call(app, "GET", "/api/v1/api-keys/my-key", { key: user.key })).status).toBe(401);
  });
});

describe("a deactivated user", () => {
  it("gets no key over HTTP (409 naming the e-mail), and has none when reactivated", async () => {
    const leaver = await tenant.addUser("staff");
    expect((await patchUser(tenant.admin.key, leaver.userId, { active: false })).status).toBe(200);
    const refused = await generate(tenant.admin.key, { email: leaver.email });
    expect(refused.status).toBe(409);
    expect(refused.body.error.details).toMatchObject([{ field: "email" }]);
    const back = await patchUser(tenant.admin.key, leaver.userId, { active: true });
    expect(back.body.data).toMatchObject({ active: true, has_live_key: false });
    expect((await call(app, "GET", "/api/v1/api-keys/my-key", { key: leaver.key })).status).toBe(401);
  });

  it("gets no key from SQL either: the database refuses it", async () => {
    const leaver = await tenant.addUser("staff", { withKey: false });
    await t().admin("update users set active = false where id = $1", [leaver.userId]);
    await expect(
      t().admin(
        "insert into api_keys (tenant_id, user_id, key_hash, key_prefix) values ($1, $2, sha256('x'::bytea), 'camp_xxxxxxxx')",
        [tenant.tenantId, leaver.userId],
      ),
    ).rejects.toMatchObject({ code: "CA409" });
  });

  it("gets no key from `camp keys issue`, and `issue-all` skips them", { timeout: 120_000 }, async () => {
    const own = await newTenant(t().db);
    const leaver = await own.addUser("staff", { withKey: false });
    const stayer = await own.addUser("staff", { withKey: false });
    await t().admin("update users set active = false where id = $1", [leaver.userId]);
    const issued = await camp("keys", "issue", leaver.email, "--tenant", own.tenantId);
    expect(issued.code).toBe(1);
    expect(issued.stdout).toBe("");
    expect(issued.stderr).toMatch(/deactivated/);
    const all = await camp("keys", "issue-all", "--tenant", own.tenantId);
    expect(all.code, all.stderr).toBe(0);
    const emails = all.stdout
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line).email);
    expect(emails).toEqual([stayer.email]);
    const keys = await t().admin("select count(*)::int as n from api_keys where user_id = $1", [leaver.userId]);
    expect(keys.rows[0].n).toBe(0);
  });
});

describe("the last admin who can administer", () => {
  /** A tenant whose admin has a read-write key, beside a second admin whose only key is read-only. */
  async function withReadOnlyAdmin() {
    const own = await newTenant(t().db);
    const reader = await own.addUser("admin", { withKey: false });
    const issued = await generate(own.admin.key, { email: reader.email, scopes: ["read"] });
    expect(issued.status).toBe(201);
    return { own, reader: { ...reader, key: issued.body.data.key as string } };
  }

  it("is neither demoted nor deactivated while the other admin's only key is read-only", async () => {
    const { own } = await withReadOnlyAdmin();
    const demoted = await patchUser(own.admin.key, own.admin.userId, { role: "staff" });
    expect(demoted.status).toBe(409);
    expect(demoted.body.error.details).toMatchObject([{ field: "role" }]);
    const off = await patchUser(own.admin.key, own.admin.userId, { active: false });
    expect(off.status).toBe(409);
    expect(off.body.error.details).toMatchObject([{ field: "active" }]);
    // Nor by SQL: the rule is the database's.
    await expect(t().admin("update users set role = 'staff' where id = $1", [own.admin.userId])).rejects.toMatchObject({
      code: "CA409",
    });
  });

  it("may step down once another admin can administer: a read-write key, or a Bearer identity", async () => {
    const { own, reader } = await withReadOnlyAdmin();
    // The reader signs in with their identity provider: a Bearer token carries every scope of the role.
    await t().admin("update users set auth_subject = $1 where id = $2", [`sub-${reader.userId}`, reader.userId]);
    expect((await patchUser(own.admin.key, own.admin.userId, { role: "staff" })).status).toBe(200);

    const other = await withReadOnlyAdmin();
    const writer = await other.own.addUser("admin");
    expect((await patchUser(other.own.admin.key, other.own.admin.userId, { active: false })).status).toBe(200);
    expect(writer.key).toBeTruthy();
  });

  it("does not count an admin whose read-write key has expired, or who has no key", async () => {
    const own = await newTenant(t().db);
    const lapsed = await own.addUser("admin");
    await t().admin("update api_keys set expires_at = now() - interval '1 minute' where user_id = $1", [lapsed.userId]);
    await own.addUser("admin", { withKey: false });
    expect((await patchUser(own.admin.key, own.admin.userId, { role: "staff" })).status).toBe(409);
  });
});
