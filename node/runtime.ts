import type { Config } from "../functions/config.ts";
import { startEmbeddedPostgres } from "./embedded-db.ts";
import { migrate } from "./migrate.ts";

export interface ResolvedDatabase {
  url: string;
  embedded: boolean;
  /** Whether this process started the embedded cluster (and so stops it); false for DATABASE_URL or a cluster already running. */
  owned: boolean;
  stop(): Promise<void>;
}

/** Messages for people go to stderr; stdout is kept for output meant for scripts. */
export const say = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

/**
 * The database to use: DATABASE_URL when set, otherwise the embedded Postgres
 * under DATA_DIR (started here, or the one a running server already started).
 * Pending migrations are applied either way.
 */
export async function resolveDatabase(config: Config): Promise<ResolvedDatabase> {
  let resolved: ResolvedDatabase;
  if (config.DATABASE_URL) {
    resolved = { url: config.DATABASE_URL, embedded: false, owned: false, stop: async () => {} };
  } else {
    const embedded = await startEmbeddedPostgres(config.DATA_DIR, { log: say });
    resolved = { url: embedded.url, embedded: true, owned: embedded.owned, stop: embedded.stop };
  }
  try {
    for (const version of await migrate(resolved.url, say)) say(`migrated ${version}`);
  } catch (error) {
    await resolved.stop();
    throw error;
  }
  return resolved;
}
