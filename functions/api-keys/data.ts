import { displayPrefix, hashApiKey, newApiKey } from "../auth/api-key-format.ts";
import { listPage } from "../db/list.ts";
import type { Sql } from "../db/sql.ts";
import { conflict } from "../errors.ts";
import type { Scope } from "./scopes.ts";

/** A key as clients see it: never the secret, never the hash. */
export interface KeyRecord {
  id: string;
  user_id: string;
  email: string;
  name: string | null;
  scopes: Scope[];
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
  scopes?: Scope[];
}

export async function findUserByEmail(sql: Sql, email: string) {
  return sql.one<{ id: string; email: string; role: string }>(
    "select id, email, role from public.users where lower(email) = lower($1)",
    [email],
  );
}

export async function findUserById(sql: Sql, id: string) {
  return sql.one<{ id: string; email: string; role: string }>("select id, email, role from public.users where id = $1", [id]);
}

export async function keyById(sql: Sql, keyId: string) {
  return sql.one<KeyRecord>(`select ${RECORD} from public.api_keys k join public.users u on u.id = k.user_id where k.id = $1`, [
    keyId,
  ]);
}

/** The user's live keys (unrevoked, unexpired), newest first. */
export async function liveKeysOf(sql: Sql, userId: string) {
  return sql.query<KeyRecord>(
    `select ${RECORD} from public.api_keys k join public.users u on u.id = k.user_id
     where k.user_id = $1 and k.revoked_at is null and (k.expires_at is null or k.expires_at > now())
     order by k.created_at desc, k.id desc`,
    [userId],
  );
}

/**
 * Issues a key for a user and returns it with its record; the plaintext exists
 * only in this return value. The database (private.guard_key_issue) refuses,
 * as 409, a deactivated user, a name another live key of the user has, and a
 * user at the cap of live keys; it locks the user row, so concurrent issues
 * for one user are taken one after the other.
 */
export async function issueKey(sql: Sql, userId: string, options: KeyOptions = {}) {
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

/** The issue of the 409 for a first key when the user has one (`generate`, `camp keys issue` without --name or --replace). */
export const HAS_LIVE_KEY = "already has a live API key";

/** That 409: it names the user and both ways out, over HTTP and with the CLI. */
export function liveKeyConflict(email: string) {
  return conflict(
    `${email} ${HAS_LIVE_KEY}. To replace it, call POST /api/v1/api-keys/regenerate with that key (or camp keys issue ${email} --replace); to add another beside it, POST /api/v1/api-keys with a name (or camp keys issue ${email} --name NAME)`,
    { field: "email", issue: HAS_LIVE_KEY },
  );
}

/**
 * A user's first live key: 409 (liveKeyConflict) when the user already has
 * one. Checked before the insert for the common case and again after it, in
 * the same transaction: the insert's trigger waits for a concurrent issue for
 * the same user to commit, so of two racing first keys the second sees the
 * first here and is rolled back.
 */
export async function issueFirstKey(sql: Sql, user: { id: string; email: string }, options: KeyOptions = {}) {
  if ((await liveKeysOf(sql, user.id)).length > 0) throw liveKeyConflict(user.email);
  const issued = await issueKey(sql, user.id, options);
  const [others] = await sql.query<{ n: number }>(
    `select count(*)::int as n from public.api_keys
     where user_id = $1 and id <> $2 and revoked_at is null and (expires_at is null or expires_at > now())`,
    [user.id, issued.id],
  );
  if ((others?.n ?? 0) > 0) throw liveKeyConflict(user.email);
  return issued;
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
