import { randomBytes } from "node:crypto";
import { SignJWT } from "jose";
import { type AppDeps, createApp } from "../../functions/app.ts";
import { loadConfig } from "../../functions/config.ts";
import type { Database } from "../../functions/db/database.ts";
import { addUser, createTenant, issueKeyFor, type Role } from "../../functions/tenants/provisioning.ts";
import { validated } from "./contract.ts";

/** The HS256 secret test apps verify Bearer tokens with. */
export const TEST_JWT_SECRET = "test-secret-for-bearer-tokens-only-in-tests";

/** The app as the runtimes serve it, with every answer it gives checked against its OpenAPI document. */
export function testApp(db: Database, env: Record<string, string> = {}, deps: Partial<AppDeps> = {}) {
  // Rate limits off unless a test asks for them: most tests make many requests with one key.
  return validated(
    createApp({
      db,
      config: loadConfig({ AUTH_JWT_SECRET: TEST_JWT_SECRET, RATE_LIMIT_PER_MINUTE: "0", ...env }),
      ...deps,
    }),
  );
}

export type TestApp = ReturnType<typeof testApp>;

const unique = () => randomBytes(4).toString("hex");

export interface TestUser {
  tenantId: string;
  userId: string;
  email: string;
  role: Role;
  /** The user's API key (absent for users created with `withKey: false`). */
  key?: string;
}

export interface TestTenant {
  tenantId: string;
  admin: TestUser & { key: string };
  addUser(role?: Role, options?: { withKey?: boolean; email?: string }): Promise<TestUser>;
}

/** A tenant of the test's own, with an admin who has a key. */
export async function newTenant(db: Database, name = `Tenant ${unique()}`): Promise<TestTenant> {
  const adminEmail = `admin-${unique()}@example.test`;
  const created = await createTenant(db, name, adminEmail);
  const tenantId = created.tenant_id;
  return {
    tenantId,
    admin: { tenantId, userId: created.user_id, email: adminEmail, role: "admin", key: created.api_key },
    async addUser(role = "staff", options = {}) {
      const email = options.email ?? `${role}-${unique()}@example.test`;
      const user = await addUser(db, tenantId, email, role);
      const result: TestUser = { tenantId, userId: user.user_id, email, role };
      if (options.withKey !== false) result.key = (await issueKeyFor(db, user)).key;
      return result;
    },
  };
}

/** A Bearer token as the identity provider would issue it. */
export async function signToken(
  claims: { sub: string; email?: string; tenant_id?: string; email_verified?: boolean; [claim: string]: unknown },
  options: { secret?: string; expiresIn?: string | number; issuer?: string; audience?: string } = {},
): Promise<string> {
  let jwt = new SignJWT({ ...claims }).setProtectedHeader({ alg: "HS256" }).setIssuedAt();
  jwt = jwt.setExpirationTime(options.expiresIn ?? "5m");
  if (options.issuer) jwt = jwt.setIssuer(options.issuer);
  if (options.audience) jwt = jwt.setAudience(options.audience);
  return jwt.sign(new TextEncoder().encode(options.secret ?? TEST_JWT_SECRET));
}

export interface CallOptions {
  key?: string;
  token?: string;
  body?: unknown;
  /** A raw body sent as is (with `headers` giving its type). */
  raw?: BodyInit;
  headers?: Record<string, string>;
}

export interface CallResult {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary response shapes
  body: any;
  headers: Headers;
}

/** One request through the real app (all middleware, no server), with the body parsed. */
export async function call(app: TestApp, method: string, path: string, options: CallOptions = {}): Promise<CallResult> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key) headers["X-API-Key"] = options.key;
  if (options.token) headers.Authorization = `Bearer ${options.token}`;
  let body: BodyInit | undefined = options.raw;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers["Content-Type"] ??= "application/json";
  }
  const response = await app.request(path, { method, headers, body });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // Not JSON (a photo, a CSV): keep the text.
  }
  return { status: response.status, body: parsed, headers: response.headers };
}
