import pg from "pg";
import { Database } from "../../functions/db/database.ts";
import { migrate } from "../../node/migrate.ts";
import { type SeedOptions, seed } from "./seed-data.ts";
import { forgetSeed, readSeedFile, recordSeed, type SeedFile } from "./seed-file.ts";

/** Bench databases beside DATABASE_URL's: the smoke run's scratch database and the scale databases. */

export const databaseName = (url: string) => decodeURIComponent(new URL(url).pathname.slice(1));

/** The same server and credentials, another database. */
export function sibling(url: string, name: string): string {
  const next = new URL(url);
  next.pathname = `/${name}`;
  return next.toString();
}

async function onServer(url: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

export async function dropDatabase(serverUrl: string, name: string): Promise<void> {
  await onServer(serverUrl, `drop database if exists ${pg.escapeIdentifier(name)} with (force)`);
}

/** A new, migrated, seeded database; its keys are recorded like `npm run bench:seed` records them. */
export async function createSeeded(serverUrl: string, name: string, options: SeedOptions): Promise<SeedFile> {
  await dropDatabase(serverUrl, name);
  await onServer(serverUrl, `create database ${pg.escapeIdentifier(name)}`);
  const url = sibling(serverUrl, name);
  await forgetSeed(url);
  await migrate(url);
  const db = new Database(url, { max: 2 });
  try {
    const tenants = await seed(db, options);
    return await recordSeed(url, tenants, options.tenants * options.instancesPerTenant * options.participantsPerInstance);
  } finally {
    await db.close();
  }
}

/** Participants in the database (live and deleted), as the owner sees them. */
export async function countParticipants(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: number }>("select count(*)::int as n from public.participants");
    return rows[0]?.n ?? 0;
  } finally {
    await client.end();
  }
}

/**
 * A scale database with `participants` participants (tenants of 20 instances of
 * 500), reused when an earlier run left one of that size with its keys.
 */
export async function scaleDatabase(serverUrl: string, participants: number, log: (line: string) => void): Promise<string> {
  const name = `${databaseName(serverUrl)}_scale_${participants}`;
  const url = sibling(serverUrl, name);
  const known = await readSeedFile(url);
  const existing = await countParticipants(url).catch(() => -1);
  if (known && existing === participants) return url;
  log(`creating ${name} with ${participants.toLocaleString("en")} participants (once; later runs reuse it)`);
  await createSeeded(serverUrl, name, {
    tenants: participants / 10_000,
    instancesPerTenant: 20,
    participantsPerInstance: 500,
    label: "bench scale",
    log,
  });
  return url;
}

/** Removes what the bench's writes added (the API cannot hard-delete; the owner can). */
export async function removeBenchWrites(url: string, prefix: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query("delete from public.participants where user_id like $1", [`${prefix}%`]);
  } finally {
    await client.end();
  }
  await vacuumParticipants(url);
}

/**
 * Vacuums and analyses the participants: a run's writes, deleted afterwards,
 * leave dead rows that every later count of an instance reads until a vacuum
 * clears them, and autovacuum may be off (it is on the project's machines).
 * Unvacuumed, 460,000 dead rows after a day of runs tripled the list's
 * Postgres time per request (1.05 → 3.4 ms).
 */
export async function vacuumParticipants(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query("vacuum (analyze) public.participants");
  } finally {
    await client.end();
  }
}
