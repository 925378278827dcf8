import { rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import type { TestProject } from "vitest/node";
import { startEmbeddedPostgres } from "../../node/embedded-db.ts";
import { migrate } from "../../node/migrate.ts";
import { databaseUrl } from "./urls.ts";

declare module "vitest" {
  export interface ProvidedContext {
    /** A connection to the server's maintenance database, allowed to create databases. */
    adminUrl: string;
    /** A migrated database that each test file clones (CREATE DATABASE ... TEMPLATE). */
    templateDatabase: string;
  }
}

/**
 * One Postgres for the whole run: DATABASE_URL's server when it is set,
 * otherwise a throwaway embedded one. The migrations are applied once, to a
 * template; each test file then gets its own copy, so files run in parallel.
 */
export default async function setup(project: TestProject) {
  let adminUrl = process.env.DATABASE_URL;
  let stopEmbedded: (() => Promise<void>) | undefined;
  if (!adminUrl) {
    const embedded = await startEmbeddedPostgres(join(tmpdir(), `camp-tests-${process.pid}`), {
      persistent: false,
      log: (line) => process.stderr.write(`[embedded postgres] ${line}\n`),
    });
    adminUrl = embedded.adminUrl;
    stopEmbedded = embedded.stop;
  }

  const template = `camp_template_${process.pid}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`drop database if exists ${template}`);
  await admin.query(`create database ${template}`);
  await migrate(databaseUrl(adminUrl, template));

  project.provide("adminUrl", adminUrl);
  project.provide("templateDatabase", template);

  return async () => {
    // Test files drop their own databases; this sweeps up after a crashed one.
    const leftovers = await admin.query<{ datname: string }>(
      "select datname from pg_database where datname like $1 or datname = $2",
      [`camp_test_${process.pid}_%`, template],
    );
    for (const { datname } of leftovers.rows) {
      await admin.query(`drop database if exists ${pg.escapeIdentifier(datname)} with (force)`);
    }
    await admin.end();
    await stopEmbedded?.();
    // Vitest 4.1 keeps its transformed modules in a directory of the real temporary
    // directory (made before this setup ran) and does not remove it.
    const vitestTmp = (project.vitest as unknown as { _tmpDir?: string })._tmpDir;
    if (vitestTmp) rmSync(vitestTmp, { recursive: true, force: true });
  };
}
