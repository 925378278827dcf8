import { randomBytes, randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A local stand-in for the Supabase Storage HTTP API (objects and buckets),
 * on 127.0.0.1 at a random port, under `/storage/v1` as on a hosted project.
 * It answers as the real server does (supabase/storage), in the ways that
 * matter to the adapter:
 *   - errors are HTTP 400 with the real status in the body's `statusCode` and
 *     the meaning in `code` (`NoSuchKey`, `NoSuchBucket`, `InvalidJWT`, ...);
 *   - a request with the anon key, or an object GET with a token it cannot
 *     verify (served as anonymous), sees no bucket: NoSuchBucket; the anon
 *     key's delete answers 200 `[]` and removes nothing; its list is `[]`;
 *   - any other route (a wrong SUPABASE_URL) is a plain 404;
 *   - without a bucket `file_size_limit` (and UPLOAD_FILE_SIZE_LIMIT, here
 *     `uploadFileSizeLimit`) no size limit is enforced.
 *
 *   const storage = await startStorageStandIn();
 *   ... new SupabasePhotoStore(storage.url, storage.serviceKey) ...
 *   await storage.close();
 */

export interface BucketRules {
  public?: boolean;
  /** Bytes; larger uploads are refused. Unset: no limit. */
  file_size_limit?: number | null;
  allowed_mime_types?: string[] | null;
}

export interface StoredObject {
  bytes: Buffer;
  contentType: string;
  createdAt: string;
}

export interface StorageStandIn {
  /** The project URL (what SUPABASE_URL holds): requests go to `${url}/storage/v1/...`. */
  url: string;
  serviceKey: string;
  anonKey: string;
  /** Bucket id → its settings; delete one to simulate a missing bucket. */
  buckets: Map<string, BucketRules>;
  /** `<bucket>/<path>` → object. */
  objects: Map<string, StoredObject>;
  requests: Array<{ method: string; path: string }>;
  /** The next `count` requests answer `status` with a Storage-style error body. */
  failNext(status: number, count?: number): void;
  close(): Promise<void>;
}

interface Options {
  /** Buckets that exist at start; by default none (the service creates its own). */
  buckets?: Record<string, BucketRules>;
  serviceKey?: string;
  uploadFileSizeLimit?: number;
}

const PREFIX = "/storage/v1";

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

/** How the real server renders an error: HTTP 400, the real status and the code in the body. */
const storageError = (res: ServerResponse, statusCode: number, code: string, message: string) =>
  send(res, 400, { statusCode: String(statusCode), code, error: code, message });

const noSuchBucket = (res: ServerResponse) => storageError(res, 404, "NoSuchBucket", "Bucket not found");

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function fileEntry(name: string, object: StoredObject) {
  return {
    name,
    id: randomUUID(),
    updated_at: object.createdAt,
    created_at: object.createdAt,
    last_accessed_at: object.createdAt,
    metadata: { size: object.bytes.length, mimetype: object.contentType, cacheControl: "max-age=0" },
  };
}

type Caller = "service" | "anon" | "invalid";

export async function startStorageStandIn(options: Options = {}): Promise<StorageStandIn> {
  const buckets = new Map(Object.entries(options.buckets ?? {}));
  const serviceKey = options.serviceKey ?? `stand-in-service-key-${randomBytes(8).toString("hex")}`;
  const anonKey = `stand-in-anon-key-${randomBytes(8).toString("hex")}`;
  const objects = new Map<string, StoredObject>();
  const requests: StorageStandIn["requests"] = [];
  const failures: number[] = [];

  function caller(req: IncomingMessage): Caller {
    const token = req.headers.authorization?.replace(/^Bearer /, "");
    if (token === serviceKey) return "service";
    if (token === anonKey) return "anon";
    return "invalid";
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://stand-in");
    const method = req.method ?? "GET";
    requests.push({ method, path: url.pathname });
    const failure = failures.shift();
    if (failure !== undefined) return storageError(res, failure, "InternalError", "injected failure");
    if (!url.pathname.startsWith(`${PREFIX}/`)) return send(res, 404, { message: "no Route matched with those values" });
    const path = decodeURIComponent(url.pathname.slice(PREFIX.length));
    const body = method === "GET" || method === "HEAD" ? Buffer.alloc(0) : await readBody(req);
    const json = () => (body.length > 0 ? JSON.parse(body.toString("utf8")) : {});
    const who = caller(req);

    // An object GET serves a token it cannot verify as anonymous; every other route refuses it.
    const objectGet = method === "GET" && /^\/object\/(authenticated\/)?[^/]+\/.+$/.test(path);
    if (who === "invalid" && !objectGet) return storageError(res, 403, "InvalidJWT", "invalid signature");
    // Row-level security on storage.buckets and storage.objects: anonymous callers see nothing.
    const sees = who === "service";

    let match = /^\/bucket\/([^/]+)$/.exec(path);
    if (match?.[1] && (method === "GET" || method === "PUT")) {
      const bucket = buckets.get(match[1]);
      if (!bucket || !sees) return noSuchBucket(res);
      if (method === "PUT") {
        Object.assign(bucket, json());
        return send(res, 200, { message: "Successfully updated" });
      }
      return send(res, 200, { id: match[1], name: match[1], ...bucket });
    }
    if (path === "/bucket" && method === "POST") {
      if (!sees) return storageError(res, 403, "AccessDenied", "new row violates row-level security policy");
      const { id, name: _name, ...rules } = json();
      if (buckets.has(id)) return storageError(res, 409, "BucketAlreadyExists", "The resource already exists");
      buckets.set(id, rules);
      return send(res, 200, { name: id });
    }

    match = /^\/object\/list\/([^/]+)$/.exec(path);
    if (match?.[1] && method === "POST") {
      if (!buckets.has(match[1])) return noSuchBucket(res);
      if (!sees) return send(res, 200, []);
      const bucket = match[1];
      const { prefix = "", limit = 100, offset = 0 } = json();
      const folder = prefix ? `${bucket}/${String(prefix).replace(/\/+$/, "")}/` : `${bucket}/`;
      const entries = new Map<string, ReturnType<typeof fileEntry> | { name: string; id: null }>();
      for (const [key, object] of objects) {
        if (!key.startsWith(folder)) continue;
        const rest = key.slice(folder.length);
        const slash = rest.indexOf("/");
        if (slash < 0) entries.set(rest, fileEntry(rest, object));
        else entries.set(rest.slice(0, slash), { name: rest.slice(0, slash), id: null });
      }
      const sorted = [...entries.values()].sort((a, b) => a.name.localeCompare(b.name));
      return send(res, 200, sorted.slice(offset, offset + limit));
    }

    match = /^\/object\/([^/]+)$/.exec(path);
    if (match?.[1] && method === "DELETE") {
      const bucket = match[1];
      if (!buckets.has(bucket)) return noSuchBucket(res);
      // What row-level security hides cannot be deleted: 200 and an empty list.
      if (!sees) return send(res, 200, []);
      const removed = [];
      for (const name of (json().prefixes ?? []) as string[]) {
        const object = objects.get(`${bucket}/${name}`);
        if (!object) continue;
        objects.delete(`${bucket}/${name}`);
        removed.push({ ...fileEntry(name, object), bucket_id: bucket });
      }
      return send(res, 200, removed);
    }

    match = /^\/object\/(?:authenticated\/)?(([^/]+)\/.+)$/.exec(path);
    if (match?.[1] && match[2]) {
      const [, key, bucketId] = match as unknown as [string, string, string];
      const rules = buckets.get(bucketId);
      if (!rules || !sees) return noSuchBucket(res);
      if (method === "GET" || method === "HEAD") {
        const object = objects.get(key);
        if (!object) return storageError(res, 404, "NoSuchKey", "Object not found");
        res.writeHead(200, { "content-type": object.contentType, "content-length": object.bytes.length });
        res.end(method === "HEAD" ? undefined : object.bytes);
        return;
      }
      if (method === "POST" || method === "PUT") {
        const upsert = method === "PUT" || req.headers["x-upsert"] === "true";
        if (objects.has(key) && !upsert) return storageError(res, 409, "Duplicate", "The resource already exists");
        const limit = rules.file_size_limit ?? options.uploadFileSizeLimit;
        if (limit != null && body.length > limit) {
          return storageError(res, 413, "EntityTooLarge", "The object exceeded the maximum allowed size");
        }
        const mime = (req.headers["content-type"] ?? "").split(";")[0]?.trim() ?? "";
        if (rules.allowed_mime_types?.length && !rules.allowed_mime_types.includes(mime)) {
          return storageError(res, 415, "InvalidMimeType", `mime type ${mime} is not supported`);
        }
        objects.set(key, { bytes: body, contentType: mime, createdAt: new Date().toISOString() });
        return send(res, 200, { Key: key, Id: randomUUID() });
      }
    }
    return send(res, 404, { message: `Route ${method}:${url.pathname} not found`, error: "Not Found", statusCode: 404 });
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error) => storageError(res, 500, "InternalError", String(error)));
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    serviceKey,
    anonKey,
    buckets,
    objects,
    requests,
    failNext(status, count = 1) {
      for (let i = 0; i < count; i++) failures.push(status);
    },
    close: () =>
      new Promise<void>((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}
