import type { Config } from "../config.ts";
import { type PhotoStore, unconfiguredPhotoStore } from "./store.ts";
import { SupabasePhotoStore } from "./supabase-store.ts";

/** The Supabase Storage adapter for this configuration; throws when its variables are missing. */
export function supabasePhotoStore(config: Config): SupabasePhotoStore {
  if (!config.SUPABASE_URL || !config.SUPABASE_SERVICE_ROLE_KEY) {
    throw new Error("PHOTO_STORAGE=supabase needs SUPABASE_URL and SUPABASE_SERVICE_ROLE_KEY");
  }
  return new SupabasePhotoStore(config.SUPABASE_URL, config.SUPABASE_SERVICE_ROLE_KEY);
}

/**
 * The store an entry gets when it names none. Without a file system of its
 * own (the Edge Function), Supabase Storage is the only place photos can go,
 * and Supabase provides its URL and key to every function; with neither set,
 * photo requests answer 503 rather than keep photos somewhere they would be lost.
 */
export function defaultPhotoStore(config: Config): PhotoStore {
  return config.SUPABASE_URL && config.SUPABASE_SERVICE_ROLE_KEY ? supabasePhotoStore(config) : unconfiguredPhotoStore;
}
