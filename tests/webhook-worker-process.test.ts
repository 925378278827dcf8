import { type ChildProcess, spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addCampStructure, type CampStructure } from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { call, newTenant, type TestApp, type TestTenant, testApp } from "./support/fixtures.ts";
import { ROOT, TSX } from "./support/processes.ts";
import { type Receiver, startReceiver } from "./support/receiver.ts";
import { startServerProcess } from "./support/server-process.ts";
import { addEndpoint } from "./support/webhooks.ts";

/**
 * Workers as real processes: `camp worker` killed in the middle of a delivery
 * loses nothing (another worker sends it again once the lease runs out), and
 * the Node server runs a worker that SIGTERM stops after its delivery in
 * flight is recorded.
 */

const t = useTestDatabase();
let app: TestApp;
let tenant: TestTenant;
let camp: CampStructure;
const receivers: Receiver[] = [];

beforeAll(async () => {
  tenant = await newTenant(t().db);
  camp = await addCampStructure(t(), tenant.tenantId);
  app = testApp(t().db, { WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true" });
});
afterAll(async () => {
  for (const r of receivers) await r.close();
});

const env = () => ({
  DATABASE_URL: t().url,
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true",
  WEBHOOK_TIMEOUT_MS: "1000",
  LOG_LEVEL: "warning",
});

/**
 * `camp worker` through tsx, in a process group of its own: tsx runs the
 * program in a child process, so a SIGKILL must reach the whole group to
 * kill the worker itself.
 */
function campWorker(): { child: ChildProcess; output: () => string; exited: Promise<number | null>; kill: () => void } {
  const child = spawn(TSX, ["cli/main.ts", "worker"], {
    cwd: ROOT,
    env: { ...process.env, ...env() },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let output = "";
  child.stdout?.on("data", (d) => {
    output += d;
  });
  child.stderr?.on("data", (d) => {
    output += d;
  });
  const kill = () => {
    try {
      process.kill(-(child.pid as number), "SIGKILL");
    } catch {
      // Already gone.
    }
  };
  return { child, output: () => output, exited: new Promise((done) => child.on("exit", (code) => done(code))), kill };
}

async function until(condition: () => boolean | Promise<boolean>, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function participant(userId: string) {
  const created = await call(app, "POST", "/api/v1/participants", {
    key: tenant.admin.key,
    body: { user_id: userId, instance_id: camp.instanceId, first_name: "P", surname: "Q" },
  });
  expect(created.status).toBe(201);
}

const deliveries = async (endpointId: string) =>
  (await call(app, "GET", `/api/v1/webhook-endpoints/${endpointId}/deliveries`, { key: tenant.admin.key })).body.data;

describe("webhook workers as processes", { timeout: 120_000 }, () => {
  it("loses no event when a worker is killed mid-delivery: another sends it again once the lease runs out", async () => {
    // The first request is held until the worker is dead; later ones are answered.
    const hook = await startReceiver((n, _req, res) => {
      if (n > 0) res.writeHead(200).end("thanks");
    });
    receivers.push(hook);
    const endpoint = await addEndpoint(app, tenant.admin.key, { url: hook.url, types: ["participant.created"] });
    const first = campWorker();
    try {
      await participant("killed-mid-delivery");
      await hook.waitFor(1, 60_000);
      first.kill();
      await first.exited;
    } finally {
      first.kill();
    }
    const [held] = await deliveries(endpoint.id);
    expect(held.status).toBe("pending");

    const second = campWorker();
    try {
      await hook.waitFor(2, 60_000);
      await until(async () => (await deliveries(endpoint.id))[0]?.status === "delivered");
      second.child.kill("SIGTERM");
      expect(await second.exited).toBe(0);
    } finally {
      second.kill();
    }
    expect(hook.received[1]?.headers["webhook-id"]).toBe(hook.received[0]?.headers["webhook-id"]);
    const [delivery] = await deliveries(endpoint.id);
    const attempts = [...delivery.attempts].reverse();
    expect(attempts[0].error).toMatch(/^interrupted/);
    expect(attempts[1]).toMatchObject({ status_code: 200, error: null });
  });

  it("answers a waiting feed request at once when the server stops", async () => {
    const server = await startServerProcess(env());
    try {
      const head = await fetch(`${server.url}/api/v1/events?after=now`, { headers: { "X-API-Key": tenant.admin.key } });
      const { meta } = await head.json();
      const waiting = fetch(`${server.url}/api/v1/events?after=${meta.next}&wait=30`, {
        headers: { "X-API-Key": tenant.admin.key },
      });
      await new Promise((r) => setTimeout(r, 500));
      const stopped = server.stop("SIGTERM");
      const answer = await waiting;
      expect(answer.status).toBe(200);
      expect((await answer.json()).data).toEqual([]);
      expect(await stopped).toBe(0);
    } finally {
      server.child.kill("SIGKILL");
    }
  });

  it("runs a worker in the server, which SIGTERM stops once its delivery in flight is recorded", async () => {
    const hook = await startReceiver(async (_n, _req, res) => {
      // Answered within the worker's 1 s timeout, but after SIGTERM has arrived.
      await new Promise((r) => setTimeout(r, 700));
      res.writeHead(200).end();
    });
    receivers.push(hook);
    const endpoint = await addEndpoint(app, tenant.admin.key, { url: hook.url, types: ["participant.created"] });
    const server = await startServerProcess(env());
    try {
      const created = await fetch(`${server.url}/api/v1/participants`, {
        method: "POST",
        headers: { "X-API-Key": tenant.admin.key, "Content-Type": "application/json" },
        body: JSON.stringify({ user_id: "served", instance_id: camp.instanceId, first_name: "S", surname: "V" }),
      });
      expect(created.status).toBe(201);
      await hook.waitFor(1, 60_000);
      expect(await server.stop("SIGTERM")).toBe(0);
    } finally {
      server.child.kill("SIGKILL");
    }
    const [delivery] = await deliveries(endpoint.id);
    expect(delivery.status).toBe("delivered");
    expect(delivery.attempts).toHaveLength(1);
  });
});
