import { readdir, readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import pg from "pg";

export const MIGRATIONS_DIR = fileURLToPath(new URL("../sql/migrations/", import.meta.url));

/** Any constant: the advisory lock that keeps two migrators from racing. */
const MIGRATION_LOCK = 7_291_034;

export interface Migration {
  version: string;
  name: string;
  file: string;
}

/** `<14-digit timestamp>_<name>.sql`, in version order — the Supabase CLI's convention. */
export async function listMigrations(dir = MIGRATIONS_DIR): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => /^\d{14}_.+\.sql$/.test(f)).sort();
  return files.map((file) => {
    const [, version = "", name = ""] = /^(\d{14})_(.+)\.sql$/.exec(file) ?? [];
    return { version, name, file };
  });
}

/**
 * Applies pending migrations, each in its own transaction, and records them in
 * supabase_migrations.schema_migrations — the table `supabase db push` uses —
 * so either tool sees what the other applied and neither applies twice.
 * Returns the versions it applied.
 */
export async function migrate(
  connectionString: string,
  log: (line: string) => void = () => {},
  dir = MIGRATIONS_DIR,
): Promise<string[]> {
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    await client.query("select pg_advisory_lock($1)", [MIGRATION_LOCK]);
    await client.query(`
      create schema if not exists supabase_migrations;
      create table if not exists supabase_migrations.schema_migrations (
        version text primary key, statements text[], name text
      )`);
    const applied = new Set(
      (await client.query<{ version: string }>("select version from supabase_migrations.schema_migrations")).rows.map(
        (r) => r.version,
      ),
    );
    const done: string[] = [];
    for (const migration of await listMigrations(dir)) {
      if (applied.has(migration.version)) continue;
      const text = await readFile(`${dir}/${migration.file}`, "utf8");
      log(`applying ${migration.file}`);
      try {
        await client.query("begin");
        await client.query(text);
        await client.query("insert into supabase_migrations.schema_migrations (version, statements, name) values ($1, $2, $3)", [
          migration.version,
          [text],
          migration.name,
        ]);
        await client.query("commit");
      } catch (error) {
        await client.query("rollback");
        throw new Error(`migration ${migration.file} failed: ${(error as Error).message}`);
      }
      done.push(migration.version);
    }
    return done;
  } finally {
    await client.query("select pg_advisory_unlock($1)", [MIGRATION_LOCK]).catch(() => {});
    await client.end();
  }
}
