import { randomBytes, randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A small local stand-in for the Supabase Storage HTTP endpoints that
 * @supabase/storage-js calls (upload, download, remove, list, signed URLs),
 * listening on 127.0.0.1 on a random port. It answers the way the Storage API
 * does (JSON error bodies with a `statusCode`, "not found" as a 400 whose body
 * says 404), enforces a service key and each bucket's size and type limits,
 * and records the requests it got. It is not Supabase: what it checks is the
 * adapter's use of storage-js, not Storage's own behaviour.
 *
 *   const storage = await startStorageStandIn({ buckets: { "participant-photos": {} } });
 *   ... new SupabasePhotoStore(storage.url, storage.serviceKey) ...
 *   await storage.close();
 */

export interface BucketRules {
  /** Bytes; larger uploads are refused (413 in the body). */
  fileSizeLimit?: number;
  allowedMimeTypes?: string[];
}

export interface StoredObject {
  bytes: Buffer;
  contentType: string;
  createdAt: string;
}

export interface StorageStandIn {
  /** The project URL to give storage-js users: requests go to `${url}/storage/v1/...`. */
  url: string;
  serviceKey: string;
  /** `<bucket>/<path>` → object. */
  objects: Map<string, StoredObject>;
  requests: Array<{ method: string; path: string }>;
  /** The next `count` requests answer `status` with a Storage-style error body. */
  failNext(status: number, count?: number): void;
  close(): Promise<void>;
}

interface Options {
  buckets?: Record<string, BucketRules>;
  serviceKey?: string;
}

const PREFIX = "/storage/v1";

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

const storageError = (res: ServerResponse, httpStatus: number, statusCode: string, error: string, message: string) =>
  send(res, httpStatus, { statusCode, error, message });

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** An upload's bytes and type: a raw body, or the file of a multipart body (what storage-js sends for a Blob). */
async function uploadedFile(req: IncomingMessage, body: Buffer): Promise<{ bytes: Buffer; contentType: string }> {
  const type = req.headers["content-type"] ?? "application/octet-stream";
  if (!type.startsWith("multipart/form-data")) return { bytes: body, contentType: type };
  const form = await new Request("http://stand-in/", {
    method: "POST",
    headers: { "content-type": type },
    body: new Uint8Array(body),
  }).formData();
  for (const value of form.values()) {
    if (typeof value !== "string") return { bytes: Buffer.from(await value.arrayBuffer()), contentType: value.type };
  }
  return { bytes: Buffer.alloc(0), contentType: type };
}

function fileEntry(name: string, object: StoredObject) {
  return {
    name,
    id: randomUUID(),
    updated_at: object.createdAt,
    created_at: object.createdAt,
    last_accessed_at: object.createdAt,
    metadata: {
      size: object.bytes.length,
      mimetype: object.contentType,
      cacheControl: "max-age=0",
      lastModified: object.createdAt,
      contentLength: object.bytes.length,
      httpStatusCode: 200,
    },
  };
}

export async function startStorageStandIn(options: Options = {}): Promise<StorageStandIn> {
  const buckets = options.buckets ?? { "participant-photos": {} };
  const serviceKey = options.serviceKey ?? `stand-in-service-key-${randomBytes(8).toString("hex")}`;
  const objects = new Map<string, StoredObject>();
  const requests: StorageStandIn["requests"] = [];
  const signed = new Map<string, { key: string; expires: number }>();
  const failures: number[] = [];

  function authorised(req: IncomingMessage): boolean {
    return req.headers.authorization === `Bearer ${serviceKey}` && req.headers.apikey === serviceKey;
  }

  function serveObject(res: ServerResponse, key: string, head: boolean) {
    const object = objects.get(key);
    if (!object) return storageError(res, 400, "404", "not_found", "Object not found");
    res.writeHead(200, { "content-type": object.contentType, "content-length": object.bytes.length });
    res.end(head ? undefined : object.bytes);
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://stand-in");
    const method = req.method ?? "GET";
    requests.push({ method, path: url.pathname });
    const failure = failures.shift();
    if (failure !== undefined) return storageError(res, failure, String(failure), "injected", "injected failure");
    if (!url.pathname.startsWith(`${PREFIX}/`)) return storageError(res, 404, "404", "not_found", "no such route");
    const path = decodeURIComponent(url.pathname.slice(PREFIX.length));

    // Signed URLs carry their own authorisation.
    const signedMatch = /^\/object\/sign\/(.+)$/.exec(path);
    if (signedMatch?.[1] && method === "GET") {
      const grant = signed.get(url.searchParams.get("token") ?? "");
      if (!grant || grant.key !== signedMatch[1] || grant.expires < Date.now()) {
        return storageError(res, 400, "InvalidJWT", "invalid_token", "invalid or expired signature");
      }
      return serveObject(res, grant.key, false);
    }

    if (!authorised(req)) return storageError(res, 400, "403", "Unauthorized", "invalid service key");
    const body = method === "GET" || method === "HEAD" ? Buffer.alloc(0) : await readBody(req);
    const json = () => (body.length > 0 ? JSON.parse(body.toString("utf8")) : {});

    let match = /^\/object\/list\/([^/]+)$/.exec(path);
    if (match?.[1] && method === "POST") {
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

    match = /^\/object\/sign\/(.+)$/.exec(path);
    if (match?.[1] && method === "POST") {
      const key = match[1];
      if (!objects.has(key)) return storageError(res, 400, "404", "not_found", "Object not found");
      const token = randomBytes(16).toString("hex");
      signed.set(token, { key, expires: Date.now() + Number(json().expiresIn ?? 60) * 1000 });
      return send(res, 200, { signedURL: `/object/sign/${key}?token=${token}` });
    }

    match = /^\/object\/([^/]+)$/.exec(path);
    if (match?.[1] && method === "DELETE") {
      const bucket = match[1];
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
      const [, key, bucket] = match as unknown as [string, string, string];
      const rules = buckets[bucket];
      if (!rules) return storageError(res, 400, "404", "Bucket not found", "Bucket not found");
      if (method === "GET" || method === "HEAD") return serveObject(res, key, method === "HEAD");
      if (method === "POST" || method === "PUT") {
        const upsert = method === "PUT" || req.headers["x-upsert"] === "true";
        if (objects.has(key) && !upsert) return storageError(res, 400, "409", "Duplicate", "The resource already exists");
        const file = await uploadedFile(req, body);
        if (rules.fileSizeLimit !== undefined && file.bytes.length > rules.fileSizeLimit) {
          return storageError(res, 400, "413", "Payload too large", "The object exceeded the maximum allowed size");
        }
        const mime = file.contentType.split(";")[0]?.trim() ?? "";
        if (rules.allowedMimeTypes && !rules.allowedMimeTypes.includes(mime)) {
          return storageError(res, 400, "415", "invalid_mime_type", `mime type ${mime} is not supported`);
        }
        objects.set(key, { bytes: file.bytes, contentType: mime, createdAt: new Date().toISOString() });
        return send(res, 200, { Key: key, Id: randomUUID() });
      }
    }
    return storageError(res, 404, "404", "not_found", `no stand-in route for ${method} ${path}`);
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error) => storageError(res, 500, "500", "internal", String(error)));
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    serviceKey,
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
