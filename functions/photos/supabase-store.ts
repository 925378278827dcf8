import type { StorageClient } from "@supabase/storage-js";
import { assertPhotoKey, type PhotoStore, PhotoStoreError } from "./store.ts";

/** The private bucket declared in supabase/config.toml and the storage migration. */
export const PHOTO_BUCKET = "participant-photos";

type StorageJs = typeof import("@supabase/storage-js");
type Bucket = ReturnType<StorageClient["from"]>;

/** storage-js, loaded on first use: it stays out of the Edge Function's cold start. */
let storageJs: StorageJs | undefined;
async function loadStorageJs(): Promise<StorageJs> {
  storageJs ??= await import("@supabase/storage-js");
  return storageJs;
}

/** Storage has answered "not found" both as a 404 and as a 400 whose body says 404. */
function isNotFound(error: unknown): boolean {
  // Only called on an operation's error, so storage-js is loaded by then.
  if (!storageJs || !(error instanceof storageJs.StorageApiError)) return false;
  return error.status === 404 || error.statusCode === "404" || error.statusCode === "not_found";
}

function failed(operation: string, error: unknown): PhotoStoreError {
  const detail = error instanceof Error ? error.message : String(error);
  return new PhotoStoreError(`Supabase Storage ${operation} failed: ${detail}`, { cause: error });
}

/**
 * Photos in Supabase Storage, through storage-js with the service-role key
 * (the API checks the tenant itself; the bucket's policies guard direct
 * access). A thin layer: one storage-js call per operation.
 */
export class SupabasePhotoStore implements PhotoStore {
  private bucketHandle?: Promise<Bucket>;

  constructor(
    private readonly supabaseUrl: string,
    private readonly serviceRoleKey: string,
    private readonly options: { fetch?: typeof fetch } = {},
  ) {}

  private bucket(): Promise<Bucket> {
    this.bucketHandle ??= loadStorageJs().then(({ StorageClient }) =>
      new StorageClient(
        `${this.supabaseUrl.replace(/\/+$/, "")}/storage/v1`,
        { apikey: this.serviceRoleKey, Authorization: `Bearer ${this.serviceRoleKey}` },
        this.options.fetch,
      ).from(PHOTO_BUCKET),
    );
    return this.bucketHandle;
  }

  async put(key: string, bytes: Uint8Array, contentType: string): Promise<void> {
    assertPhotoKey(key);
    // upsert: the key is the content hash, so an existing object holds these very bytes.
    const { error } = await (await this.bucket()).upload(key, bytes, { contentType, upsert: true, cacheControl: "0" });
    if (error) throw failed("upload", error);
  }

  async get(key: string): Promise<ReadableStream<Uint8Array> | undefined> {
    assertPhotoKey(key);
    const { data, error } = await (await this.bucket()).download(key).asStream();
    if (error && isNotFound(error)) return undefined;
    if (error || !data) throw failed("download", error);
    return data;
  }

  async delete(key: string): Promise<void> {
    assertPhotoKey(key);
    const { error } = await (await this.bucket()).remove([key]);
    if (error && !isNotFound(error)) throw failed("remove", error);
  }

  async list(prefix: string): Promise<string[]> {
    const keys: string[] = [];
    const folder = prefix.replace(/\/+$/, "");
    const pageSize = 1000;
    for (let offset = 0; ; offset += pageSize) {
      const { data, error } = await (await this.bucket()).list(folder, { limit: pageSize, offset });
      if (error) throw failed("list", error);
      for (const entry of data) {
        const path = folder ? `${folder}/${entry.name}` : entry.name;
        // Folders come back without an id; their contents are listed by another call.
        if (entry.id === null) keys.push(...(await this.list(path)));
        else keys.push(path);
      }
      if (data.length < pageSize) break;
    }
    return keys.sort();
  }
}
