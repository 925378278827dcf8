import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./server-process.ts";

export const PGBOUNCER = ["/usr/sbin/pgbouncer", "/usr/bin/pgbouncer"].find((path) => existsSync(path));

export interface Bouncer {
  /** The same database as `databaseUrl`, through the pooler. */
  url: string;
  stop(): Promise<void>;
}

/**
 * PgBouncer in transaction mode in front of one database, on a free port, with
 * `serverConnections` server connections at most, so that transactions of
 * different clients (and tenants) take turns on the same server connection.
 * PgBouncer refuses to run as root; as root it runs as the OS user postgres.
 */
export async function startPgBouncer(databaseUrl: string, serverConnections = 1): Promise<Bouncer> {
  if (!PGBOUNCER) throw new Error("pgbouncer is not installed (Debian package pgbouncer; .ci/run installs it)");
  const target = new URL(databaseUrl);
  const database = target.pathname.slice(1);
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "camp-pgbouncer-"));
  chmodSync(dir, 0o777);
  const backend = [
    `host=${target.hostname}`,
    `port=${target.port || 5432}`,
    `user=${decodeURIComponent(target.username)}`,
    target.password ? `password=${decodeURIComponent(target.password)}` : "",
    `dbname=${database}`,
  ].join(" ");
  const config = join(dir, "pgbouncer.ini");
  writeFileSync(
    config,
    [
      "[databases]",
      `${database} = ${backend}`,
      "[pgbouncer]",
      "listen_addr = 127.0.0.1",
      `listen_port = ${port}`,
      "unix_socket_dir =",
      "auth_type = any",
      "pool_mode = transaction",
      `default_pool_size = ${serverConnections}`,
      `max_db_connections = ${serverConnections}`,
      "max_client_conn = 200",
      "ignore_startup_parameters = extra_float_digits,options",
      `logfile = ${join(dir, "pgbouncer.log")}`,
      "",
    ].join("\n"),
    { mode: 0o644 },
  );
  const asPostgres =
    process.getuid?.() === 0
      ? {
          uid: Number(execFileSync("id", ["-u", "postgres"]).toString()),
          gid: Number(execFileSync("id", ["-g", "postgres"]).toString()),
        }
      : {};
  const child: ChildProcess = spawn(PGBOUNCER, [config], { ...asPostgres, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr?.on("data", (d) => {
    stderr += d;
  });
  const exited = new Promise<void>((done) => child.on("exit", () => done()));

  const url = new URL(databaseUrl);
  url.host = `127.0.0.1:${port}`;
  const { default: pg } = await import("pg");
  const deadline = Date.now() + 15_000;
  for (;;) {
    const probe = new pg.Client({ connectionString: url.toString() });
    probe.on("error", () => {});
    try {
      await probe.connect();
      await probe.end();
      break;
    } catch {
      await probe.end().catch(() => {});
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(`pgbouncer did not start: ${stderr}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    url: url.toString(),
    async stop() {
      child.kill("SIGTERM");
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
