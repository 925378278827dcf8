import { type ChildProcess, spawn } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { Database } from "../functions/db/database.ts";
import { createTenant } from "../functions/tenants/provisioning.ts";
import { useTestDatabase } from "./support/database.ts";
import { DENO_DIR } from "./support/deno.ts";
import { ROOT } from "./support/processes.ts";
import { freePort } from "./support/server-process.ts";

/**
 * Stopping the server the way a process manager or a terminal does: one signal
 * to the process it started (`npm start`, or the production command
 * `node --import tsx node/server.ts`), or SIGINT to the whole process group
 * (Ctrl-C). Each must reach the server, which drains and stops everything it
 * started, the embedded Postgres included, and the process exits 0 leaving
 * nothing behind: no process and nothing on the port.
 *
 * Under `tsx node/server.ts` as the start script, npm passed SIGTERM to the
 * `sh -c` it runs scripts in, which died of it without passing it on: npm
 * exited 143 and the server kept serving, re-parented to init.
 */

const t = useTestDatabase();

const scratch = mkdtempSync(join(tmpdir(), "camp-signals-"));
chmodSync(scratch, 0o755); // as root, the embedded Postgres runs as 'postgres', which must enter it
const dataDir = join(scratch, ".data");
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const COMMANDS = {
  "npm start": ["npm", ["start"]],
  "node --import tsx node/server.ts": [process.execPath, ["--import", "tsx", "node/server.ts"]],
  "npm run serve:edge": ["npm", ["run", "serve:edge"]],
} as const;

interface Started {
  child: ChildProcess;
  port: number;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** The command in a process group of its own (as a terminal runs it), resolved once it listens. */
async function start(command: keyof typeof COMMANDS, env: Record<string, string>): Promise<Started> {
  const port = await freePort();
  const [file, args] = COMMANDS[command];
  const child = spawn(file, args, {
    cwd: ROOT,
    // Deno's cache of the function's npm packages, as the Edge Function's tests fill it.
    env: { ...process.env, DENO_DIR, DENO_NO_UPDATE_CHECK: "1", RATE_LIMIT_PER_MINUTE: "0", ...env, PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let stderr = "";
  child.stderr?.on("data", (d) => {
    stderr += d;
  });
  child.stdout?.on("data", (d) => {
    stderr += d;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
    child.on("exit", (code, signal) => done({ code, signal })),
  );
  const deadline = Date.now() + 90_000;
  // The Node server says "listening on", Deno "Listening on".
  while (!/listening on/i.test(stderr)) {
    if (child.exitCode !== null || Date.now() > deadline) {
      killGroup(child);
      throw new Error(`${command} did not start:\n${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { child, port, stderr: () => stderr, exited };
}

function killGroup(child: ChildProcess): void {
  try {
    process.kill(-(child.pid as number), "SIGKILL");
  } catch {}
}

/** Every process below `root` (the server, the embedded Postgres and its workers, esbuild), from /proc. */
function descendants(root: number): { pid: number; command: string }[] {
  const parents = new Map<number, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // The command name in parentheses may hold spaces: the fields after it are what we read.
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {}
  }
  const found: number[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const parent = queue.shift() as number;
    for (const [pid, ppid] of parents) {
      if (ppid === parent) {
        found.push(pid);
        queue.push(pid);
      }
    }
  }
  return found.map((pid) => ({ pid, command: commandOf(pid) }));
}

function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ").trim();
  } catch {
    return "";
  }
}

const alive = (pid: number) => existsSync(`/proc/${pid}`) && !readFileSync(`/proc/${pid}/stat`, "utf8").includes(") Z ");

/** Whether something accepts connections on the port. */
function answers(port: number): Promise<boolean> {
  return new Promise((done) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      done(true);
    });
    socket.once("error", () => done(false));
  });
}

/** The processes still alive among `before`, given a moment to finish exiting (esbuild's service ends when its pipe closes). */
async function survivors(before: { pid: number; command: string }[]): Promise<string[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const left = before.filter((p) => alive(p.pid));
    if (left.length === 0 || Date.now() > deadline) return left.map((p) => `${p.pid} ${p.command}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

type Target = "the process" | "its process group (Ctrl-C)";

async function stopAndCheck(
  command: keyof typeof COMMANDS,
  env: Record<string, string>,
  signal: NodeJS.Signals,
  target: Target,
): Promise<{ pid: number; command: string }[]> {
  const started = await start(command, env);
  try {
    const below = descendants(started.child.pid as number);
    if (target === "the process") process.kill(started.child.pid as number, signal);
    else process.kill(-(started.child.pid as number), signal);

    expect(await started.exited).toEqual({ code: 0, signal: null });
    expect(started.stderr()).toContain(`${signal}: stopping`);
    expect(started.stderr()).toMatch(/\nstopped\n/);
    expect(await survivors(below)).toEqual([]);
    expect(await answers(started.port)).toBe(false);
    return below;
  } finally {
    killGroup(started.child);
  }
}

const npmStart: [keyof typeof COMMANDS, NodeJS.Signals, Target][] = [
  ["npm start", "SIGTERM", "the process"],
  ["npm start", "SIGINT", "the process"],
  ["npm start", "SIGINT", "its process group (Ctrl-C)"],
];

describe("stopping on the embedded database", { timeout: 150_000 }, () => {
  it.each([...npmStart, ["node --import tsx node/server.ts", "SIGTERM", "the process"]] as typeof npmStart)(
    "%s, %s to %s: exit 0, the server and the embedded Postgres gone, the port free",
    async (command, signal, target) => {
      const below = await stopAndCheck(command, { DATABASE_URL: "", DATA_DIR: dataDir }, signal, target);
      expect(below.map((p) => p.command)).toContainEqual(expect.stringMatching(/bin\/postgres -D /));
      // The cluster was stopped, not left for the next start to find running.
      expect(existsSync(join(dataDir, "postgres", "postmaster.pid"))).toBe(false);
      expect(existsSync(join(dataDir, "server.pid"))).toBe(false);
    },
  );
});

describe("stopping npm run serve:edge (the Edge Function under Deno)", { timeout: 150_000 }, () => {
  it.each([
    ["npm run serve:edge", "SIGTERM", "the process"],
    ["npm run serve:edge", "SIGINT", "its process group (Ctrl-C)"],
  ] as typeof npmStart)("%s, %s to %s: exit 0, Deno gone, the port free", async (command, signal, target) => {
    const below = await stopAndCheck(command, { DATABASE_URL: t().url }, signal, target);
    expect(below.map((p) => p.command)).toContainEqual(expect.stringMatching(/deno run /));
  });
});

describe("Ctrl-C on the embedded database", { timeout: 150_000 }, () => {
  it("lets a write in flight finish: the embedded Postgres, in a process group of its own, is stopped after the drain", async () => {
    const started = await start("npm start", { DATABASE_URL: "", DATA_DIR: dataDir, SHUTDOWN_TIMEOUT_MS: "20000" });
    const password = readFileSync(join(dataDir, "postgres.password"), "utf8").trim();
    const port = readFileSync(join(dataDir, "postgres.port"), "utf8").trim();
    const url = `postgresql://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/camp`;
    const db = new Database(url, { max: 2 });
    const gate = new pg.Client({ connectionString: url });
    gate.on("error", () => {});
    try {
      const { api_key: key } = await createTenant(db, "Signals", `admin-${Date.now()}@example.test`);
      const post = (path: string, body: unknown) =>
        fetch(`http://127.0.0.1:${started.port}${path}`, {
          method: "POST",
          headers: { "X-API-Key": key, "Content-Type": "application/json" },
          body: JSON.stringify(body),
        });
      const instance = await (await post("/api/v1/instances", { name: "Drain" })).json();
      await gate.connect();
      // The write waits on this lock, so it is surely in flight when the terminal's Ctrl-C comes.
      await gate.query("begin; lock table public.participants in exclusive mode");
      const write = post("/api/v1/participants", {
        user_id: "ctrl-c",
        instance_id: instance.data.id,
        first_name: "Ada",
        surname: "Drain",
      });
      for (const deadline = Date.now() + 20_000; ; ) {
        const waiting = await db.pool.query(
          "select count(*)::int as n from pg_stat_activity where datname = 'camp' and wait_event_type = 'Lock'",
        );
        if (waiting.rows[0].n > 0) break;
        if (Date.now() > deadline) throw new Error("the write never reached the database");
        await new Promise((r) => setTimeout(r, 50));
      }
      process.kill(-(started.child.pid as number), "SIGINT");
      await new Promise((r) => setTimeout(r, 500));
      // (In the server's process group, Postgres took the Ctrl-C too and had already ended this session.)
      await gate.query("commit").catch(() => {});
      const answer = await write;
      expect(answer.status, await answer.clone().text()).toBe(201);
      await gate.end();
      await db.close();
      expect(await started.exited).toEqual({ code: 0, signal: null });
      expect(existsSync(join(dataDir, "postgres", "postmaster.pid"))).toBe(false);
    } finally {
      await gate.end().catch(() => {});
      await db.close().catch(() => {});
      killGroup(started.child);
    }
  });
});

describe("stopping on DATABASE_URL", { timeout: 120_000 }, () => {
  it.each([...npmStart, ["node --import tsx node/server.ts", "SIGINT", "its process group (Ctrl-C)"]] as typeof npmStart)(
    "%s, %s to %s: exit 0, the server gone, the port free",
    async (command, signal, target) => {
      await stopAndCheck(command, { DATABASE_URL: t().url }, signal, target);
    },
  );
});
