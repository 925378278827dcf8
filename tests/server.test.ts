import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ROOT, TSX } from "./support/processes.ts";

/**
 * The newcomer's path, as `npm start` runs it: no DATABASE_URL, so an embedded
 * Postgres under DATA_DIR; a demo tenant on first start with its key printed;
 * Ctrl-C stops everything; data survives a restart.
 */

const dataDir = mkdtempSync(join(tmpdir(), "camp-start-"));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

async function freePort(): Promise<number> {
  return new Promise((done) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => done(typeof address === "object" && address ? address.port : 0));
    });
  });
}

interface Started {
  child: ChildProcess;
  stderr: () => string;
  port: number;
}

async function start(): Promise<Started> {
  const port = await freePort();
  const child = spawn(TSX, ["node/server.ts"], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: "", DATA_DIR: dataDir, PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (d) => {
    stderr += d;
  });
  child.stdout?.resume();
  const deadline = Date.now() + 90_000;
  while (!/listening on/.test(stderr)) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`server did not start:\n${stderr}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { child, stderr: () => stderr, port };
}

async function stop(started: Started): Promise<number | null> {
  const exited = new Promise<number | null>((done) => started.child.on("exit", (code) => done(code)));
  started.child.kill("SIGINT");
  return exited;
}

const get = (port: number, path: string, key?: string) =>
  fetch(`http://127.0.0.1:${port}${path}`, { headers: key ? { "X-API-Key": key } : {} });

describe("npm start on a machine without a database", () => {
  let key = "";

  it("starts an embedded Postgres, creates a demo tenant and prints a key that works", async () => {
    const server = await start();
    try {
      key = /(camp_[A-Za-z0-9_-]{43})/.exec(server.stderr())?.[1] ?? "";
      expect(key).not.toBe("");
      expect(server.stderr()).toContain(`curl -s -H 'X-API-Key: ${key}' http://localhost:${server.port}/api/v1/api-keys/my-key`);
      const health = await get(server.port, "/health");
      expect(health.status).toBe(200);
      expect((await get(server.port, "/api/v1/api-keys/my-key", key)).status).toBe(200);
    } finally {
      expect(await stop(server)).toBe(0);
    }
    // Ctrl-C stopped the embedded Postgres too.
    expect(existsSync(join(dataDir, "postgres", "postmaster.pid"))).toBe(false);
  });

  it("keeps its data across a restart and does not create a second demo tenant", async () => {
    const server = await start();
    try {
      expect(server.stderr()).not.toMatch(/Created a demo tenant/);
      expect((await get(server.port, "/api/v1/api-keys/my-key", key)).status).toBe(200);
    } finally {
      expect(await stop(server)).toBe(0);
    }
  });
});
