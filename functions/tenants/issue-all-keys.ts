import { HAS_LIVE_KEY } from "../api-keys/data.ts";
import type { Database } from "../db/database.ts";
import { isPgError } from "../db/pg-errors.ts";
import { ApiError, notFound } from "../errors.ts";
import { issueKeyFor, type UserRef } from "./provisioning.ts";

/**
 * Keys for every user of a tenant (`camp keys issue-all`). Each key is issued
 * in a transaction of its own, so an interrupted run leaves every user either
 * with a key that was handed back here or with none, and a re-run picks up
 * exactly the users still without one.
 */

/** Active users of the tenant with no live key (none, or only revoked or expired ones), oldest first. */
export async function usersWithoutKey(db: Database, tenantId: string): Promise<UserRef[]> {
  return db.asOwner(async (sql) => {
    const tenant = await sql.one("select id from public.tenants where id = $1", [tenantId]);
    if (!tenant) throw notFound("tenant");
    return sql.query<UserRef>(
      `select u.tenant_id, u.id as user_id, u.email, u.role from public.users u
       where u.tenant_id = $1 and u.active
         and not exists (
           select from public.api_keys k
           where k.user_id = u.id and k.revoked_at is null and (k.expires_at is null or k.expires_at > now())
         )
       order by u.created_at, u.id`,
      [tenantId],
    );
  });
}

/**
 * Issues the user's key, or returns undefined when the user got a live key
 * since the list was read (another run, or the API: a first key is refused,
 * and rolled back, when the user has another) or was deactivated meanwhile
 * (the database refuses their key): that user is simply skipped.
 */
export async function issueMissingKey(db: Database, user: UserRef): Promise<string | undefined> {
  try {
    return (await issueKeyFor(db, user)).key;
  } catch (error) {
    if (error instanceof ApiError && error.details?.[0]?.issue === HAS_LIVE_KEY) return undefined;
    if (isPgError(error) && error.code === "CA409" && error.column === "email") return undefined;
    throw error;
  }
}
