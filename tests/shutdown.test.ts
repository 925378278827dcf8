import { randomBytes } from "node:crypto";
import { connect } from "node:net";
import { describe, expect, it } from "vitest";
import { useTestDatabase } from "./support/database.ts";
import { newTenant } from "./support/fixtures.ts";
import { send, tally } from "./support/load.ts";
import { type ServerProcess, startServerProcess } from "./support/server-process.ts";

/**
 * SIGTERM under load, with the service as `npm start` runs it: the requests in
 * flight (a 1,000-row bulk create among them) finish and are committed, a
 * request that arrives on a kept-alive connection meanwhile gets 503 with
 * Connection: close, and the process exits 0.
 */

const t = useTestDatabase();

async function serveWithInstance(): Promise<{ server: ServerProcess; key: string; instanceId: string }> {
  const key = (await newTenant(t().db)).admin.key;
  const server = await startServerProcess({ DATABASE_URL: t().url, SHUTDOWN_TIMEOUT_MS: "20000" });
  const created = await send(server.url, key, {
    label: "instance",
    method: "POST",
    path: "/api/v1/instances",
    body: { name: "Drain" },
  });
  expect(created.status).toBe(201);
  const [row] = (await t().admin("select id from instances order by created_at desc limit 1")).rows;
  return { server, key, instanceId: row.id };
}

const participant = (instanceId: string, userId: string) => ({
  user_id: userId,
  instance_id: instanceId,
  first_name: "Ada",
  surname: "Drain",
});

/** Waits until at least `n` of the server's statements wait on a lock, so they are surely in flight. */
async function waitForLockedWrites(n: number): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const waiting = await t().admin(
      "select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'",
    );
    if (waiting.rows[0].n >= n) return;
    if (Date.now() > deadline) throw new Error("the writes never reached the database");
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A kept-alive connection on which requests are sent one after the other; each resolves with the raw answer. */
async function keptAlive(port: number) {
  const socket = connect(port, "127.0.0.1");
  await new Promise<void>((done, fail) => {
    socket.once("connect", done);
    socket.once("error", fail);
  });
  let received = "";
  let closed = false;
  socket.on("data", (d) => {
    received += d;
  });
  socket.on("close", () => {
    closed = true;
  });
  return {
    get closed() {
      return closed;
    },
    async get(path: string, key: string): Promise<string> {
      received = "";
      socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\n\r\n`);
      const deadline = Date.now() + 10_000;
      while (!/\r\n\r\n[\s\S]*\}$/.test(received) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      return received;
    },
    end: () => socket.destroy(),
  };
}

describe("shutdown on SIGTERM", { timeout: 120_000 }, () => {
  it("lets every request in flight finish, commits what it acknowledged, and exits 0", async () => {
    const { server, key, instanceId } = await serveWithInstance();
    const prefix = `drain-${randomBytes(3).toString("hex")}`;
    // Writes wait on this lock, so they are surely in flight, inside the server, when the signal comes.
    const gate = await t().db.pool.connect();
    await gate.query("begin; lock table public.participants in exclusive mode");
    const bulk = {
      participants: Array.from({ length: 1_000 }, (_, i) => participant(instanceId, `${prefix}-bulk-${i}`)),
    };
    const inFlight = [
      send(server.url, key, { label: "bulk", method: "POST", path: "/api/v1/participants/bulk", body: bulk }),
      ...Array.from({ length: 15 }, (_, i) =>
        send(server.url, key, {
          label: "create",
          method: "POST",
          path: "/api/v1/participants",
          body: participant(instanceId, `${prefix}-${i}`),
        }),
      ),
    ];
    try {
      await waitForLockedWrites(8);
      server.child.kill("SIGTERM");
      await new Promise((r) => setTimeout(r, 500));
      // Still serving what it had: the process has not exited while the writes wait.
      expect(server.child.exitCode).toBeNull();
    } finally {
      await gate.query("commit");
      gate.release();
    }
    const outcomes = await Promise.all(inFlight);
    const code = await server.exited;

    expect(
      outcomes.filter((o) => o.status !== 201),
      JSON.stringify(tally(outcomes)),
    ).toEqual([]);
    expect(code).toBe(0);
    const written = await t().admin("select count(*)::int as n from participants where user_id like $1", [`${prefix}-%`]);
    expect(written.rows[0].n).toBe(1_000 + 15);
    expect(server.stderr()).toMatch(/SIGTERM: stopping/);
  });

  it("answers a request that comes on a kept-alive connection while it drains with 503 and Connection: close", async () => {
    const { server, key, instanceId } = await serveWithInstance();
    const connection = await keptAlive(server.port);
    try {
      expect(await connection.get("/api/v1/instances", key)).toMatch(/^HTTP\/1\.1 200/);
      // A write held by a lock keeps the server draining while the kept-alive connection is used again.
      const gate = await t().db.pool.connect();
      await gate.query("begin; lock table public.participants in exclusive mode");
      const slow = send(server.url, key, {
        label: "create",
        method: "POST",
        path: "/api/v1/participants",
        body: participant(instanceId, `kept-${randomBytes(3).toString("hex")}`),
      });
      let late = "";
      try {
        await waitForLockedWrites(1);
        server.child.kill("SIGTERM");
        await new Promise((r) => setTimeout(r, 300));
        late = await connection.get("/api/v1/instances", key);
      } finally {
        await gate.query("commit");
        gate.release();
      }
      expect(late).toMatch(/^HTTP\/1\.1 503/);
      expect(late).toMatch(/^connection: close$/im);
      expect(late).toMatch(/^retry-after: \d+$/im);
      expect(late).toContain('"code":"SERVICE_UNAVAILABLE"');
      expect((await slow).status).toBe(201);
      expect(await server.exited).toBe(0);
    } finally {
      connection.end();
    }
  });
});
