import { randomBytes } from "node:crypto";
import { createApp } from "../../functions/app.ts";
import { loadConfig } from "../../functions/config.ts";
import type { Database } from "../../functions/db/database.ts";
import { MemoryPhotoStore } from "../../functions/photos/memory-store.ts";
import type { PhotoStore } from "../../functions/photos/store.ts";
import { validated } from "./contract.ts";
import type { TestDatabase } from "./database.ts";
import { type CallResult, call, TEST_JWT_SECRET } from "./fixtures.ts";

/** The real app with a photo store of the test's choice (in memory unless given). */
/** The app with a photo store of the test's choosing, its answers checked against the OpenAPI document as testApp's are. */
export function photoApp(db: Database, store: PhotoStore = new MemoryPhotoStore(), env: Record<string, string> = {}) {
  return validated(
    createApp({
      db,
      config: loadConfig({ AUTH_JWT_SECRET: TEST_JWT_SECRET, RATE_LIMIT_PER_MINUTE: "0", ...env }),
      photoStore: store,
    }),
  );
}

export type PhotoApp = ReturnType<typeof photoApp>;

/** An instance and participants made with SQL, so these tests do not depend on the participant routes. */
export async function newInstance(t: TestDatabase, tenantId: string, status = "active"): Promise<string> {
  const { rows } = await t.admin("insert into public.instances (tenant_id, name, status) values ($1, $2, $3) returning id", [
    tenantId,
    `Camp ${randomBytes(3).toString("hex")}`,
    status,
  ]);
  return rows[0].id;
}

export async function newParticipant(t: TestDatabase, tenantId: string, instanceId: string, userId?: string): Promise<string> {
  const { rows } = await t.admin(
    `insert into public.participants (tenant_id, instance_id, user_id, first_name, surname)
     values ($1, $2, $3, 'Ada', 'Lovelace') returning id`,
    [tenantId, instanceId, userId ?? `U-${randomBytes(4).toString("hex")}`],
  );
  return rows[0].id;
}

export interface Part {
  name: string;
  data: Uint8Array | string;
  filename?: string;
  type?: string;
}

/** A multipart/form-data body, byte for byte as a browser would send it. */
export function multipart(parts: Part[]): { body: Buffer; contentType: string } {
  const boundary = `----camp-test-${randomBytes(8).toString("hex")}`;
  const pieces: Buffer[] = [];
  for (const part of parts) {
    const disposition = `form-data; name="${part.name}"${part.filename === undefined ? "" : `; filename="${part.filename}"`}`;
    const type = part.type ? `\r\nContent-Type: ${part.type}` : "";
    pieces.push(Buffer.from(`--${boundary}\r\nContent-Disposition: ${disposition}${type}\r\n\r\n`));
    pieces.push(typeof part.data === "string" ? Buffer.from(part.data) : Buffer.from(part.data));
    pieces.push(Buffer.from("\r\n"));
  }
  pieces.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(pieces), contentType: `multipart/form-data; boundary=${boundary}` };
}

/** POST /api/v1/photos/user/{userId} with the parts given (a `photo` part with `photo`), Content-Length set. */
export function upload(
  app: PhotoApp,
  key: string,
  userId: string,
  photo: Uint8Array | Part[],
  options: { query?: string; headers?: Record<string, string> } = {},
): Promise<CallResult> {
  const parts = photo instanceof Uint8Array ? [{ name: "photo", data: photo, filename: "photo.jpg", type: "image/jpeg" }] : photo;
  const { body, contentType } = multipart(parts);
  return call(app, "POST", `/api/v1/photos/user/${encodeURIComponent(userId)}${options.query ?? ""}`, {
    key,
    raw: new Uint8Array(body),
    headers: { "Content-Type": contentType, "Content-Length": String(body.length), ...options.headers },
  });
}

/** GET /api/v1/photos/user/{userId}, keeping the body as bytes. */
export async function download(app: PhotoApp, key: string, userId: string, headers: Record<string, string> = {}) {
  const response = await app.request(`/api/v1/photos/user/${encodeURIComponent(userId)}`, {
    headers: { "X-API-Key": key, ...headers },
  });
  const bytes = Buffer.from(await response.arrayBuffer());
  return { status: response.status, headers: response.headers, bytes };
}
