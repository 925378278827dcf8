import { createHash } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { Database } from "../functions/db/database.ts";
import { useTestDatabase } from "./support/database.ts";
import { call, newTenant, signToken, type TestTenant, testApp } from "./support/fixtures.ts";

const t = useTestDatabase();

const KEY_RECORD_FIELDS = [
  "created_at",
  "email",
  "expires_at",
  "id",
  "key_prefix",
  "last_used_at",
  "name",
  "revoked_at",
  "scopes",
  "user_id",
];

let tenant: TestTenant;
beforeAll(async () => {
  tenant = await newTenant(t().db);
});

async function bearerFor(userId: string): Promise<string> {
  await t().admin("update users set auth_subject = $1 where id = $2", [`sub-${userId}`, userId]);
  return signToken({ sub: `sub-${userId}` });
}

describe("POST /api/v1/api-keys/generate", () => {
  it("lets an admin issue a key for a user of the tenant, shown once and stored only as a hash", async () => {
    const user = await tenant.addUser("staff", { withKey: false });
    const res = await call(testApp(t().db), "POST", "/api/v1/api-keys/generate", {
      key: tenant.admin.key,
      body: { email: user.email },
    });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body.data).sort()).toEqual(["key", ...KEY_RECORD_FIELDS].sort());
    expect(res.body.data.key).toMatch(/^camp_[A-Za-z0-9_-]{43}$/);
    expect(res.body.data.key.startsWith(res.body.data.key_prefix)).toBe(true);
    const stored = await t().admin("select key_hash, key_prefix from api_keys where id = $1", [res.body.data.id]);
    expect(stored.rows[0].key_hash).toEqual(createHash("sha256").update(res.body.data.key).digest());
    const everything = JSON.stringify((await t().admin("select * from api_keys where id = $1", [res.body.data.id])).rows);
    expect(everything).not.toContain(res.body.data.key);
    // The new key works.
    const mine = await call(testApp(t().db), "GET", "/api/v1/api-keys/my-key", { key: res.body.data.key });
    expect(mine.status).toBe(200);
    expect(mine.body.data.email).toBe(user.email);
  });

  it("accepts an optional expiry in the future", async () => {
    const user = await tenant.addUser("staff", { withKey: false });
    const expires = new Date(Date.now() + 86_400_000).toISOString();
    const res = await call(testApp(t().db), "POST", "/api/v1/api-keys/generate", {
      key: tenant.admin.key,
      body: { email: user.email, expires_at: expires },
    });
    expect(res.status).toBe(201);
    expect(res.body.data.expires_at).toBe(expires);
  });

  it("lets a user issue their own key with their Bearer token", async () => {
    const user = await tenant.addUser("staff", { withKey: false });
    const res = await call(testApp(t().db), "POST", "/api/v1/api-keys/generate", {
      token: await bearerFor(user.userId),
      body: { email: user.email },
    });
    expect(res.status).toBe(201);
  });

  it("answers 403 when a staff user issues a key for someone else", async () => {
    const staff = await tenant.addUser("staff");
    const other = await tenant.addUser("staff", { withKey: false });
    const byKey = await call(testApp(t().db), "POST", "/api/v1/api-keys/generate", {
      key: staff.key,
      body: { email: other.email },
    });
    expect(byKey.status).toBe(403);
    expect(byKey.body.error.code).toBe("FORBIDDEN");
    const byToken = await call(testApp(t().db), "POST", "/api/v1/api-keys/generate", {
      token: await bearerFor(staff.userId),
      body: { email: other.email },
    });
    expect(byToken.status).toBe(403);
  });

  it("answers 404 for an e-mail that is no user of the caller's tenant, also one of another tenant", async () => {
    const other = await newTenant(t().db);
    for (const email of ["nobody@example.test", other.admin.email]) {
      const res = await call(testApp(t().db), "POST", "/api/v1/api-keys/generate", { key: tenant.admin.key, body: { email } });
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe("NOT_FOUND");
    }
  });

  it("answers 409 when the user already has an active key", async () => {
    const user = await tenant.addUser("staff");
    const res = await call(testApp(t().db), "POST", "/api/v1/api-keys/generate", {
      key: tenant.admin.key,
      body: { email: user.email },
    });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe("CONFLICT");
  });

  it("issues exactly one key when two generates race", async () => {
    const user = await tenant.addUser("staff", { withKey: false });
    const app = testApp(t().db);
    const results = await Promise.all(
      [1, 2].map(() => call(app, "POST", "/api/v1/api-keys/generate", { key: tenant.admin.key, body: { email: user.email } })),
    );
    expect(results.map((r) => r.status).sort()).toEqual([201, 409]);
    const live = await t().admin("select count(*)::int as n from api_keys where user_id = $1 and revoked_at is null", [
      user.userId,
    ]);
    expect(live.rows[0].n).toBe(1);
  });

  it("replaces an expired key instead of refusing", async () => {
    const user = await tenant.addUser("staff");
    await t().admin("update api_keys set expires_at = now() - interval '1 minute' where user_id = $1", [user.userId]);
    const res = await call(testApp(t().db), "POST", "/api/v1/api-keys/generate", {
      key: tenant.admin.key,
      body: { email: user.email },
    });
    expect(res.status).toBe(201);
  });

  it("answers 400 naming the field for a missing or malformed e-mail, or an expiry in the past", async () => {
    const app = testApp(t().db);
    for (const body of [{}, { email: "not-an-email" }, { email: tenant.admin.email, expires_at: "2001-01-01T00:00:00Z" }]) {
      const res = await call(app, "POST", "/api/v1/api-keys/generate", { key: tenant.admin.key, body });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe("VALIDATION_ERROR");
      expect(res.body.error.details[0].field).toMatch(/^(email|expires_at)$/);
    }
  });

  it("answers 401 without a credential", async () => {
    const res = await call(testApp(t().db), "POST", "/api/v1/api-keys/generate", { body: { email: tenant.admin.email } });
    expect(res.status).toBe(401);
  });
});

describe("GET /api/v1/api-keys/my-key", () => {
  it("returns the record of the key in use, never the secret or the hash", async () => {
    const res = await call(testApp(t().db), "GET", "/api/v1/api-keys/my-key", { key: tenant.admin.key });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body.data).sort()).toEqual(KEY_RECORD_FIELDS);
    expect(JSON.stringify(res.body)).not.toContain(tenant.admin.key);
  });

  it("answers 404 for a Bearer caller who has no key", async () => {
    const user = await tenant.addUser("staff", { withKey: false });
    const res = await call(testApp(t().db), "GET", "/api/v1/api-keys/my-key", { token: await bearerFor(user.userId) });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe("NOT_FOUND");
  });

  it("returns a Bearer caller's live key", async () => {
    const user = await tenant.addUser("staff");
    const res = await call(testApp(t().db), "GET", "/api/v1/api-keys/my-key", { token: await bearerFor(user.userId) });
    expect(res.status).toBe(200);
    expect(user.key?.startsWith(res.body.data.key_prefix)).toBe(true);
  });
});

describe("POST /api/v1/api-keys/regenerate", () => {
  it("issues a new key and the old one is refused on the very next request, by every server process", async () => {
    const user = await tenant.addUser("staff");
    // Two apps with their own pools stand for two server processes.
    const other = new Database(t().url, { max: 2 });
    try {
      const appA = testApp(t().db);
      const appB = testApp(other);
      expect((await call(appB, "GET", "/api/v1/api-keys/my-key", { key: user.key })).status).toBe(200);
      const res = await call(appA, "POST", "/api/v1/api-keys/regenerate", {
        key: user.key,
        headers: { "Content-Type": "application/json" },
      });
      expect(res.status).toBe(200);
      expect(res.body.data.key).toMatch(/^camp_/);
      expect(res.body.data.key).not.toBe(user.key);
      expect((await call(appB, "GET", "/api/v1/api-keys/my-key", { key: user.key })).status).toBe(401);
      expect((await call(appA, "GET", "/api/v1/api-keys/my-key", { key: user.key })).status).toBe(401);
      expect((await call(appB, "GET", "/api/v1/api-keys/my-key", { key: res.body.data.key })).status).toBe(200);
    } finally {
      await other.close();
    }
  });

  it("gives one new key when the same key regenerates twice at once; the loser gets 401", async () => {
    const user = await tenant.addUser("staff");
    const app = testApp(t().db);
    const results = await Promise.all([1, 2].map(() => call(app, "POST", "/api/v1/api-keys/regenerate", { key: user.key })));
    expect(results.map((r) => r.status).sort()).toEqual([200, 401]);
    const live = await t().admin("select count(*)::int as n from api_keys where user_id = $1 and revoked_at is null", [
      user.userId,
    ]);
    expect(live.rows[0].n).toBe(1);
  });

  it("answers 404 for a Bearer caller who has no key to replace", async () => {
    const user = await tenant.addUser("staff", { withKey: false });
    const res = await call(testApp(t().db), "POST", "/api/v1/api-keys/regenerate", { token: await bearerFor(user.userId) });
    expect(res.status).toBe(404);
  });
});

describe("DELETE /api/v1/api-keys/revoke", () => {
  it("revokes the caller's key; it is refused afterwards", async () => {
    const user = await tenant.addUser("staff");
    const app = testApp(t().db);
    const res = await call(app, "DELETE", "/api/v1/api-keys/revoke", { key: user.key });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, message: expect.any(String) });
    expect((await call(app, "GET", "/api/v1/api-keys/my-key", { key: user.key })).status).toBe(401);
    const row = await t().admin("select revoked_at from api_keys where user_id = $1", [user.userId]);
    expect(row.rows[0].revoked_at).not.toBeNull();
  });

  it("lets a Bearer caller revoke their live key", async () => {
    const user = await tenant.addUser("staff");
    const app = testApp(t().db);
    const res = await call(app, "DELETE", "/api/v1/api-keys/revoke", { token: await bearerFor(user.userId) });
    expect(res.status).toBe(200);
    expect((await call(app, "GET", "/api/v1/api-keys/my-key", { key: user.key })).status).toBe(401);
  });
});

describe("keys across tenants", () => {
  it("never shows or touches another tenant's keys", async () => {
    const other = await newTenant(t().db);
    const app = testApp(t().db);
    const mine = await call(app, "GET", "/api/v1/api-keys/my-key", { key: other.admin.key });
    expect(mine.body.data.email).toBe(other.admin.email);
    await call(app, "DELETE", "/api/v1/api-keys/revoke", { key: other.admin.key });
    expect((await call(app, "GET", "/api/v1/api-keys/my-key", { key: tenant.admin.key })).status).toBe(200);
  });
});
