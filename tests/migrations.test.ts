import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { listMigrations, migrate } from "../node/migrate.ts";
import { run } from "./support/processes.ts";
import { supabase } from "./support/supabase-cli.ts";
import { databaseUrl } from "./support/urls.ts";

/**
 * The two ways to apply sql/migrations — `camp migrate` (node/migrate.ts) and
 * `supabase db push` — must reach the same schema, record the same versions,
 * and each must find nothing left to do after the other.
 */
const adminUrl = inject("adminUrl");
const suffix = `${process.ppid}_${randomBytes(4).toString("hex")}`;
const viaCamp = `camp_test_${suffix}_camp`;
const viaSupabase = `camp_test_${suffix}_push`;

async function admin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** The schema as pg_dump writes it, without the per-run \restrict keys of newer pg_dump releases. */
async function schemaOf(database: string): Promise<string> {
  const result = await run("pg_dump", ["--schema-only", "--no-owner", databaseUrl(adminUrl, database)], {});
  expect(result.code, result.stderr).toBe(0);
  return result.stdout
    .split("\n")
    .filter((line) => !/^\\(un)?restrict /.test(line))
    .join("\n");
}

async function versionsOf(database: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: databaseUrl(adminUrl, database) });
  await client.connect();
  try {
    const { rows } = await client.query<{ version: string }>(
      "select version from supabase_migrations.schema_migrations order by version",
    );
    return rows.map((r) => r.version);
  } finally {
    await client.end();
  }
}

const push = (database: string) => supabase(["db", "push", `--remote=${databaseUrl(adminUrl, database)}`, "--yes"]);

beforeAll(async () => {
  await admin(async (client) => {
    for (const name of [viaCamp, viaSupabase]) await client.query(`create database ${name}`);
  });
});

afterAll(async () => {
  await admin(async (client) => {
    for (const name of [viaCamp, viaSupabase]) await client.query(`drop database if exists ${name} with (force)`);
  });
});

describe("the two migration paths", () => {
  it("camp migrate and supabase db push build the same schema and record the same versions", async () => {
    const applied = await migrate(databaseUrl(adminUrl, viaCamp));
    const pushed = await push(viaSupabase);
    expect(pushed.code, pushed.stderr).toBe(0);
    expect(`${pushed.stdout}${pushed.stderr}`).toMatch(/Applying migration/);

    const all = (await listMigrations()).map((m) => m.version);
    expect(applied).toEqual(all);
    expect(await versionsOf(viaCamp)).toEqual(all);
    expect(await versionsOf(viaSupabase)).toEqual(all);
    expect(await schemaOf(viaSupabase)).toBe(await schemaOf(viaCamp));
  }, 120_000);

  it("supabase db push after camp migrate applies nothing", async () => {
    const before = await schemaOf(viaCamp);
    const pushed = await push(viaCamp);
    expect(pushed.code, pushed.stderr).toBe(0);
    expect(`${pushed.stdout}${pushed.stderr}`).not.toMatch(/Applying migration/);
    expect(await schemaOf(viaCamp)).toBe(before);
  }, 120_000);

  it("camp migrate after supabase db push applies nothing", async () => {
    const before = await schemaOf(viaSupabase);
    expect(await migrate(databaseUrl(adminUrl, viaSupabase))).toEqual([]);
    expect(await schemaOf(viaSupabase)).toBe(before);
  });

  it("running either path again changes nothing", async () => {
    const camp = await schemaOf(viaCamp);
    expect(await migrate(databaseUrl(adminUrl, viaCamp))).toEqual([]);
    expect(await schemaOf(viaCamp)).toBe(camp);

    const pushedSchema = await schemaOf(viaSupabase);
    const again = await push(viaSupabase);
    expect(again.code, again.stderr).toBe(0);
    expect(`${again.stdout}${again.stderr}`).not.toMatch(/Applying migration/);
    expect(await schemaOf(viaSupabase)).toBe(pushedSchema);
  }, 120_000);
});
