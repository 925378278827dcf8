import { ALLOWED_PHOTO_TYPES, MAX_PHOTO_BYTES } from "./limits.ts";
import { assertPhotoKey, type PhotoStore, PhotoStoreError, type StoreFailure, type StoreHealth } from "./store.ts";

/** The service's private bucket; the service creates it (ensureBucket) when it is missing. */
export const PHOTO_BUCKET = "participant-photos";

/** What the bucket must be: private, with the photo contract's size and type limits. */
export const PHOTO_BUCKET_SETTINGS = {
  public: false,
  file_size_limit: MAX_PHOTO_BYTES,
  allowed_mime_types: ALLOWED_PHOTO_TYPES as string[],
};

const TIMEOUT_MS = 15_000;

/** A Storage error body: the real status is in `statusCode`, the meaning in `code` (the HTTP status is often 400). */
interface StorageErrorBody {
  statusCode?: string | number;
  code?: string;
  error?: string;
  message?: string;
}

/** Codes that say the object is there to find but missing. Nothing else does. */
const MISSING_OBJECT = "NoSuchKey";

/**
 * Photos in Supabase Storage, over its HTTP API with the service-role key
 * (the API checks the tenant itself; the bucket's policies guard direct
 * access). Written on fetch rather than storage-js because storage-js keeps
 * only the error's status, and the status cannot tell a missing object from
 * a missing bucket or a key the server took as anonymous: the body's `code`
 * can, and only `NoSuchKey` means "no such photo" (404 to the client).
 * Everything else is a store failure, `misconfigured` when the server
 * answered and refused, `unavailable` when it did not answer or failed.
 */
export class SupabasePhotoStore implements PhotoStore {
  private readonly base: string;
  private bucketChecked = false;

  constructor(
    supabaseUrl: string,
    private readonly serviceRoleKey: string,
    private readonly options: { fetch?: typeof fetch } = {},
  ) {
    this.base = `${supabaseUrl.replace(/\/+$/, "")}/storage/v1`;
  }

  async put(key: string, bytes: Uint8Array, contentType: string): Promise<void> {
    assertPhotoKey(key);
    const upload = () =>
      this.request("POST", `/object/${PHOTO_BUCKET}/${key}`, {
        body: bytes,
        // upsert: the key is the content hash, so an existing object holds these very bytes.
        headers: { "Content-Type": contentType, "x-upsert": "true", "Cache-Control": "max-age=0" },
      });
    let response = await upload();
    if (!response.ok) {
      let error = await errorOf(response);
      // A bucket that is missing (a new project, a database without the storage
      // schema at migration time) is made once, then the upload is tried again.
      if (error.code === "NoSuchBucket" && !this.bucketChecked) {
        await this.ensureBucket();
        response = await upload();
        error = response.ok ? {} : await errorOf(response);
      }
      if (!response.ok) throw failureOf("upload", response.status, error);
    }
    await response.body?.cancel();
  }

  async get(key: string): Promise<ReadableStream<Uint8Array> | undefined> {
    assertPhotoKey(key);
    const response = await this.request("GET", `/object/authenticated/${PHOTO_BUCKET}/${key}`);
    if (response.ok && response.body) return response.body;
    const error = await errorOf(response);
    if (error.code === MISSING_OBJECT) return undefined;
    throw failureOf("download", response.status, error);
  }

  /**
   * Removes the object. Storage answers a delete it may not do with 200 and
   * an empty list, removing nothing; so when nothing was removed, the object
   * is looked for: gone is success, still there (or unreadable) a failure.
   */
  async delete(key: string): Promise<void> {
    assertPhotoKey(key);
    const response = await this.request("DELETE", `/object/${PHOTO_BUCKET}`, { json: { prefixes: [key] } });
    if (!response.ok) throw await failure("remove", response);
    const removed = (await response.json()) as Array<{ name?: string }>;
    if (Array.isArray(removed) && removed.length > 0) return;
    const probe = await this.request("GET", `/object/authenticated/${PHOTO_BUCKET}/${key}`);
    if (probe.ok) {
      await probe.body?.cancel();
      throw new PhotoStoreError(
        "Supabase Storage remove removed nothing, and the object is still there: is the key the service-role key?",
        {
          kind: "misconfigured",
        },
      );
    }
    const error = await errorOf(probe);
    if (error.code !== MISSING_OBJECT) throw failureOf("remove", probe.status, error);
  }

  async list(prefix: string): Promise<string[]> {
    const keys: string[] = [];
    const folder = prefix.replace(/\/+$/, "");
    const limit = 1000;
    for (let offset = 0; ; offset += limit) {
      const response = await this.request("POST", `/object/list/${PHOTO_BUCKET}`, {
        json: { prefix: folder, limit, offset, sortBy: { column: "name", order: "asc" } },
      });
      if (!response.ok) throw await failure("list", response);
      const entries = (await response.json()) as Array<{ name: string; id: string | null }>;
      for (const entry of entries) {
        const path = folder ? `${folder}/${entry.name}` : entry.name;
        // Folders come back without an id; their contents are listed by another call.
        if (entry.id === null) keys.push(...(await this.list(path)));
        else keys.push(path);
      }
      if (entries.length < limit) break;
    }
    return keys.sort();
  }

  /**
   * Reads the bucket with the service key: ok, misconfigured (a wrong key or
   * URL) or unavailable. A bucket missing at the first check is made, as at a
   * Node start: the Edge Function has no start of its own to do it in.
   */
  async health(): Promise<StoreHealth> {
    try {
      const response = await this.request("GET", `/bucket/${PHOTO_BUCKET}`);
      if (response.ok) {
        await response.body?.cancel();
        return "ok";
      }
      const error = await errorOf(response);
      if (error.code === "NoSuchBucket" && !this.bucketChecked) {
        await this.ensureBucket();
        return "ok";
      }
      return failureOf("bucket check", response.status, error).kind;
    } catch (error) {
      return error instanceof PhotoStoreError ? error.kind : "unavailable";
    }
  }

  /**
   * Makes sure the bucket exists as PHOTO_BUCKET_SETTINGS says: creates it
   * when missing, corrects it when it differs (public, other limits). Only
   * the service-role key may do either; any other key, a wrong URL or a down
   * server throws, with a message an operator can act on.
   */
  async ensureBucket(): Promise<"created" | "updated" | "ok"> {
    const found = await this.request("GET", `/bucket/${PHOTO_BUCKET}`);
    let outcome: "created" | "updated" | "ok";
    if (found.ok) {
      const bucket = (await found.json()) as typeof PHOTO_BUCKET_SETTINGS;
      const same =
        bucket.public === false &&
        Number(bucket.file_size_limit) === PHOTO_BUCKET_SETTINGS.file_size_limit &&
        [...(bucket.allowed_mime_types ?? [])].sort().join() === [...PHOTO_BUCKET_SETTINGS.allowed_mime_types].sort().join();
      if (same) outcome = "ok";
      else {
        const updated = await this.request("PUT", `/bucket/${PHOTO_BUCKET}`, { json: PHOTO_BUCKET_SETTINGS });
        if (!updated.ok) throw await failure("bucket update", updated);
        await updated.body?.cancel();
        outcome = "updated";
      }
    } else {
      const error = await errorOf(found);
      if (error.code !== "NoSuchBucket") throw failureOf("bucket check", found.status, error);
      // NoSuchBucket is also what an anon or unknown key sees; creating tells them apart.
      const created = await this.request("POST", "/bucket", {
        json: { id: PHOTO_BUCKET, name: PHOTO_BUCKET, ...PHOTO_BUCKET_SETTINGS },
      });
      if (!created.ok) {
        const reason = await errorOf(created);
        if (reason.code !== "BucketAlreadyExists" && reason.code !== "ResourceAlreadyExists") {
          throw new PhotoStoreError(
            `Supabase Storage refused to create the bucket ${PHOTO_BUCKET} (${describe(created.status, reason)}): ` +
              "SUPABASE_SERVICE_ROLE_KEY must be the project's service-role key",
            { kind: "misconfigured" },
          );
        }
      } else await created.body?.cancel();
      outcome = "created";
    }
    this.bucketChecked = true;
    return outcome;
  }

  private async request(
    method: string,
    path: string,
    init: { body?: Uint8Array; json?: unknown; headers?: Record<string, string> } = {},
  ): Promise<Response> {
    const headers: Record<string, string> = {
      apikey: this.serviceRoleKey,
      Authorization: `Bearer ${this.serviceRoleKey}`,
      ...init.headers,
    };
    let body: BodyInit | undefined = init.body as BodyInit | undefined;
    if (init.json !== undefined) {
      body = JSON.stringify(init.json);
      headers["Content-Type"] = "application/json";
    }
    try {
      return await (this.options.fetch ?? fetch)(`${this.base}${path}`, {
        method,
        headers,
        body,
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
    } catch (error) {
      throw new PhotoStoreError(`Supabase Storage did not answer ${method} ${path.split("/")[1]}: ${(error as Error).message}`, {
        cause: error,
        kind: "unavailable",
      });
    }
  }
}

async function errorOf(response: Response): Promise<StorageErrorBody> {
  try {
    const body = (await response.json()) as StorageErrorBody;
    return body && typeof body === "object" ? body : {};
  } catch {
    return {};
  }
}

function describe(status: number, error: StorageErrorBody): string {
  const parts = [`HTTP ${status}`];
  if (error.statusCode !== undefined) parts.push(`status ${error.statusCode}`);
  if (error.code) parts.push(error.code);
  if (error.message ?? error.error) parts.push(String(error.message ?? error.error));
  return parts.join(", ");
}

/**
 * A server error (5xx in the status or the body) may pass: unavailable.
 * Any other refusal of a well-formed request (no bucket, a key taken as
 * anonymous, an unknown route from a wrong URL) needs the operator.
 */
function failureOf(operation: string, status: number, error: StorageErrorBody): PhotoStoreError {
  const real = Number(error.statusCode ?? status);
  const kind: StoreFailure = real >= 500 || status >= 500 || status === 429 ? "unavailable" : "misconfigured";
  return new PhotoStoreError(`Supabase Storage ${operation} failed: ${describe(status, error)}`, { kind });
}

async function failure(operation: string, response: Response): Promise<PhotoStoreError> {
  return failureOf(operation, response.status, await errorOf(response));
}
