import { createHash } from "node:crypto";
import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CampStructure, tenantWithCamp } from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { call, TEST_JWT_SECRET, type TestTenant, testApp } from "./support/fixtures.ts";
import { type ServerProcess, startServerProcess } from "./support/server-process.ts";

/**
 * Rate limits per person: a user's keys and Bearer tokens share one budget,
 * leased to each process in batches from a count in the database
 * (http/rate-limit.ts RateLimiter, sql/migrations/*_rate_leases.sql).
 */

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

/** The user an API key belongs to. */
async function userOfKey(key: string): Promise<{ id: string; email: string }> {
  const hash = createHash("sha256").update(key).digest();
  const { rows } = await t().admin(
    "select u.id, u.email from public.users u join public.api_keys k on k.user_id = u.id where k.key_hash = $1",
    [hash],
  );
  return rows[0];
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

  it("admits the whole limit to a concurrent burst: 140 requests at once against 30 a minute get 30 answers", async () => {
    const app = limited(30);
    for (const credential of ["key", "token"] as const) {
      const key = await freshKey();
      const user = await userOfKey(key);
      const token = await new SignJWT({ email: user.email, email_verified: true })
        .setProtectedHeader({ alg: "HS256" })
        .setSubject(`burst-${user.id}`)
        .setExpirationTime("5m")
        .sign(new TextEncoder().encode(TEST_JWT_SECRET));
      const auth = credential === "key" ? { key } : { token };
      const answers = await Promise.all(Array.from({ length: 140 }, () => call(app, "GET", "/api/v1/instances", auth)));
      const statuses = answers.map((a) => a.status);
      // Before: 10 admitted, the rest refused for the window while leased hits lay unspent.
      expect(statuses.filter((s) => s === 200).length, credential).toBe(30);
      expect(statuses.filter((s) => s === 429).length, credential).toBe(110);
    }
  });

  it("counts per user: another user of the same tenant is not held back", async () => {
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

  it("keeps the budget through regenerate: a new key of the same user is no new budget", async () => {
    const app = limited(6);
    let key = await freshKey();
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await call(app, "GET", "/api/v1/instances", { key })).status);
    const regenerated = await call(app, "POST", "/api/v1/api-keys/regenerate", { key });
    expect(regenerated.status).toBe(200);
    key = regenerated.body.data.key;
    for (let i = 0; i < 4; i++) statuses.push((await call(app, "GET", "/api/v1/instances", { key })).status);
    // 3 reads and the regenerate spent 4 of 6: the new key gets 2 more, then 429 (more only if a window turned over).
    expect(statuses.slice(0, 5)).toEqual([200, 200, 200, 200, 200]);
    expect(statuses.slice(5)).toEqual([429, 429]);
  });

  it("shares one budget between a user's API key and Bearer token", async () => {
    const app = limited(4);
    const key = await freshKey();
    const user = await userOfKey(key);
    const token = await new SignJWT({ sub: `sub-${user.id}`, email: user.email, email_verified: true })
      .setProtectedHeader({ alg: "HS256" })
      .setExpirationTime("5m")
      .sign(new TextEncoder().encode(TEST_JWT_SECRET));
    const byKey = [];
    for (let i = 0; i < 4; i++) byKey.push((await call(app, "GET", "/api/v1/instances", { key })).status);
    expect(byKey).toEqual([200, 200, 200, 200]);
    expect((await call(app, "GET", "/api/v1/instances", { token })).status).toBe(429);
  });

  it("weighs HEAD as GET: a HEAD of the export costs ten", async () => {
    const app = limited(20);
    const key = await freshKey();
    const path = `/api/v1/participants/export.csv?instance_id=${camp.instanceId}`;
    const first = await call(app, "HEAD", path, { key });
    expect(first.status).toBe(200);
    expect(field(first.headers.get("ratelimit"), "r")).toBe(10);
    expect((await call(app, "HEAD", path, { key })).status).toBe(200);
    expect((await call(app, "HEAD", path, { key })).status).toBe(429);
    expect((await call(app, "GET", "/api/v1/instances", { key })).status).toBe(429);
  });

  it("writes the shared count once per lease, not once per request", async () => {
    const app = limited(1000);
    const key = await freshKey();
    for (let i = 0; i < 30; i++) expect((await call(app, "GET", "/api/v1/instances", { key })).status).toBe(200);
    const { rows } = await t().admin("select c.hits from private.rate_counters c where c.subject = $1", [
      `user:${(await userOfKey(key)).id}`,
    ]);
    // One lease: the first request and 100 ahead (an eighth of 1,000 is more); 30 requests spent 30 of them.
    expect(rows.map((r) => r.hits)).toEqual([101]);
  });

  it("leases a hundredth of a large limit at a time", async () => {
    const app = limited(100_001);
    const key = await freshKey();
    for (let i = 0; i < 3; i++) expect((await call(app, "GET", "/api/v1/instances", { key })).status).toBe(200);
    const { rows } = await t().admin("select c.hits from private.rate_counters c where c.subject = $1", [
      `user:${(await userOfKey(key)).id}`,
    ]);
    // One lease: the first request and 1,000 ahead (a hundredth of 100,001).
    expect(rows.map((r) => r.hits)).toEqual([1001]);
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
  const LIMIT = 60;
  let servers: ServerProcess[] = [];
  beforeAll(async () => {
    servers = await Promise.all(
      [0, 1, 2].map(() => startServerProcess({ DATABASE_URL: t().url, RATE_LIMIT_PER_MINUTE: String(LIMIT) })),
    );
  }, 120_000);
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
  });

  /** Requests of one key, round robin over the processes, `inFlight` at a time; their statuses. */
  async function spread(key: string, count: number, inFlight: number): Promise<number[]> {
    const statuses: number[] = [];
    let next = 0;
    const worker = async () => {
      for (let i = next++; i < count; i = next++) {
        const server = servers[i % servers.length] as ServerProcess;
        const res = await fetch(`${server.url}/api/v1/instances`, { headers: { "X-API-Key": key } });
        await res.arrayBuffer();
        statuses.push(res.status);
      }
    };
    await Promise.all(Array.from({ length: inFlight }, worker));
    return statuses;
  }

  it("admits no more than the limit in a window across three processes, and all of it when each keeps being asked", async () => {
    const key = await freshKey();
    const statuses = await spread(key, 2 * LIMIT, 6);
    expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
    // No overshoot: leases are taken only from what the shared count has left. No undershoot
    // either here: every process was asked until refused, so it spent every hit it held.
    expect(statuses.filter((s) => s === 200).length).toBe(LIMIT);
    const { rows } = await t().admin("select sum(hits)::int as hits from private.rate_counters where subject = $1", [
      `user:${(await userOfKey(key)).id}`,
    ]);
    expect(rows[0].hits).toBe(LIMIT);
  });

  it("refuses a user on every process once one process has spent the budget", async () => {
    const key = await freshKey();
    const first = servers[0] as ServerProcess;
    let admitted = 0;
    for (let i = 0; i < LIMIT + 1; i++) {
      const res = await fetch(`${first.url}/api/v1/instances`, { headers: { "X-API-Key": key } });
      await res.arrayBuffer();
      if (res.status === 200) admitted++;
    }
    expect(admitted).toBe(LIMIT);
    for (const server of servers.slice(1)) {
      const res = await fetch(`${server.url}/api/v1/instances`, { headers: { "X-API-Key": key } });
      expect(res.status).toBe(429);
      expect(Number(res.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    }
  });
});
