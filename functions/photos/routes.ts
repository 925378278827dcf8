import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../app-env.ts";
import { conflict, notFound } from "../errors.ts";
import type { BodyRule } from "../http/body-policy.ts";
import { message } from "../http/envelope.ts";
import { json, MessageSchema, newRouter } from "../http/openapi.ts";
import { operation } from "../http/operation.ts";
import { log } from "../log.ts";
import { cleanText, idFilter } from "../resources/fields.ts";
import { findPhotoOwner } from "./data.ts";
import {
  ALLOWED_PHOTO_TYPES,
  MAX_ANIMATION_PIXELS,
  MAX_PHOTO_BYTES,
  MAX_PHOTO_FRAMES,
  MAX_PHOTO_PIXELS,
  MAX_PHOTO_SIDE,
  MULTIPART_OVERHEAD_BYTES,
} from "./limits.ts";
import { photoFileName, photoPath } from "./links.ts";
import { preparePhoto, removePhoto, savePhoto, storeCall } from "./service.ts";
import type { PhotoStore } from "./store.ts";
import { readPhotoPart } from "./upload.ts";

/**
 * The upload path takes multipart bodies up to the photo limit plus framing
 * (app.ts gives this to the body policy); the file part itself is held to
 * exactly 5,242,880 bytes by readPhotoPart.
 */
export const PHOTO_BODY: BodyRule = {
  pattern: /^\/api\/v1\/photos\/user\/[^/]+\/?$/,
  mediaTypes: ["multipart/form-data"],
  maxBytes: MAX_PHOTO_BYTES + MULTIPART_OVERHEAD_BYTES,
  limitText: "photos are limited to 5 MB (5,242,880 bytes)",
};

const Params = z.object({
  userId: cleanText().openapi({
    param: { name: "userId", in: "path" },
    description: "The participant's id, or its user_id when that names exactly one live participant",
  }),
});
const Query = z.object({
  instance_id: idFilter().openapi({ description: "Chooses among participants of several instances sharing a user_id" }),
});

const UploadResult = z
  .object({
    success: z.literal(true),
    data: z.object({
      participant_id: z.string().uuid(),
      photo_link: z.string().openapi({
        description:
          "The photo's address: absolute under PUBLIC_URL when the operator set it, else relative to the service's base URL",
      }),
      content_type: z.enum(ALLOWED_PHOTO_TYPES as [string, ...string[]]),
      size: z.number().int(),
    }),
    meta: z.object({ max_bytes: z.literal(MAX_PHOTO_BYTES), allowed_types: z.array(z.string()) }),
  })
  .openapi("PhotoUpload");

const binary = { schema: { type: "string" as const, format: "binary" } };
const tags = ["photos"];

const upload = createRoute(
  operation({
    errors: [404, 409],
    method: "post",
    path: "/user/{userId}",
    summary: "Upload a participant's photo",
    description:
      "Stores a JPEG, PNG, GIF or WebP image of at most 5 MB (the multipart part photo), judged by its bytes (else 415), with its metadata (EXIF, GPS) removed; it replaces the previous photo and sets the participant's photo_link. " +
      `413 PAYLOAD_TOO_LARGE (details field photo) for a file over 5 MB, or an image over ${MAX_PHOTO_SIDE} pixels a side, ${MAX_PHOTO_PIXELS / 1e6} megapixels, ${MAX_PHOTO_FRAMES} frames or ${MAX_ANIMATION_PIXELS / 1e6} megapixels over all frames, as its headers declare them.`,
    tags,
    request: {
      params: Params,
      query: Query,
      body: {
        required: true,
        // Documentation only: a plain schema, so no validator buffers the body; readPhotoPart streams it.
        content: {
          "multipart/form-data": {
            // Bytes by contentMediaType and no `type`: @hey-api/openapi-ts and orval type the part
            // Blob | File, openapi-typescript `unknown` (which takes a Blob); `type: string` would make it a string.
            schema: {
              type: "object",
              properties: {
                photo: {
                  contentMediaType: "application/octet-stream",
                  description: `The image file (JPEG, PNG, GIF or WebP; at most 5 MB, ${MAX_PHOTO_SIDE} pixels a side, ${MAX_PHOTO_PIXELS / 1e6} megapixels and ${MAX_PHOTO_FRAMES} frames), e.g. a Blob or File`,
                },
              },
              required: ["photo"],
            },
            encoding: { photo: { contentType: ALLOWED_PHOTO_TYPES.join(", ") } },
          },
        },
      },
    },
    responses: { 200: json(UploadResult, "The stored photo") },
  }),
);

const download = createRoute(
  operation({
    errors: [404, 409],
    etag: true,
    headers: ["Cache-Control", "Content-Disposition"],
    method: "get",
    path: "/user/{userId}",
    summary: "Download a participant's photo",
    description: "The participant's current photo, with its ETag (If-None-Match gives 304). 404 when the participant has none.",
    tags,
    request: { params: Params, query: Query },
    responses: {
      200: { description: "The photo", content: Object.fromEntries(ALLOWED_PHOTO_TYPES.map((type) => [type, binary])) },
    },
  }),
);

const remove = createRoute(
  operation({
    errors: [404, 409],
    method: "delete",
    path: "/user/{userId}",
    summary: "Remove a participant's photo",
    description:
      "Removes the stored photo and clears photo_link (404 when the participant has neither). Emits photo.removed, as a refused photo consent does: the feed does not tell one from the other.",
    tags,
    request: { params: Params, query: Query },
    responses: { 200: json(MessageSchema, "Removed") },
  }),
);

/**
 * The API address of a participant's photo: what photo_link is set to. Stored
 * and shown to every user of the tenant, so it never comes from the request's
 * Host or forwarding headers: absolute only under the operator's PUBLIC_URL,
 * otherwise relative.
 */
function photoLink(c: Context<AppEnv>, participantId: string): string {
  const path = photoPath(participantId);
  const base = c.get("config").PUBLIC_URL?.replace(/\/+$/, "");
  return base ? `${base}${path}` : path;
}

/** If-None-Match holds this ETag (weak or strong form) or `*`. */
function matches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch.split(",").some((tag) => {
    const value = tag.trim();
    return value === "*" || value === etag || value === `W/${etag}`;
  });
}

/** A refused photo consent (PUT /participants/{id}/consents): no photo until a new answer. */
const photoRefused = () =>
  conflict("photo consent is refused for this participant", { field: "photo", issue: "photo consent is refused" });

export function photoRoutes(store: PhotoStore) {
  return newRouter()
    .openapi(upload, async (c) => {
      const { userId } = c.req.valid("param");
      const { instance_id } = c.req.valid("query");
      const tenant = c.get("tenant");
      const owner = await tenant.run((sql) => findPhotoOwner(sql, userId, instance_id));
      // Before the photo is read or stored; the database refuses it as well, should a refusal land meanwhile.
      if (owner.photo_refused) throw photoRefused();
      const photo = await preparePhoto(await readPhotoPart(c.req.raw));
      const data = await savePhoto({ tenant, store }, owner.id, photo, photoLink(c, owner.id));
      return c.json(
        { success: true as const, data, meta: { max_bytes: MAX_PHOTO_BYTES, allowed_types: ALLOWED_PHOTO_TYPES } },
        200,
      );
    })
    .openapi(remove, async (c) => {
      const { userId } = c.req.valid("param");
      const { instance_id } = c.req.valid("query");
      const tenant = c.get("tenant");
      const owner = await tenant.run((sql) => findPhotoOwner(sql, userId, instance_id));
      const removed = await removePhoto({ tenant, store }, owner.id);
      if (!removed) throw notFound("photo");
      return message(c, "photo removed");
    })
    .openapi(download, async (c) => {
      const { userId } = c.req.valid("param");
      const { instance_id } = c.req.valid("query");
      const owner = await c.get("tenant").run((sql) => findPhotoOwner(sql, userId, instance_id));
      if (!owner.photo_key || !owner.photo_sha256 || !owner.photo_content_type) throw notFound("photo");
      const etag = `"${owner.photo_sha256}"`;
      const headers = { ETag: etag, "Cache-Control": "private", "X-Content-Type-Options": "nosniff" };
      if (matches(c.req.header("if-none-match"), etag)) return c.body(null, 304, headers);
      const key = owner.photo_key;
      const stream = await storeCall(() => store.get(key));
      if (!stream) {
        log.warn("photo object missing from the store", { request_id: c.get("requestId"), key });
        throw notFound("photo");
      }
      return c.body(stream, 200, {
        ...headers,
        "Content-Type": owner.photo_content_type,
        "Content-Length": String(owner.photo_size),
        "Content-Disposition": `inline; filename="${photoFileName(owner.id, owner.photo_content_type)}"`,
      });
    });
}
