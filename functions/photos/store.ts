import { ApiError } from "../errors.ts";

/**
 * Where photo bytes live. Keys are `<tenant_id>/<participant_id>/<sha256>.<ext>`;
 * the database row says which key is current, so a store needs no index of
 * its own. Two adapters: local files (node/photo-files.ts) and Supabase
 * Storage (supabase-store.ts); an in-memory one for tests.
 */
export interface PhotoStore {
  /** Stores the bytes under the key, replacing any object already there. */
  put(key: string, bytes: Uint8Array, contentType: string): Promise<void>;
  /** The object's bytes as a stream, or undefined when there is no such object. */
  get(key: string): Promise<ReadableStream<Uint8Array> | undefined>;
  /** Removes the object; removing a missing object is not an error. */
  delete(key: string): Promise<void>;
  /** Every key under a prefix such as `<tenant_id>/` (for checks and clean-up, not for serving). */
  list(prefix: string): Promise<string[]>;
  /** Whether the store works as configured, without changing anything. */
  health(): Promise<StoreHealth>;
  /**
   * Partial writes a crash left behind that are older than `olderThanMs`
   * (a file store's temporary files: a photo's bytes, under no key), removed
   * unless `dryRun`; returns their paths. Stores that write atomically have none.
   */
  removeAbandoned?(olderThanMs: number, dryRun: boolean): Promise<string[]>;
}

/**
 * Why a store failed: `unavailable` (down, unreachable, timing out: may pass
 * by itself) or `misconfigured` (a wrong key, URL or bucket: needs the
 * operator). Either way the API answers 503; /health tells them apart.
 */
export type StoreFailure = "unavailable" | "misconfigured";

/** What /health reports for photo storage. */
export type StoreHealth = "ok" | StoreFailure;

/** A store that failed: the API answers 503 and logs the cause. */
export class PhotoStoreError extends Error {
  readonly kind: StoreFailure;

  constructor(message: string, options: { cause?: unknown; kind?: StoreFailure } = {}) {
    super(message, { cause: options.cause });
    this.name = "PhotoStoreError";
    this.kind = options.kind ?? "unavailable";
  }
}

const KEY = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\/[0-9a-f-]{36}\/[0-9a-f]{64}\.(jpg|png|gif|webp)$/;

/** Adapters refuse any other key shape, so a key can never climb out of its folder. */
export function assertPhotoKey(key: string): void {
  if (!KEY.test(key)) throw new PhotoStoreError(`not a photo key: ${JSON.stringify(key)}`);
}

/** Used when no store is configured: every photo request answers 503 instead of losing photos. */
export const unconfiguredPhotoStore: PhotoStore = {
  put: unavailable,
  get: unavailable,
  delete: unavailable,
  list: unavailable,
  health: async () => "misconfigured",
};

async function unavailable(): Promise<never> {
  throw new ApiError("SERVICE_UNAVAILABLE", "photo storage is not configured");
}
