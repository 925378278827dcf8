import { createServer, type Server } from "node:http";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useTestDatabase } from "./support/database.ts";
import { call, newTenant, signToken, type TestTenant, testApp } from "./support/fixtures.ts";

const t = useTestDatabase();
const MY_KEY = "/api/v1/api-keys/my-key";

let tenant: TestTenant;
beforeAll(async () => {
  tenant = await newTenant(t().db);
});

function expectUnauthorized(res: { status: number; body: { success: boolean; error: { code: string } } }) {
  expect(res.status).toBe(401);
  expect(res.body.success).toBe(false);
  expect(res.body.error.code).toBe("UNAUTHORIZED");
}

describe("API keys as credentials", () => {
  it("accepts a live key", async () => {
    const res = await call(testApp(t().db), "GET", MY_KEY, { key: tenant.admin.key });
    expect(res.status).toBe(200);
    expect(res.body.data.email).toBe(tenant.admin.email);
  });

  it("answers 401 without any credential", async () => {
    expectUnauthorized(await call(testApp(t().db), "GET", MY_KEY));
  });

  it("answers 401 for an unknown key of the right shape", async () => {
    expectUnauthorized(await call(testApp(t().db), "GET", MY_KEY, { key: `camp_${"A".repeat(43)}` }));
  });

  it("answers 401 for a malformed key", async () => {
    expectUnauthorized(await call(testApp(t().db), "GET", MY_KEY, { key: "not-a-key" }));
  });

  it("answers 401 for a revoked key", async () => {
    const user = await tenant.addUser("staff");
    await t().admin("update api_keys set revoked_at = now() where user_id = $1", [user.userId]);
    expectUnauthorized(await call(testApp(t().db), "GET", MY_KEY, { key: user.key }));
  });

  it("answers 401 for an expired key", async () => {
    const user = await tenant.addUser("staff");
    await t().admin("update api_keys set expires_at = now() - interval '1 second' where user_id = $1", [user.userId]);
    expectUnauthorized(await call(testApp(t().db), "GET", MY_KEY, { key: user.key }));
  });

  it("uses the API key when both an API key and a Bearer token are sent", async () => {
    const other = await tenant.addUser("staff", { withKey: false });
    await t().admin("update users set auth_subject = $1 where id = $2", ["sub-both", other.userId]);
    const token = await signToken({ sub: "sub-both" });
    const res = await call(testApp(t().db), "GET", MY_KEY, { key: tenant.admin.key, token });
    expect(res.status).toBe(200);
    expect(res.body.data.email).toBe(tenant.admin.email);
  });

  it("records use at most once a minute", async () => {
    const user = await tenant.addUser("staff");
    const app = testApp(t().db);
    await call(app, "GET", MY_KEY, { key: user.key });
    const first = await t().admin("select last_used_at from api_keys where user_id = $1", [user.userId]);
    await call(app, "GET", MY_KEY, { key: user.key });
    const second = await t().admin("select last_used_at from api_keys where user_id = $1", [user.userId]);
    expect(first.rows[0].last_used_at).not.toBeNull();
    expect(second.rows[0].last_used_at).toEqual(first.rows[0].last_used_at);
  });
});

describe("Bearer tokens (HS256 secret)", () => {
  it("maps a token to its user by subject", async () => {
    const user = await tenant.addUser("staff", { withKey: false });
    await t().admin("update users set auth_subject = $1 where id = $2", [`sub-${user.userId}`, user.userId]);
    const token = await signToken({ sub: `sub-${user.userId}` });
    const res = await call(testApp(t().db), "POST", "/api/v1/api-keys/generate", { token, body: { email: user.email } });
    expect(res.status).toBe(201);
    expect(res.body.data.email).toBe(user.email);
  });

  it("maps a token to its user by e-mail, case-insensitively, when the subject is unknown", async () => {
    const user = await tenant.addUser("staff", { withKey: false });
    const token = await signToken({ sub: "idp|unlinked", email: user.email.toUpperCase(), email_verified: true });
    const res = await call(testApp(t().db), "POST", "/api/v1/api-keys/generate", { token, body: { email: user.email } });
    expect(res.status).toBe(201);
  });

  it("answers 401 for an expired token", async () => {
    const user = await tenant.addUser("staff", { withKey: false });
    const token = await signToken({ sub: "x", email: user.email }, { expiresIn: Math.floor(Date.now() / 1000) - 60 });
    expectUnauthorized(await call(testApp(t().db), "GET", MY_KEY, { token }));
  });

  it("answers 401 for a token without exp", async () => {
    const user = await tenant.addUser("staff", { withKey: false });
    const token = await new SignJWT({ sub: "x", email: user.email })
      .setProtectedHeader({ alg: "HS256" })
      .sign(new TextEncoder().encode("test-secret-for-bearer-tokens-only-in-tests"));
    expectUnauthorized(await call(testApp(t().db), "GET", MY_KEY, { token }));
  });

  it("answers 401 for a token signed with another secret", async () => {
    const token = await signToken({ sub: "x", email: tenant.admin.email }, { secret: "some-other-secret" });
    expectUnauthorized(await call(testApp(t().db), "GET", MY_KEY, { token }));
  });

  it("answers 401 for a valid token of no known user", async () => {
    const token = await signToken({ sub: "nobody", email: "nobody@example.test" });
    expectUnauthorized(await call(testApp(t().db), "GET", MY_KEY, { token }));
  });

  it("says why a token is refused on a server with no Bearer settings, naming them", async () => {
    const app = testApp(t().db, { AUTH_JWT_SECRET: "", AUTH_JWKS_URL: "" });
    const res = await call(app, "GET", MY_KEY, { token: await signToken({ sub: "x", email: tenant.admin.email }) });
    expectUnauthorized(res);
    expect(res.body.error.message).toMatch(/not accepted by this server/);
    expect(res.body.error.message).toContain("AUTH_JWT_SECRET");
    expect(res.body.error.message).toContain("AUTH_JWKS_URL");
    // The same token where the secret is set is merely of no known user: the message is about the setting only.
    const configured = await call(testApp(t().db), "GET", MY_KEY, { token: await signToken({ sub: "x" }) });
    expect(configured.body.error.message).not.toContain("AUTH_JWT_SECRET");
  });

  it("names email_verified when a token's e-mail matches a user but is not said to be verified", async () => {
    const user = await tenant.addUser("staff", { withKey: false });
    const app = testApp(t().db);
    const unverified = await call(app, "GET", MY_KEY, { token: await signToken({ sub: "idp|unverified", email: user.email }) });
    expectUnauthorized(unverified);
    expect(unverified.body.error.message).toContain("email_verified");
    expect(unverified.body.error.message).toContain("AUTH_ASSUME_EMAIL_VERIFIED");
    const falseClaim = await signToken({ sub: "idp|unverified", email: user.email, email_verified: false });
    expect((await call(app, "GET", MY_KEY, { token: falseClaim })).body.error.message).toContain("email_verified");
    // Verified, the same e-mail finds the user (who has no key yet: 404, not 401).
    const verified = await signToken({ sub: "idp|unverified", email: user.email, email_verified: true });
    expect((await call(app, "GET", MY_KEY, { token: verified })).status).toBe(404);
  });

  it("does not hint at email_verified for a token whose e-mail was verified but finds no user", async () => {
    const res = await call(testApp(t().db), "GET", MY_KEY, {
      token: await signToken({ sub: "nobody-2", email: "nobody-2@example.test", email_verified: true }),
    });
    expectUnauthorized(res);
    expect(res.body.error.message).toBe("token does not belong to a known user");
  });

  it("answers 401 for a malformed Authorization header", async () => {
    const res = await call(testApp(t().db), "GET", MY_KEY, { headers: { Authorization: "Basic abc" } });
    expectUnauthorized(res);
  });

  it("answers 401 when an e-mail belongs to users of two tenants, unless a tenant_id claim picks one", async () => {
    const other = await newTenant(t().db);
    const email = `shared-${Date.now()}@example.test`;
    await tenant.addUser("staff", { withKey: false, email });
    await other.addUser("staff", { withKey: false, email });
    const app = testApp(t().db);
    expectUnauthorized(
      await call(app, "GET", MY_KEY, { token: await signToken({ sub: "idp|shared", email, email_verified: true }) }),
    );
    const picked = await call(app, "POST", "/api/v1/api-keys/generate", {
      token: await signToken({ sub: "idp|shared", email, email_verified: true, tenant_id: other.tenantId }),
      body: { email },
    });
    expect(picked.status).toBe(201);
  });

  it("checks issuer and audience when they are configured", async () => {
    const user = await tenant.addUser("staff", { withKey: false });
    const app = testApp(t().db, { AUTH_JWT_ISSUER: "https://idp.example", AUTH_JWT_AUDIENCE: "camp" });
    const good = await signToken(
      { sub: "idp|issuer", email: user.email, email_verified: true },
      { issuer: "https://idp.example", audience: "camp" },
    );
    const wrongIssuer = await signToken(
      { sub: "idp|issuer", email: user.email, email_verified: true },
      { issuer: "https://evil.example", audience: "camp" },
    );
    const wrongAudience = await signToken(
      { sub: "idp|issuer", email: user.email, email_verified: true },
      { issuer: "https://idp.example", audience: "other" },
    );
    expect((await call(app, "GET", MY_KEY, { token: good })).status).toBe(404); // known user, no key yet
    expectUnauthorized(await call(app, "GET", MY_KEY, { token: wrongIssuer }));
    expectUnauthorized(await call(app, "GET", MY_KEY, { token: wrongAudience }));
  });
});

describe("Bearer tokens (JWKS)", () => {
  let server: Server;
  let jwksUrl: string;
  let privateKey: CryptoKey;

  beforeAll(async () => {
    const pair = await generateKeyPair("RS256", { extractable: true });
    privateKey = pair.privateKey;
    const jwk = { ...(await exportJWK(pair.publicKey)), kid: "test-key", alg: "RS256", use: "sig" };
    server = createServer((_req, res) => {
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ keys: [jwk] }));
    });
    await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
    const address = server.address();
    jwksUrl = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}/.well-known/jwks.json`;
  });

  afterAll(() => new Promise<void>((done) => server.close(() => done())));

  const rs256 = (claims: Record<string, unknown>, key: CryptoKey, exp: string | number = "5m") =>
    new SignJWT(claims).setProtectedHeader({ alg: "RS256", kid: "test-key" }).setExpirationTime(exp).sign(key);

  it("accepts an RS256 token signed by a key of the set", async () => {
    const user = await tenant.addUser("staff");
    const app = testApp(t().db, { AUTH_JWKS_URL: jwksUrl });
    const res = await call(app, "GET", MY_KEY, {
      token: await rs256({ sub: "jwks-user", email: user.email, email_verified: true }, privateKey),
    });
    expect(res.status).toBe(200);
    expect(res.body.data.email).toBe(user.email);
  });

  it("refuses a token signed by a key outside the set", async () => {
    const stranger = await generateKeyPair("RS256");
    const app = testApp(t().db, { AUTH_JWKS_URL: jwksUrl });
    expectUnauthorized(
      await call(app, "GET", MY_KEY, { token: await rs256({ sub: "x", email: tenant.admin.email }, stranger.privateKey) }),
    );
  });

  it("refuses an expired RS256 token", async () => {
    const app = testApp(t().db, { AUTH_JWKS_URL: jwksUrl });
    const expired = await rs256({ sub: "x", email: tenant.admin.email }, privateKey, Math.floor(Date.now() / 1000) - 60);
    expectUnauthorized(await call(app, "GET", MY_KEY, { token: expired }));
  });
});
