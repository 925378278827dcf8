import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex } from "@noble/hashes/utils.js";
import type { TenantScope } from "../db/tenant-scope.ts";
import { ApiError } from "../errors.ts";
import { describeError, log } from "../log.ts";
import type { Principal } from "../principal.ts";
import { beginUpload, clearPhoto, currentPhotoKey, endUpload, type PhotoRecord, recordPhoto } from "./data.ts";
import { detectPhotoType } from "./detect.ts";
import { checkGeometry } from "./geometry-limits.ts";
import { ALLOWED_PHOTO_TYPES, PHOTO_TYPES, type PhotoType } from "./limits.ts";
import { InvalidImageError, type StrippedImage, stripMetadata } from "./metadata/index.ts";
import { type PhotoStore, PhotoStoreError } from "./store.ts";

export interface PreparedPhoto {
  bytes: Uint8Array;
  contentType: PhotoType;
  sha256: string;
}

const unsupported = (message: string) =>
  new ApiError("UNSUPPORTED_MEDIA_TYPE", message, { field: "photo", issue: `must be one of ${ALLOWED_PHOTO_TYPES.join(", ")}` });

const HASH_SLICE = 512 * 1024;

/**
 * SHA-256 in JS over views of the photo: WebCrypto's digest copies the whole
 * photo first, which under concurrent uploads costs more memory than the
 * photos themselves. Hashed a slice at a time, yielding between slices, so a
 * 5 MB photo never holds the event loop for long.
 */
async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const hash = sha256.create();
  for (let at = 0; at < bytes.length; at += HASH_SLICE) {
    hash.update(bytes.subarray(at, at + HASH_SLICE));
    if (at + HASH_SLICE < bytes.length) await new Promise((resolve) => setTimeout(resolve, 0));
  }
  return bytesToHex(hash.digest());
}

/**
 * Type from the bytes (415 otherwise), metadata removed in place, size and
 * frames within what a browser can show (413 otherwise), content hash.
 */
export async function preparePhoto(received: Uint8Array): Promise<PreparedPhoto> {
  const contentType = await detectPhotoType(received);
  if (!contentType) throw unsupported("the photo is not a JPEG, PNG, GIF or WebP image (judged by its content)");
  let stripped: StrippedImage;
  try {
    stripped = stripMetadata(received, contentType);
  } catch (error) {
    if (error instanceof InvalidImageError) throw unsupported(`the photo is ${error.message}`);
    throw error;
  }
  checkGeometry(stripped.geometry);
  const { bytes } = stripped;
  return { bytes, contentType, sha256: await sha256Hex(bytes) };
}

export const photoKey = (tenantId: string, participantId: string, photo: PreparedPhoto) =>
  `${tenantId}/${participantId}/${photo.sha256}.${PHOTO_TYPES[photo.contentType]}`;

/**
 * A store failure is the storage service's, not the client's: 503. Its cause
 * goes with it to the error handler, which logs it once with the request id.
 */
export async function storeCall<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (!(error instanceof PhotoStoreError)) throw error;
    throw Object.assign(new ApiError("SERVICE_UNAVAILABLE", "photo storage is unavailable"), { cause: error });
  }
}

export interface PhotoContext {
  tenant: TenantScope<Principal>;
  store: PhotoStore;
}

/**
 * Removes an object unless the participant's row points at it now. Runs after
 * the outcome is known, so it never fails the request: when unsure (database
 * or store unreachable) the object stays and the log says so — an object
 * left behind is better than a link to nothing.
 */
async function discard(ctx: PhotoContext, participantId: string, key: string): Promise<void> {
  try {
    const current = await ctx.tenant.run((sql) => currentPhotoKey(sql, participantId));
    if (current === key) return;
    await ctx.store.delete(key);
    // The intent goes with its object: its key holds the photo's hash, and an erasure that refused
    // this upload (404) may have committed before the intent was written.
    await ctx.tenant.run((sql) => endUpload(sql, key));
  } catch (error) {
    log.warn("photo clean-up failed; the object may be left behind", { key, ...describeError(error) });
  }
}

/**
 * Stores the photo, then points the participant at it in one transaction.
 * The key is recorded as an upload in progress first, so that a sweep running
 * meanwhile keeps the object (sweep.ts). If the transaction fails the new
 * object is removed; once it commits, the replaced object is removed. The key
 * is the content hash, so uploading the same photo again rewrites the same
 * object and removes nothing.
 */
export async function savePhoto(ctx: PhotoContext, participantId: string, photo: PreparedPhoto, link: string) {
  const record: PhotoRecord = {
    key: photoKey(ctx.tenant.principal.tenantId, participantId, photo),
    contentType: photo.contentType,
    size: photo.bytes.length,
    sha256: photo.sha256,
    link,
  };
  // Recorded before the object is written: committed at once, or, when the whole request is one
  // transaction (idempotency), held in it under the key's lock, which the sweep respects (sweep.ts).
  await ctx.tenant.run((sql) => beginUpload(sql, record.key));
  let replaced: string | null;
  try {
    await storeCall(() => ctx.store.put(record.key, photo.bytes, photo.contentType));
    replaced = await ctx.tenant.run((sql) => recordPhoto(sql, participantId, record));
  } catch (error) {
    await discard(ctx, participantId, record.key);
    throw error;
  }
  if (replaced && replaced !== record.key) await discard(ctx, participantId, replaced);
  return { participant_id: participantId, photo_link: link, content_type: record.contentType, size: record.size };
}

/**
 * Removes the participant's photo (stored object and link): the row is
 * cleared exactly as a refused photo consent clears it
 * (private.withdraw_refused_photo), so both read the same in the audit trail
 * and the feed (photo.removed). The object goes once that has committed.
 * False when there was nothing to remove.
 */
export async function removePhoto(ctx: PhotoContext, participantId: string): Promise<boolean> {
  const cleared = await ctx.tenant.run((sql) => clearPhoto(sql, participantId));
  if (!cleared.removed) return false;
  if (cleared.key) await discard(ctx, participantId, cleared.key);
  return true;
}
