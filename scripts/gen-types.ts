/**
 * Regenerates supabase/database.types.ts: migrates a scratch database on
 * the server of DATABASE_URL (or the embedded Postgres under DATA_DIR when it
 * is unset), runs `supabase gen types typescript` against it, and drops it.
 * Run after adding a migration: npm run gen:types
 */
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { loadConfig } from "../functions/config.ts";
import { startEmbeddedPostgres } from "../node/embedded-db.ts";
import { migrate } from "../node/migrate.ts";
import { generateDatabaseTypes, TYPES_FILE } from "./database-types.ts";

const config = loadConfig(process.env);
const embedded = config.DATABASE_URL ? undefined : await startEmbeddedPostgres(config.DATA_DIR);
const server = new URL(config.DATABASE_URL ?? (embedded as { adminUrl: string }).adminUrl);
const scratch = `camp_types_${randomBytes(4).toString("hex")}`;
const admin = new pg.Client({ connectionString: server.toString() });
await admin.connect();
try {
  await admin.query(`create database ${scratch}`);
  const url = new URL(server);
  url.pathname = `/${scratch}`;
  await migrate(url.toString());
  const target = fileURLToPath(new URL(`../${TYPES_FILE}`, import.meta.url));
  writeFileSync(target, generateDatabaseTypes(url.toString()));
  process.stderr.write(`wrote ${TYPES_FILE}\n`);
} finally {
  await admin.query(`drop database if exists ${scratch} with (force)`);
  await admin.end();
  await embedded?.stop();
}
