import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Database } from "../functions/db/database.ts";
import { createTenant } from "../functions/tenants/provisioning.ts";
import { type EmbeddedDatabase, startEmbeddedPostgres } from "../node/embedded-db.ts";
import { migrate } from "../node/migrate.ts";
import { type Outcome, send, startLoad, tally } from "./support/load.ts";
import { type ServerProcess, startServerProcess } from "./support/server-process.ts";

/**
 * Database faults under load, with real processes: a Postgres cluster of this
 * file's own (which it may stop), the service as `npm start` runs it, and 16
 * concurrent clients reading and writing. Whatever Postgres does, the server
 * stays up, clients get 2xx or 503 (never a 500, a reset or a hang), the
 * service recovers by itself once Postgres is back, and every participant
 * written was acknowledged to its client.
 */

const WORKERS = 16;
const dir = mkdtempSync(join(tmpdir(), "camp-faults-"));
let cluster: EmbeddedDatabase;
let key = "";
let instanceId = "";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  cluster = await startEmbeddedPostgres(dir, { database: "camp" });
  await migrate(cluster.url);
  const db = new Database(cluster.url, { max: 2 });
  try {
    key = (await createTenant(db, "Faults", "faults@camp.test")).api_key;
  } finally {
    await db.close();
  }
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function serve(): Promise<ServerProcess> {
  const server = await startServerProcess({ DATABASE_URL: cluster.url, DATA_DIR: join(dir, "data"), DB_POOL_SIZE: "8" });
  if (!instanceId) {
    const res = await fetch(`${server.url}/api/v1/instances`, {
      method: "POST",
      headers: { "X-API-Key": key, "Content-Type": "application/json" },
      body: JSON.stringify({ name: "Fault camp" }),
    });
    instanceId = ((await res.json()) as { data: { id: string } }).data.id;
  }
  return server;
}

/** Every third request creates a participant with a unique user_id; the others list a page. */
function mixed(prefix: string) {
  return (n: number) =>
    n % 3 === 0
      ? {
          label: "create",
          method: "POST",
          path: "/api/v1/participants",
          userId: `${prefix}-${n}`,
          body: { user_id: `${prefix}-${n}`, instance_id: instanceId, first_name: "Ada", surname: `Fault ${n}` },
        }
      : { label: "list", path: `/api/v1/participants?instance_id=${instanceId}&limit=20` };
}

async function terminateApiBackends(): Promise<number> {
  const admin = new pg.Client({ connectionString: cluster.adminUrl });
  await admin.connect();
  try {
    const res = await admin.query(
      `select pg_terminate_backend(pid) from pg_stat_activity
        where datname = 'camp' and backend_type = 'client backend' and pid <> pg_backend_pid()`,
    );
    return res.rowCount ?? 0;
  } finally {
    await admin.end();
  }
}

async function writtenUserIds(prefix: string): Promise<Set<string>> {
  const admin = new pg.Client({ connectionString: cluster.url });
  await admin.connect();
  try {
    const res = await admin.query<{ user_id: string }>("select user_id from public.participants where user_id like $1", [
      `${prefix}-%`,
    ]);
    return new Set(res.rows.map((r) => r.user_id));
  } finally {
    await admin.end();
  }
}

/** The contract under faults: only 2xx and 503, and the database holds exactly the acknowledged creates. */
async function expectCleanOutcomes(outcomes: Outcome[], prefix: string) {
  const summary = JSON.stringify(tally(outcomes));
  const bad = outcomes.filter((o) => o.status === undefined || (o.status >= 300 && o.status !== 503));
  expect(bad, summary).toEqual([]);
  const acknowledged = new Set(outcomes.filter((o) => o.label === "create" && o.status === 201).map((o) => o.userId));
  expect(acknowledged.size, summary).toBeGreaterThan(0);
  expect([...(await writtenUserIds(prefix))].sort(), summary).toEqual([...acknowledged].sort());
}

describe("the server under database faults", { timeout: 120_000 }, () => {
  it("rides out its connections being terminated under load", async () => {
    const server = await serve();
    const prefix = `term-${randomBytes(3).toString("hex")}`;
    try {
      const load = startLoad(server.url, key, WORKERS, mixed(prefix));
      await sleep(800);
      let terminated = 0;
      for (let round = 0; round < 4; round++) {
        terminated += await terminateApiBackends();
        await sleep(400);
      }
      await sleep(800);
      const outcomes = await load.stop();

      expect(terminated).toBeGreaterThan(0);
      expect(server.child.exitCode).toBeNull();
      await expectCleanOutcomes(outcomes, prefix);
      expect((await send(server.url, key, { label: "health", path: "/health" })).status).toBe(200);
      expect(server.stderr()).toMatch(/database connection lost/);
    } finally {
      expect(await server.stop("SIGTERM")).toBe(0);
    }
  });

  it("answers 503 while Postgres is down and recovers by itself within 10 s of its return", async () => {
    const server = await serve();
    const prefix = `restart-${randomBytes(3).toString("hex")}`;
    try {
      const load = startLoad(server.url, key, WORKERS, mixed(prefix));
      await sleep(800);
      await cluster.stop();
      await sleep(1500);
      const during = await send(server.url, key, { label: "health", path: "/health" }, 5_000);
      const quick = Date.now();
      const refused = await send(server.url, key, mixed(prefix)(1), 5_000);
      const refusedMs = Date.now() - quick;
      await sleep(1500);

      cluster = await startEmbeddedPostgres(dir, { database: "camp" });
      const back = Date.now();
      let recoveredMs = Number.POSITIVE_INFINITY;
      while (Date.now() - back < 15_000) {
        const probe = await send(server.url, key, mixed(prefix)(1), 5_000);
        if (probe.status === 200) {
          recoveredMs = Date.now() - back;
          break;
        }
        await sleep(100);
      }
      await sleep(1000);
      const outcomes = await load.stop();

      expect(during.status).toBe(503);
      expect(refused.status).toBe(503);
      // Answered at once (a refused connection), not after a pile-up behind the pool.
      expect(refusedMs).toBeLessThan(4_000);
      expect(recoveredMs).toBeLessThanOrEqual(10_000);
      expect(server.child.exitCode).toBeNull();
      expect(outcomes.some((o) => o.status === 503)).toBe(true);
      await expectCleanOutcomes(outcomes, prefix);
      expect((await send(server.url, key, { label: "health", path: "/health" })).status).toBe(200);
    } finally {
      expect(await server.stop("SIGTERM")).toBe(0);
    }
  });
});
