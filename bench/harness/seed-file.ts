import { mkdir, readFile, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import type { SeededTenant } from "./seed-data.ts";

/**
 * The plaintext keys of a seeded database, for the load harness. Kept under
 * bench/results/ (gitignored): they open real tenants of that database.
 */

export const RESULTS_DIR = fileURLToPath(new URL("../results/", import.meta.url));

export interface SeedFile {
  database: string;
  seeded_at: string;
  participants: number;
  tenants: SeededTenant[];
}

const databaseName = (url: string) => decodeURIComponent(new URL(url).pathname.slice(1)) || "postgres";
const pathFor = (url: string) => `${RESULTS_DIR}seed-${databaseName(url).replace(/[^A-Za-z0-9_-]/g, "_")}.json`;

export async function readSeedFile(url: string): Promise<SeedFile | undefined> {
  try {
    return JSON.parse(await readFile(pathFor(url), "utf8")) as SeedFile;
  } catch {
    return undefined;
  }
}

/** Adds the tenants of one seed run to the database's file (a database may be seeded more than once). */
export async function recordSeed(url: string, tenants: SeededTenant[], participants: number): Promise<SeedFile> {
  const previous = await readSeedFile(url);
  const file: SeedFile = {
    database: databaseName(url),
    seeded_at: new Date().toISOString(),
    participants: (previous?.participants ?? 0) + participants,
    tenants: [...(previous?.tenants ?? []), ...tenants],
  };
  await mkdir(RESULTS_DIR, { recursive: true });
  await writeFile(pathFor(url), `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600 });
  return file;
}

/** Forgets a database's keys (its data was dropped). */
export async function forgetSeed(url: string): Promise<void> {
  await writeFile(pathFor(url), "", { flag: "w" }).catch(() => {});
}
