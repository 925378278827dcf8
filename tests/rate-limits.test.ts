import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CampStructure, tenantWithCamp } from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { call, TEST_JWT_SECRET, type TestTenant, testApp } from "./support/fixtures.ts";
import { type ServerProcess, startServerProcess } from "./support/server-process.ts";

/** Rate limits per API key (per user for Bearer callers), counted in the database across processes. */

const t = useTestDatabase();
let tenant: TestTenant;
let camp: CampStructure;

beforeAll(async () => {
  ({ tenant, camp } = await tenantWithCamp(t()));
});

const limited = (perMinute: number) => testApp(t().db, { RATE_LIMIT_PER_MINUTE: String(perMinute) });

/**
 * A key of its own for each test, handed out away from the end of a minute
 * (the limits' window), so that a test's requests fall in one window.
 */
async function freshKey(): Promise<string> {
  const key = (await tenant.addUser("admin")).key as string;
  const intoMinute = (Date.now() / 1000) % 60;
  if (intoMinute > 50) await new Promise((r) => setTimeout(r, (61 - intoMinute) * 1000));
  return key;
}

const field = (header: string | null, name: string) => Number(new RegExp(`;${name}=(\\d+)`).exec(header ?? "")?.[1]);

describe("rate limits", () => {
  it("tell every answer what is left, and answer 429 with Retry-After once it is spent", async () => {
    const app = limited(5);
    const key = await freshKey();
    const remaining: number[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await call(app, "GET", "/api/v1/instances", { key });
      expect(res.status).toBe(200);
      expect(res.headers.get("ratelimit-policy")).toBe('"default";q=5;w=60');
      remaining.push(field(res.headers.get("ratelimit"), "r"));
    }
    // A window may end between two requests; within one, each request takes one.
    expect(remaining.at(-1)).toBeLessThan(remaining[0] as number);
    let over = await call(app, "GET", "/api/v1/instances", { key });
    if (over.status !== 429) over = await call(app, "GET", "/api/v1/instances", { key });
    expect(over.status).toBe(429);
    expect(over.body.error.code).toBe("TOO_MANY_REQUESTS");
    const retry = Number(over.headers.get("retry-after"));
    expect(retry).toBeGreaterThanOrEqual(1);
    expect(retry).toBeLessThanOrEqual(60);
    expect(field(over.headers.get("ratelimit"), "r")).toBe(0);
    expect(field(over.headers.get("ratelimit"), "t")).toBe(retry);
  });

  it("counts per key: another key of the same tenant is not held back", async () => {
    const app = limited(2);
    const spent = await freshKey();
    for (let i = 0; i < 4; i++) await call(app, "GET", "/api/v1/instances", { key: spent });
    expect((await call(app, "GET", "/api/v1/instances", { key: spent })).status).toBe(429);
    expect((await call(app, "GET", "/api/v1/instances", { key: await freshKey() })).status).toBe(200);
  });

  it("counts a Bearer caller per user", async () => {
    const app = limited(2);
    const user = await tenant.addUser("staff", { withKey: false });
    await freshKey();
    const token = await new SignJWT({ sub: `sub-${user.userId}`, email: user.email, email_verified: true })
      .setProtectedHeader({ alg: "HS256" })
      .setExpirationTime("5m")
      .sign(new TextEncoder().encode(TEST_JWT_SECRET));
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await call(app, "GET", "/api/v1/instances", { token })).status);
    expect(statuses).toContain(429);
    expect(statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(4);
  });

  it("weighs a bulk create, an import and an export as ten requests", async () => {
    const app = limited(100);
    const key = await freshKey();
    const before = field((await call(app, "GET", "/api/v1/instances", { key })).headers.get("ratelimit"), "r");
    const exported = await call(app, "GET", `/api/v1/participants/export.csv?instance_id=${camp.instanceId}`, { key });
    const after = field(exported.headers.get("ratelimit"), "r");
    // The same window, unless it turned over in between.
    if (after < before) expect(before - after).toBe(10);
  });

  it("is off with RATE_LIMIT_PER_MINUTE=0: no fields, no 429", async () => {
    const app = limited(0);
    const key = await freshKey();
    for (let i = 0; i < 3; i++) {
      const res = await call(app, "GET", "/api/v1/instances", { key });
      expect(res.status).toBe(200);
      expect(res.headers.get("ratelimit")).toBeNull();
    }
  });
});

describe("across server processes", () => {
  let servers: ServerProcess[] = [];
  beforeAll(async () => {
    servers = await Promise.all([0, 1].map(() => startServerProcess({ DATABASE_URL: t().url, RATE_LIMIT_PER_MINUTE: "6" })));
  }, 120_000);
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
  });

  it("shares one count per key between every process", async () => {
    const key = await freshKey();
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) {
      const server = servers[i % 2] as ServerProcess;
      const res = await fetch(`${server.url}/api/v1/instances`, { headers: { "X-API-Key": key } });
      statuses.push(res.status);
    }
    // Six allowed in a window across both processes (fewer 429s only if a window turned over).
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(1);
    expect(statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(8);
    const first429 = statuses.indexOf(429);
    expect(first429 === -1 || first429 >= 6).toBe(true);
  });
});
