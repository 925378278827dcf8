import { SignJWT } from "jose";
import { beforeAll, describe, expect, it } from "vitest";
import { addCampStructure, type CampStructure } from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { call, newTenant, TEST_JWT_SECRET, type TestApp, type TestTenant, testApp } from "./support/fixtures.ts";
import { type ServerProcess, startServerProcess } from "./support/server-process.ts";

/** Users and keys managed by a tenant's admins over HTTP; key scopes. */

const t = useTestDatabase();
let app: TestApp;
let tenant: TestTenant;
let camp: CampStructure;
let staffKey: string;
let readOnlyKey: string;

beforeAll(async () => {
  app = testApp(t().db);
  tenant = await newTenant(t().db);
  camp = await addCampStructure(t(), tenant.tenantId);
  staffKey = (await tenant.addUser("staff")).key as string;
  const reader = await tenant.addUser("admin", { withKey: false });
  const issued = await call(app, "POST", "/api/v1/api-keys/generate", {
    key: tenant.admin.key,
    body: { email: reader.email, name: "dashboard", scopes: ["read"] },
  });
  expect(issued.status).toBe(201);
  expect(issued.body.data).toMatchObject({ name: "dashboard", scopes: ["read"] });
  readOnlyKey = issued.body.data.key;
});

const tokenFor = (subject: string, email: string) =>
  new SignJWT({ sub: subject, email, email_verified: true })
    .setProtectedHeader({ alg: "HS256" })
    .setExpirationTime("5m")
    .sign(new TextEncoder().encode(TEST_JWT_SECRET));

describe("users over HTTP", () => {
  it("lets an admin add, list, read and change users; 409 for an e-mail the tenant has", async () => {
    const key = tenant.admin.key;
    const added = await call(app, "POST", "/api/v1/users", { key, body: { email: "new.helper@example.test", role: "staff" } });
    expect(added.status).toBe(201);
    expect(added.body.data).toMatchObject({ email: "new.helper@example.test", role: "staff", active: true, has_live_key: false });
    expect(added.headers.get("location")).toContain(added.body.data.id);
    const again = await call(app, "POST", "/api/v1/users", { key, body: { email: "NEW.helper@example.test", role: "admin" } });
    expect(again.status).toBe(409);

    const listed = await call(app, "GET", "/api/v1/users?role=staff&q=helper", { key });
    expect(listed.body.data.map((u: { email: string }) => u.email)).toEqual(["new.helper@example.test"]);
    expect((await call(app, "GET", `/api/v1/users/${added.body.data.id}`, { key })).body.data.id).toBe(added.body.data.id);

    const promoted = await call(app, "PATCH", `/api/v1/users/${added.body.data.id}`, { key, body: { role: "admin" } });
    expect(promoted.body.data.role).toBe("admin");
    expect((await call(app, "PATCH", `/api/v1/users/${added.body.data.id}`, { key, body: {} })).status).toBe(400);
  });

  it("answers staff and read-only keys with 403 on every user and key management endpoint", async () => {
    const someone = (await call(app, "GET", "/api/v1/users?limit=1", { key: tenant.admin.key })).body.data[0].id;
    const key = (await call(app, "GET", "/api/v1/api-keys/my-key", { key: staffKey })).body.data.id;
    const cases: Array<[string, string, unknown?]> = [
      ["GET", "/api/v1/users"],
      ["GET", `/api/v1/users/${someone}`],
      ["POST", "/api/v1/users", { email: "x@example.test", role: "staff" }],
      ["PATCH", `/api/v1/users/${someone}`, { active: false }],
      ["GET", "/api/v1/api-keys"],
      ["DELETE", `/api/v1/api-keys/${key}`],
      ["GET", "/api/v1/audit-events"],
    ];
    for (const [method, path, body] of cases) {
      expect((await call(app, method, path, { key: staffKey, body })).status, `staff ${method} ${path}`).toBe(403);
    }
    // A read-only admin key reads them, and writes nothing.
    expect((await call(app, "GET", "/api/v1/users", { key: readOnlyKey })).status).toBe(200);
    for (const [method, path, body] of cases.filter(([method]) => method !== "GET")) {
      expect((await call(app, method, path, { key: readOnlyKey, body })).status, `read-only ${method} ${path}`).toBe(403);
    }
  });

  it("keeps the last active admin: neither demoted nor deactivated (409), also when two admins race", async () => {
    const own = await newTenant(t().db);
    const second = await own.addUser("admin");
    const demote = (who: string, by: string) => call(app, "PATCH", `/api/v1/users/${who}`, { key: by, body: { role: "staff" } });
    // Alone, an admin cannot demote or deactivate themself.
    const alone = await newTenant(t().db);
    expect((await demote(alone.admin.userId, alone.admin.key)).status).toBe(409);
    const off = await call(app, "PATCH", `/api/v1/users/${alone.admin.userId}`, {
      key: alone.admin.key,
      body: { active: false },
    });
    expect(off.status).toBe(409);
    expect(off.body.error.details).toMatchObject([{ field: "active" }]);
    // Two admins demoting each other at once: one wins; the other is refused, as the last admin (409) or,
    // when its key was looked up after the first commit, as no longer an admin (403).
    const both = await Promise.all([demote(own.admin.userId, second.key as string), demote(second.userId, own.admin.key)]);
    const statuses = both.map((r) => r.status).sort();
    expect(statuses[0]).toBe(200);
    expect([403, 409]).toContain(statuses[1]);
    const admins = await t().admin("select count(*)::int as n from users where tenant_id = $1 and role = 'admin' and active", [
      own.tenantId,
    ]);
    expect(admins.rows[0].n).toBe(1);
  });

  it("deactivates a user: keys revoked, Bearer tokens refused from the next request, seen by another process", async () => {
    const server: ServerProcess = await startServerProcess({ DATABASE_URL: t().url, AUTH_JWT_SECRET: TEST_JWT_SECRET });
    try {
      const leaver = await tenant.addUser("staff");
      const token = await tokenFor(`sub-${leaver.userId}`, leaver.email);
      const get = (headers: Record<string, string>) => fetch(`${server.url}/api/v1/instances`, { headers });
      expect((await get({ "X-API-Key": leaver.key as string })).status).toBe(200);
      expect((await get({ Authorization: `Bearer ${token}` })).status).toBe(200);
      const off = await call(app, "PATCH", `/api/v1/users/${leaver.userId}`, { key: tenant.admin.key, body: { active: false } });
      expect(off.body.data).toMatchObject({ active: false, has_live_key: false });
      expect((await get({ "X-API-Key": leaver.key as string })).status).toBe(401);
      expect((await get({ Authorization: `Bearer ${token}` })).status).toBe(401);
    } finally {
      await server.stop();
    }
  });
});

describe("keys over HTTP", () => {
  it("lists every key of the tenant for admins, never a secret or hash, with filters", async () => {
    const all = await call(app, "GET", "/api/v1/api-keys?limit=1000", { key: tenant.admin.key });
    expect(all.status).toBe(200);
    expect(all.body.meta.total).toBeGreaterThanOrEqual(3);
    const text = JSON.stringify(all.body);
    expect(text).not.toMatch(/camp_[A-Za-z0-9_-]{43}/);
    expect(text).not.toMatch(/key_hash/);
    const mine = await call(app, "GET", `/api/v1/api-keys?user_id=${tenant.admin.userId}&live=true`, { key: tenant.admin.key });
    expect(mine.body.data.map((k: { user_id: string }) => k.user_id)).toEqual([tenant.admin.userId]);
  });

  it("lets an admin revoke any key of the tenant: 401 on its next request, on every process", async () => {
    const victim = await tenant.addUser("staff");
    const record = (await call(app, "GET", "/api/v1/api-keys/my-key", { key: victim.key })).body.data;
    const server = await startServerProcess({ DATABASE_URL: t().url });
    try {
      expect((await fetch(`${server.url}/api/v1/instances`, { headers: { "X-API-Key": victim.key as string } })).status).toBe(
        200,
      );
      expect((await call(app, "DELETE", `/api/v1/api-keys/${record.id}`, { key: tenant.admin.key })).status).toBe(200);
      expect((await fetch(`${server.url}/api/v1/instances`, { headers: { "X-API-Key": victim.key as string } })).status).toBe(
        401,
      );
      expect((await call(app, "DELETE", `/api/v1/api-keys/${record.id}`, { key: tenant.admin.key })).status).toBe(409);
    } finally {
      await server.stop();
    }
  });

  it("refuses a read-only key every method but GET and HEAD, and keeps name and scopes on regenerate", async () => {
    expect((await call(app, "GET", "/api/v1/participants", { key: readOnlyKey })).status).toBe(200);
    expect((await call(app, "HEAD", "/api/v1/participants", { key: readOnlyKey })).status).toBe(200);
    const writes: Array<[string, string, unknown]> = [
      ["POST", "/api/v1/instances", { name: "No" }],
      ["PATCH", `/api/v1/instances/${camp.instanceId}`, { name: "No" }],
      ["PUT", `/api/v1/rooms/${camp.roomId}`, { capacity: 3 }],
      ["DELETE", `/api/v1/blocks/${camp.blockId}`, undefined],
      ["POST", "/api/v1/participants/bulk", { participants: [] }],
    ];
    for (const [method, path, body] of writes) {
      const res = await call(app, method, path, { key: readOnlyKey, body });
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(res.body.error.code).toBe("FORBIDDEN");
    }
    const rotated = await call(app, "POST", "/api/v1/api-keys/regenerate", { key: readOnlyKey });
    expect(rotated.status).toBe(200);
    expect(rotated.body.data).toMatchObject({ name: "dashboard", scopes: ["read"] });
    readOnlyKey = rotated.body.data.key;
    expect((await call(app, "POST", "/api/v1/instances", { key: readOnlyKey, body: { name: "Still no" } })).status).toBe(403);
  });

  it("refuses a read-only key on every write operation of the OpenAPI document but rotating or revoking itself", async () => {
    const document = (await call(app, "GET", "/api/v1/openapi.json")).body;
    let checked = 0;
    for (const [path, item] of Object.entries(document.paths as Record<string, Record<string, unknown>>)) {
      for (const method of Object.keys(item).filter((m) => !["get", "head"].includes(m))) {
        if (/api-keys\/(regenerate|revoke)$/.test(path) || !path.startsWith("/api/v1/")) continue;
        const url = path.replace(/\{[^}]+\}/g, camp.instanceId);
        const res = await call(app, method.toUpperCase(), url, { key: readOnlyKey, body: {} });
        expect(res.status, `${method} ${path}`).toBe(403);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(20);
  });

  it("refuses a bad scope list", async () => {
    const user = await tenant.addUser("staff", { withKey: false });
    for (const scopes of [["write"], ["read", "read"], [], ["admin"]]) {
      const res = await call(app, "POST", "/api/v1/api-keys/generate", {
        key: tenant.admin.key,
        body: { email: user.email, scopes },
      });
      expect(res.status, JSON.stringify(scopes)).toBe(400);
    }
  });
});

describe("another tenant's credential", () => {
  let stranger: TestTenant;
  beforeAll(async () => {
    stranger = await newTenant(t().db);
  });

  it("sees and changes none of this tenant's users, keys or audit events", async () => {
    const someone = (await call(app, "GET", "/api/v1/users?limit=1", { key: tenant.admin.key })).body.data[0].id;
    const key = (await call(app, "GET", "/api/v1/api-keys/my-key", { key: staffKey })).body.data.id;
    expect((await call(app, "GET", `/api/v1/users/${someone}`, { key: stranger.admin.key })).status).toBe(404);
    expect(
      (await call(app, "PATCH", `/api/v1/users/${someone}`, { key: stranger.admin.key, body: { active: false } })).status,
    ).toBe(404);
    expect((await call(app, "DELETE", `/api/v1/api-keys/${key}`, { key: stranger.admin.key })).status).toBe(404);
    expect((await call(app, "GET", `/api/v1/api-keys/${key}`, { key: stranger.admin.key })).status).toBe(404);
    const theirUsers = (await call(app, "GET", "/api/v1/users?limit=1000", { key: stranger.admin.key })).body.data;
    expect(theirUsers.map((u: { email: string }) => u.email)).toEqual([stranger.admin.email]);
    const theirKeys = (await call(app, "GET", "/api/v1/api-keys?limit=1000", { key: stranger.admin.key })).body.data;
    expect(theirKeys.every((k: { user_id: string }) => k.user_id === stranger.admin.userId)).toBe(true);
    const events = (await call(app, "GET", `/api/v1/audit-events?resource_id=${someone}`, { key: stranger.admin.key })).body;
    expect(events.meta.total).toBe(0);
    expect((await call(app, "POST", `/api/v1/participants/${camp.instanceId}/erase`, { key: stranger.admin.key })).status).toBe(
      404,
    );
  });
});
