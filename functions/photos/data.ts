import type { Sql } from "../db/sql.ts";
import { conflict, notFound } from "../errors.ts";
import { isUuid } from "../resources/fields.ts";
import type { PhotoType } from "./limits.ts";

/** A participant as the photo endpoints need it. */
export interface PhotoOwner {
  id: string;
  /** The participant's photo consent is refused: no photo may be stored (the database refuses it too). */
  photo_refused: boolean;
  photo_key: string | null;
  photo_content_type: PhotoType | null;
  photo_size: number | null;
  photo_sha256: string | null;
}

export interface PhotoRecord {
  key: string;
  contentType: PhotoType;
  size: number;
  sha256: string;
  link: string;
}

/**
 * The live participant a path's userId names: its id, or else its user_id
 * when exactly one live participant of the tenant (of `instanceId`, when
 * given) has it. 404 otherwise, 409 when a user_id is ambiguous.
 */
export async function findPhotoOwner(sql: Sql, userId: string, instanceId?: string): Promise<PhotoOwner> {
  const rows = await sql.query<PhotoOwner & { by_id: boolean }>(
    `select id, photo_key, photo_content_type, photo_size, photo_sha256, coalesce(id = $1::uuid, false) as by_id,
            private.photo_consent_refused(id) as photo_refused
     from public.participants
     where deleted_at is null
       and (id = $1::uuid or user_id = $2)
       and ($3::uuid is null or instance_id = $3::uuid)
     order by by_id desc
     limit 3`,
    [isUuid(userId) ? userId : null, userId, instanceId ?? null],
  );
  const [first] = rows;
  if (!first) throw notFound("participant");
  if (!first.by_id && rows.length > 1) {
    throw conflict("this user_id belongs to participants of several instances; pass ?instance_id= to choose one", {
      field: "userId",
      issue: "matches more than one participant",
    });
  }
  const { by_id: _, ...owner } = first;
  return owner;
}

/**
 * Makes `photo` the participant's current photo and returns the key it
 * replaces (null when there was none). The row is locked, so concurrent
 * uploads for one participant are applied one after the other and each sees
 * the key the previous one left. 404 when the participant was deleted meanwhile.
 */
export async function recordPhoto(sql: Sql, participantId: string, photo: PhotoRecord): Promise<string | null> {
  const current = await sql.one<{ photo_key: string | null }>(
    "select photo_key from public.participants where id = $1 and deleted_at is null for update",
    [participantId],
  );
  if (!current) throw notFound("participant");
  await sql.query(
    `update public.participants
     set photo_key = $2, photo_content_type = $3, photo_size = $4, photo_sha256 = $5, photo_link = $6
     where id = $1`,
    [participantId, photo.key, photo.contentType, photo.size, photo.sha256, photo.link],
  );
  await sql.query("delete from public.photo_uploads where key = $1", [photo.key]);
  return current.photo_key;
}

/**
 * The advisory lock of an upload of the object `key` (a SQL expression): an
 * upload holds it shared until its transaction ends, the sweep exclusively
 * while it decides on and deletes the object.
 */
export const uploadLock = (key: string) => `hashtextextended('photo-upload/' || ${key}, 0)`;

/**
 * Records an upload of `key` as in progress, before its object is written
 * (see sweep.ts): the intent row, seen by the sweep once committed, and the
 * key's lock, which keeps the sweep off the object until this transaction
 * ends, for an intent that commits only with the whole request (idempotency).
 */
export async function beginUpload(sql: Sql, key: string): Promise<void> {
  await sql.query(
    `insert into public.photo_uploads (key)
     select $1 from (select pg_advisory_xact_lock_shared(${uploadLock("$1")})) locked
     on conflict (key) do nothing`,
    [key],
  );
}

/**
 * Clears the participant's photo and link, as a refused photo consent does
 * (the same columns, so the same audit change and event). Returns the stored
 * object's key, for the caller to delete after commit; 404 when the
 * participant was deleted meanwhile.
 */
export async function clearPhoto(sql: Sql, participantId: string): Promise<{ removed: boolean; key: string | null }> {
  const current = await sql.one<{ photo_key: string | null; photo_link: string | null }>(
    "select photo_key, photo_link from public.participants where id = $1 and deleted_at is null for update",
    [participantId],
  );
  if (!current) throw notFound("participant");
  if (current.photo_key === null && current.photo_link === null) return { removed: false, key: null };
  await sql.query(
    `update public.participants
     set photo_key = null, photo_content_type = null, photo_size = null, photo_sha256 = null, photo_link = null
     where id = $1`,
    [participantId],
  );
  return { removed: true, key: current.photo_key };
}

/** Forgets the intent of an upload whose object was removed (service.ts discard). */
export async function endUpload(sql: Sql, key: string): Promise<void> {
  await sql.query("delete from public.photo_uploads where key = $1", [key]);
}

/** The key the participant's row holds now, deleted or not. */
export async function currentPhotoKey(sql: Sql, participantId: string): Promise<string | null> {
  const row = await sql.one<{ photo_key: string | null }>("select photo_key from public.participants where id = $1", [
    participantId,
  ]);
  return row?.photo_key ?? null;
}
