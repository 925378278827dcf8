import { beforeAll, describe, expect, it } from "vitest";
import { SCOPES } from "../functions/api-keys/scopes.ts";
import { createDemoTenant } from "../functions/tenants/provisioning.ts";
import { addCampStructure } from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { type CallResult, call, newTenant, signToken, type TestApp, type TestTenant, testApp } from "./support/fixtures.ts";

/**
 * Several live keys per user (issue 40): POST /api-keys issues named keys
 * with their own scopes and expiry beside the others; each is listed with
 * its name and revoked alone; the seed's endpoints act on the key presented.
 */

const t = useTestDatabase();

let app: TestApp;
let tenant: TestTenant;
beforeAll(async () => {
  app = testApp(t().db);
  tenant = await newTenant(t().db);
});

const issue = (body: Record<string, unknown>, credential: { key?: string; token?: string } = { key: tenant.admin.key }) =>
  call(app, "POST", "/api/v1/api-keys", { ...credential, body });

function issued(res: CallResult): { key: string; id: string; name: string; scopes: string[]; expires_at: string | null } {
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data;
}

async function bearerFor(userId: string): Promise<string> {
  await t().admin("update users set auth_subject = $1 where id = $2", [`sub-${userId}`, userId]);
  return signToken({ sub: `sub-${userId}` });
}

const liveCount = async (userId: string) =>
  (
    await t().admin(
      "select count(*)::int as n from api_keys where user_id = $1 and revoked_at is null and (expires_at is null or expires_at > now())",
      [userId],
    )
  ).rows[0].n as number;

describe("POST /api/v1/api-keys", () => {
  it("gives one user several live keys, each with its name, scopes and expiry, each shown once and working", async () => {
    const user = await tenant.addUser("staff");
    const expires = new Date(Date.now() + 7 * 86_400_000).toISOString();
    const importer = await issue({ email: user.email, name: "import script", scopes: ["write", "read"] });
    const location = new URL(importer.headers.get("Location") ?? "", "http://camp.test/api/v1/api-keys").pathname;
    expect(location).toBe(`/api/v1/api-keys/${importer.body.data.id}`);
    const dashboard = issued(await issue({ user_id: user.userId, name: "dashboard", scopes: ["read"], expires_at: expires }));
    const script = issued(importer);
    expect(script).toMatchObject({ name: "import script", scopes: ["read", "write"], expires_at: null });
    expect(dashboard).toMatchObject({ name: "dashboard", scopes: ["read"], expires_at: expires });
    expect(await liveCount(user.userId)).toBe(3);

    // Each key is itself: my-key and /me describe the key presented.
    for (const [key, name] of [
      [script.key, "import script"],
      [dashboard.key, "dashboard"],
      [user.key, null],
    ] as const) {
      const mine = await call(app, "GET", "/api/v1/api-keys/my-key", { key });
      expect(mine.status).toBe(200);
      expect(mine.body.data.name).toBe(name);
      expect(JSON.stringify(mine.body)).not.toContain(key);
    }
    const me = await call(app, "GET", "/api/v1/me", { key: dashboard.key });
    expect(me.body.data.credential).toMatchObject({ type: "api_key", id: dashboard.id, name: "dashboard", scopes: ["read"] });
    // Its own scopes: the dashboard's key reads and writes nothing.
    expect((await call(app, "GET", "/api/v1/instances", { key: dashboard.key })).status).toBe(200);
    expect((await call(app, "POST", "/api/v1/instances", { key: dashboard.key, body: { name: "No" } })).status).toBe(403);
    expect((await call(app, "POST", "/api/v1/instances", { key: script.key, body: { name: "Yes" } })).status).toBe(201);
  });

  it("lists them with their names, never a secret", async () => {
    const user = await tenant.addUser("staff", { withKey: false });
    const a = issued(await issue({ email: user.email, name: "alpha", scopes: ["read"] }));
    const b = issued(await issue({ email: user.email, name: "beta", scopes: ["read", "write", "care"] }));
    const list = await call(app, "GET", `/api/v1/api-keys?user_id=${user.userId}&live=true`, { key: tenant.admin.key });
    expect(list.status).toBe(200);
    expect(list.body.meta.total).toBe(2);
    expect(list.body.data.map((k: { id: string; name: string }) => [k.id, k.name])).toEqual([
      [b.id, "beta"],
      [a.id, "alpha"],
    ]);
    const text = JSON.stringify(list.body);
    expect(text).not.toContain(a.key);
    expect(text).not.toContain(b.key);
  });

  it("revokes each key on its own: the others keep working", async () => {
    const user = await tenant.addUser("staff");
    const one = issued(await issue({ email: user.email, name: "one", scopes: ["read", "write"] }));
    const two = issued(await issue({ email: user.email, name: "two", scopes: ["read", "write"] }));
    const gone = await call(app, "DELETE", `/api/v1/api-keys/${one.id}`, { key: tenant.admin.key });
    expect(gone.status).toBe(200);
    expect((await call(app, "GET", "/api/v1/api-keys/my-key", { key: one.key })).status).toBe(401);
    expect((await call(app, "GET", "/api/v1/api-keys/my-key", { key: two.key })).status).toBe(200);
    expect((await call(app, "GET", "/api/v1/api-keys/my-key", { key: user.key })).status).toBe(200);
    // The seed's revoke revokes the key presented, and only it.
    expect((await call(app, "DELETE", "/api/v1/api-keys/revoke", { key: two.key })).status).toBe(200);
    expect((await call(app, "GET", "/api/v1/api-keys/my-key", { key: two.key })).status).toBe(401);
    expect((await call(app, "GET", "/api/v1/api-keys/my-key", { key: user.key })).status).toBe(200);
    expect(await liveCount(user.userId)).toBe(1);
  });

  it("regenerates the key presented, keeping its name, scopes and expiry, and leaves the others alone", async () => {
    const user = await tenant.addUser("staff");
    const expires = new Date(Date.now() + 3 * 86_400_000).toISOString();
    const care = issued(await issue({ email: user.email, name: "care reader", scopes: ["read", "care"], expires_at: expires }));
    const other = issued(await issue({ email: user.email, name: "other", scopes: ["read", "write"] }));
    const rotated = await call(app, "POST", "/api/v1/api-keys/regenerate", { key: care.key });
    expect(rotated.status).toBe(200);
    expect(rotated.body.data).toMatchObject({ name: "care reader", scopes: ["read", "care"], expires_at: expires });
    expect(rotated.body.data.key).not.toBe(care.key);
    expect((await call(app, "GET", "/api/v1/api-keys/my-key", { key: care.key })).status).toBe(401);
    expect((await call(app, "GET", "/api/v1/api-keys/my-key", { key: rotated.body.data.key })).body.data.name).toBe(
      "care reader",
    );
    for (const key of [other.key, user.key as string]) {
      expect((await call(app, "GET", "/api/v1/api-keys/my-key", { key })).status).toBe(200);
    }
    expect(await liveCount(user.userId)).toBe(3);
  });

  it("refuses a name another live key of the user has (409 naming name), any case; a revoked or expired key's name is free", async () => {
    const user = await tenant.addUser("staff", { withKey: false });
    const first = issued(await issue({ email: user.email, name: "Nightly", scopes: ["read"] }));
    const again = await issue({ email: user.email, name: "nightly", scopes: ["read", "write"] });
    expect(again.status).toBe(409);
    expect(again.body.error.details).toEqual([{ field: "name", issue: expect.stringMatching(/live key with this name/) }]);
    // Another user may use the same name.
    const someone = await tenant.addUser("staff", { withKey: false });
    issued(await issue({ email: someone.email, name: "Nightly", scopes: ["read"] }));
    await call(app, "DELETE", `/api/v1/api-keys/${first.id}`, { key: tenant.admin.key });
    const second = issued(await issue({ email: user.email, name: "Nightly", scopes: ["read"] }));
    await t().admin("update api_keys set expires_at = now() - interval '1 second' where id = $1", [second.id]);
    expect((await call(app, "GET", "/api/v1/api-keys/my-key", { key: second.key })).status).toBe(401);
    issued(await issue({ email: user.email, name: "NIGHTLY", scopes: ["read"] }));
  });

  it("answers 400 for a bad body: both or neither of email and user_id, no name, bad scopes, a past expiry, an unknown field", async () => {
    const user = await tenant.addUser("staff", { withKey: false });
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ name: "x", scopes: ["read"] }, /email|user_id/],
      [{ email: user.email, user_id: user.userId, name: "x", scopes: ["read"] }, /email|user_id/],
      [{ email: user.email, scopes: ["read"] }, /name/],
      [{ email: user.email, name: "  ", scopes: ["read"] }, /name/],
      [{ email: user.email, name: "x" }, /scopes/],
      [{ email: user.email, name: "x", scopes: ["write"] }, /scopes/],
      [{ email: user.email, name: "x", scopes: ["read", "admin"] }, /scopes/],
      [{ email: user.email, name: "x", scopes: ["read"], expires_at: "2001-01-01T00:00:00Z" }, /expires_at/],
      [{ user_id: "not-a-uuid", name: "x", scopes: ["read"] }, /user_id/],
      [{ email: user.email, name: "x", scopes: ["read"], role: "admin" }, /role/],
    ];
    for (const [body, field] of cases) {
      const res = await issue(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.details[0].field, JSON.stringify(body)).toMatch(field);
    }
    expect(await liveCount(user.userId)).toBe(0);
  });

  it("lets a user issue their own further keys with a Bearer token only, and nobody else's (403)", async () => {
    const staff = await tenant.addUser("staff");
    const colleague = await tenant.addUser("staff", { withKey: false });
    const token = await bearerFor(staff.userId);
    issued(await issue({ user_id: staff.userId, name: "my laptop", scopes: ["read"] }, { token }));
    // A key cannot mint keys that would outlive its revocation.
    expect((await issue({ user_id: staff.userId, name: "more", scopes: ["read"] }, { key: staff.key })).status).toBe(403);
    expect((await issue({ email: colleague.email, name: "theirs", scopes: ["read"] }, { token })).status).toBe(403);
    expect((await issue({ email: colleague.email, name: "theirs", scopes: ["read"] }, { key: staff.key })).status).toBe(403);
  });

  it("answers a Bearer caller holding several keys 409 on my-key, regenerate and revoke: the token names none", async () => {
    const staff = await tenant.addUser("staff");
    issued(await issue({ email: staff.email, name: "second", scopes: ["read"] }));
    const token = await bearerFor(staff.userId);
    for (const [method, path] of [
      ["GET", "/api/v1/api-keys/my-key"],
      ["POST", "/api/v1/api-keys/regenerate"],
      ["DELETE", "/api/v1/api-keys/revoke"],
    ] as const) {
      const res = await call(app, method, path, { token });
      expect(res.status, `${method} ${path}`).toBe(409);
      expect(res.body.error.message).toContain(staff.email);
      expect(res.body.error.message).toMatch(/2 live API keys/);
    }
    expect(await liveCount(staff.userId)).toBe(2);
  });

  it("records each key's creation and revocation in the audit trail, with its name and never its secret", async () => {
    const user = await tenant.addUser("staff", { withKey: false });
    const key = issued(await issue({ email: user.email, name: "audited", scopes: ["read"] }));
    await call(app, "DELETE", `/api/v1/api-keys/${key.id}`, { key: tenant.admin.key });
    const events = (await call(app, "GET", `/api/v1/audit-events?resource_id=${key.id}&limit=100`, { key: tenant.admin.key }))
      .body.data;
    expect(events.map((e: { action: string }) => e.action).sort()).toEqual(["create", "update"]);
    const created = events.find((e: { action: string }) => e.action === "create");
    expect(created).toMatchObject({ resource_type: "api_key", actor_email: tenant.admin.email });
    expect(JSON.stringify(created.changes)).toContain("audited");
    const revoked = events.find((e: { action: string }) => e.action === "update");
    expect(Object.keys(revoked.changes)).toEqual(["revoked_at"]);
    expect(JSON.stringify(events)).not.toContain(key.key);
    expect(JSON.stringify(events)).not.toMatch(/key_hash/);
  });
});

describe("the cap on live keys per user", () => {
  it("refuses the 51st live key (409); a revoked or expired key frees a place; racing issues never pass the cap", async () => {
    const user = await tenant.addUser("staff", { withKey: false });
    // 48 live keys made directly (their secrets are never used), then two over HTTP.
    await t().admin(
      `insert into api_keys (tenant_id, user_id, key_hash, key_prefix, name)
       select $1, $2, sha256(gen_random_uuid()::text::bytea), 'camp_xxxx', 'k' || g from generate_series(1, 48) g`,
      [tenant.tenantId, user.userId],
    );
    // Five at once for the last two places: exactly two get one.
    const racing = await Promise.all(
      [1, 2, 3, 4, 5].map((i) => issue({ email: user.email, name: `race ${i}`, scopes: ["read"] })),
    );
    expect(racing.map((r) => r.status).sort()).toEqual([201, 201, 409, 409, 409]);
    expect(await liveCount(user.userId)).toBe(50);
    const over = await issue({ email: user.email, name: "one too many", scopes: ["read"] });
    expect(over.status).toBe(409);
    expect(over.body.error.message).toMatch(/50 live keys/);
    // generate says the user has a key, not the cap.
    const generate = await call(app, "POST", "/api/v1/api-keys/generate", {
      key: tenant.admin.key,
      body: { email: user.email },
    });
    expect(generate.status).toBe(409);
    const [place] = (await t().admin("select id from api_keys where user_id = $1 and name = 'k1'", [user.userId])).rows;
    await call(app, "DELETE", `/api/v1/api-keys/${place.id}`, { key: tenant.admin.key });
    issued(await issue({ email: user.email, name: "one too many", scopes: ["read"] }));
    await t().admin("update api_keys set expires_at = now() - interval '1 second' where user_id = $1 and name = 'k2'", [
      user.userId,
    ]);
    issued(await issue({ email: user.email, name: "after expiry", scopes: ["read"] }));
    expect((await issue({ email: user.email, name: "still too many", scopes: ["read"] })).status).toBe(409);
  });

  it("holds whoever writes: SQL by hand is refused too", async () => {
    const user = await tenant.addUser("staff", { withKey: false });
    await t().admin(
      `insert into api_keys (tenant_id, user_id, key_hash, key_prefix)
       select $1, $2, sha256(gen_random_uuid()::text::bytea), 'camp_xxxx' from generate_series(1, 50)`,
      [tenant.tenantId, user.userId],
    );
    await expect(
      t().admin("insert into api_keys (tenant_id, user_id, key_hash, key_prefix) values ($1, $2, sha256('x'::bytea), 'camp_x')", [
        tenant.tenantId,
        user.userId,
      ]),
    ).rejects.toMatchObject({ code: "CA409" });
  });
});

describe("POST /api/v1/api-keys/generate with several keys about", () => {
  it("still answers 409 for a user with a live key, naming the user and the ways out", async () => {
    const user = await tenant.addUser("staff");
    const res = await call(app, "POST", "/api/v1/api-keys/generate", { key: tenant.admin.key, body: { email: user.email } });
    expect(res.status).toBe(409);
    const message: string = res.body.error.message;
    expect(message).toContain(user.email);
    expect(message).toContain("/api/v1/api-keys/regenerate");
    expect(message).toContain("--replace");
    expect(message).toContain("POST /api/v1/api-keys");
    expect(message).toContain("--name");
    expect(res.body.error.details).toEqual([{ field: "email", issue: "already has a live API key" }]);
  });

  it("issues a first key to a user whose only keys expired", async () => {
    const user = await tenant.addUser("staff");
    await t().admin("update api_keys set expires_at = now() - interval '1 minute' where user_id = $1", [user.userId]);
    const res = await call(app, "POST", "/api/v1/api-keys/generate", { key: tenant.admin.key, body: { email: user.email } });
    expect(res.status).toBe(201);
  });
});

describe("keys across tenants", () => {
  it("another tenant's admin neither sees, issues for, nor revokes this tenant's keys", async () => {
    const stranger = await newTenant(t().db);
    const user = await tenant.addUser("staff", { withKey: false });
    const key = issued(await issue({ email: user.email, name: "private", scopes: ["read"] }));
    const theirs = await call(app, "GET", "/api/v1/api-keys?limit=1000", { key: stranger.admin.key });
    expect(theirs.body.data.map((k: { id: string }) => k.id)).not.toContain(key.id);
    expect((await call(app, "GET", `/api/v1/api-keys/${key.id}`, { key: stranger.admin.key })).status).toBe(404);
    expect((await call(app, "DELETE", `/api/v1/api-keys/${key.id}`, { key: stranger.admin.key })).status).toBe(404);
    for (const body of [
      { user_id: user.userId, name: "sneaky", scopes: ["read"] },
      { email: user.email, name: "sneaky", scopes: ["read"] },
    ]) {
      expect((await issue(body, { key: stranger.admin.key })).status).toBe(404);
    }
    expect((await call(app, "GET", "/api/v1/api-keys/my-key", { key: key.key })).status).toBe(200);
    expect(await liveCount(user.userId)).toBe(1);
  });
});

describe("the demo tenant's key", () => {
  it("carries every scope, care included, and reaches the care routes as its admin may", async () => {
    const demo = await createDemoTenant(t().db, `demo-${Date.now()}@demo.test`);
    const mine = await call(app, "GET", "/api/v1/api-keys/my-key", { key: demo.api_key });
    expect(mine.body.data.scopes).toEqual([...SCOPES]);
    const { instanceId } = await addCampStructure(t(), demo.tenant_id);
    const child = await call(app, "POST", "/api/v1/participants", {
      key: demo.api_key,
      body: { instance_id: instanceId, user_id: "demo-1", first_name: "Ada", surname: "Lovelace" },
    });
    expect(child.status).toBe(201);
    const care = await call(app, "PUT", `/api/v1/participants/${child.body.data.id}/care`, {
      key: demo.api_key,
      body: { allergies: [{ name: "peanuts", severity: "anaphylactic" }] },
    });
    expect(care.status, JSON.stringify(care.body)).toBe(200);
    expect((await call(app, "GET", `/api/v1/participants/${child.body.data.id}/care`, { key: demo.api_key })).status).toBe(200);
  });
});
