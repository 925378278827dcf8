/**
 * Regenerates sql/schema.sql: migrates a scratch database on the server of
 * DATABASE_URL (or, when it is unset, on a throwaway embedded Postgres),
 * writes its schema (scripts/schema-dump.ts), and drops it. Run after adding
 * a migration: npm run db:schema. tests/schema-file.test.ts fails until you do.
 */
import { randomBytes } from "node:crypto";
import { rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { startEmbeddedPostgres } from "../node/embedded-db.ts";
import { migrate } from "../node/migrate.ts";
import { dumpSchema, SCHEMA_FILE } from "./schema-dump.ts";

const scratchDir = join(tmpdir(), `camp-schema-${process.pid}`);
const embedded = process.env.DATABASE_URL
  ? undefined
  : await startEmbeddedPostgres(scratchDir, { persistent: false, log: (line) => process.stderr.write(`${line}\n`) });
const server = process.env.DATABASE_URL || (embedded as { adminUrl: string }).adminUrl;
const scratch = `camp_schema_${randomBytes(4).toString("hex")}`;
const admin = new pg.Client({ connectionString: server });
await admin.connect();
try {
  await admin.query(`create database ${scratch}`);
  const url = new URL(server);
  url.pathname = `/${scratch}`;
  await migrate(url.toString());
  await writeFile(fileURLToPath(new URL(`../${SCHEMA_FILE}`, import.meta.url)), await dumpSchema(url.toString()));
  process.stderr.write(`wrote ${SCHEMA_FILE}\n`);
} finally {
  await admin.query(`drop database if exists ${scratch} with (force)`);
  await admin.end();
  await embedded?.stop();
  await rm(scratchDir, { recursive: true, force: true });
}
