import { join } from "node:path";
import type { Config } from "../functions/config.ts";
import { supabasePhotoStore } from "../functions/photos/default-store.ts";
import type { PhotoStore } from "../functions/photos/store.ts";
import { startEmbeddedPostgres } from "./embedded-db.ts";
import { migrate } from "./migrate.ts";
import { FilePhotoStore } from "./photo-files.ts";

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
export async function resolveDatabase(config: Config, options: { ownProcessGroup?: boolean } = {}): Promise<ResolvedDatabase> {
  let resolved: ResolvedDatabase;
  if (config.DATABASE_URL) {
    resolved = { url: config.DATABASE_URL, embedded: false, owned: false, stop: async () => {} };
  } else {
    const embedded = await startEmbeddedPostgres(config.DATA_DIR, { log: say, ownProcessGroup: options.ownProcessGroup });
    resolved = { url: embedded.url, embedded: true, owned: embedded.owned, stop: embedded.stop };
  }
  try {
    const applied = await migrate(resolved.url);
    // One line, not one per file: on a first start that is every migration there is.
    if (applied.length === 1) say(`applied migration ${applied[0]}`);
    else if (applied.length > 1) say(`applied ${applied.length} migrations (${applied[0]} to ${applied.at(-1)})`);
  } catch (error) {
    await resolved.stop();
    throw error;
  }
  return resolved;
}

/** PHOTO_STORAGE: files under DATA_DIR/photos (the default) or Supabase Storage. */
export function configuredPhotoStore(config: Config): PhotoStore {
  return config.PHOTO_STORAGE === "supabase" ? supabasePhotoStore(config) : new FilePhotoStore(join(config.DATA_DIR, "photos"));
}
