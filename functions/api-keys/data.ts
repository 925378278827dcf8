import { displayPrefix, hashApiKey, newApiKey } from "../auth/api-key-format.ts";
import { listPage } from "../db/list.ts";
import type { Sql } from "../db/sql.ts";
import type { Principal } from "../principal.ts";

/** A key as clients see it: never the secret, never the hash. */
export interface KeyRecord {
  id: string;
  user_id: string;
  email: string;
  name: string | null;
  scopes: Principal["scopes"];
  key_prefix: string;
  created_at: Date;
  last_used_at: Date | null;
  expires_at: Date | null;
  revoked_at: Date | null;
}

const RECORD = `k.id, k.user_id, u.email, k.name, k.scopes, k.key_prefix, k.created_at, k.last_used_at, k.expires_at, k.revoked_at`;

/** What a key is issued with besides its user. */
export interface KeyOptions {
  expiresAt?: Date | null;
  name?: string | null;
  /** Default: everything the user's role allows. */
  scopes?: Principal["scopes"];
}

export async function findUserByEmail(sql: Sql, email: string) {
  return sql.one<{ id: string; email: string; role: string }>(
    "select id, email, role from public.users where lower(email) = lower($1)",
    [email],
  );
}

export async function keyById(sql: Sql, keyId: string) {
  return sql.one<KeyRecord>(`select ${RECORD} from public.api_keys k join public.users u on u.id = k.user_id where k.id = $1`, [
    keyId,
  ]);
}

/** The user's unrevoked, unexpired key. */
export async function activeKeyOf(sql: Sql, userId: string) {
  return sql.one<KeyRecord>(
    `select ${RECORD} from public.api_keys k join public.users u on u.id = k.user_id
     where k.user_id = $1 and k.revoked_at is null and (k.expires_at is null or k.expires_at > now())`,
    [userId],
  );
}

/**
 * Issues a key for a user and returns it with its record; the plaintext exists
 * only in this return value. An expired key still counts as the user's one
 * unrevoked key, so it is retired first. A user with a live key makes the
 * insert fail on api_keys_one_active_per_user (reported as 409).
 */
export async function issueKey(sql: Sql, userId: string, options: KeyOptions = {}) {
  await sql.query(
    "update public.api_keys set revoked_at = now() where user_id = $1 and revoked_at is null and expires_at <= now()",
    [userId],
  );
  const key = newApiKey();
  const record = await sql.one<KeyRecord>(
    `with k as (
       insert into public.api_keys (user_id, key_hash, key_prefix, expires_at, name, scopes)
       values ($1, $2, $3, $4, $5, coalesce($6::text[], '{read,write}'))
       returning id, user_id, name, scopes, key_prefix, created_at, last_used_at, expires_at, revoked_at
     )
     select ${RECORD} from k join public.users u on u.id = k.user_id`,
    [userId, await hashApiKey(key), displayPrefix(key), options.expiresAt ?? null, options.name ?? null, options.scopes ?? null],
  );
  return { key, ...(record as KeyRecord) };
}

/**
 * Revokes a live key and issues its user a new one with the same name, scopes
 * and expiry, in the caller's transaction: a rotated key keeps its limits (a
 * contractor's time-boxed read-only key stays one). Undefined when the key
 * was no longer live (a concurrent rotation or revocation got there first).
 */
export async function replaceKey(sql: Sql, keyId: string) {
  const [old] = await sql.query<{ user_id: string }>(
    "update public.api_keys set revoked_at = now() where id = $1 and revoked_at is null returning user_id",
    [keyId],
  );
  if (!old) return undefined;
  const key = newApiKey();
  const record = await sql.one<KeyRecord>(
    `with k as (
       insert into public.api_keys (user_id, key_hash, key_prefix, expires_at, name, scopes)
       select user_id, $2, $3, expires_at, name, scopes from public.api_keys where id = $1
       returning id, user_id, name, scopes, key_prefix, created_at, last_used_at, expires_at, revoked_at
     )
     select ${RECORD} from k join public.users u on u.id = k.user_id`,
    [keyId, await hashApiKey(key), displayPrefix(key)],
  );
  return { key, ...(record as KeyRecord) };
}

/** Every key record of the tenant, newest first, optionally of one user or only live ones. */
export async function listKeys(sql: Sql, filters: { user_id?: string; live?: boolean; limit: number; offset: number }) {
  const where: string[] = [];
  const params: unknown[] = [];
  if (filters.user_id !== undefined) {
    params.push(filters.user_id);
    where.push(`k.user_id = $${params.length}`);
  }
  if (filters.live !== undefined) {
    where.push(`${filters.live ? "" : "not "}(k.revoked_at is null and (k.expires_at is null or k.expires_at > now()))`);
  }
  return listPage<KeyRecord>(sql, {
    columns: RECORD,
    from: "public.api_keys k join public.users u on u.id = k.user_id",
    where,
    params,
    orderBy: "k.created_at desc, k.id desc",
    limit: filters.limit,
    offset: filters.offset,
  });
}

/** Revokes one key if it is still live; returns whether it was. */
export async function revokeKey(sql: Sql, keyId: string): Promise<boolean> {
  const rows = await sql.query(
    "update public.api_keys set revoked_at = now() where id = $1 and revoked_at is null returning id",
    [keyId],
  );
  return rows.length === 1;
}
