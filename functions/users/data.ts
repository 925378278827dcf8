import { listPage } from "../db/list.ts";
import type { Sql } from "../db/sql.ts";
import type { Role } from "../principal.ts";

/** How far a user reaches care data (users.care_access; see *_care_access.sql). */
export type CareAccess = "none" | "read" | "write";

/** A user as admins see them: never their identity-provider subject. */
export interface UserRecord {
  id: string;
  email: string;
  role: Role;
  active: boolean;
  care_access: CareAccess;
  safeguarding_lead: boolean;
  created_at: Date;
  updated_at: Date;
  has_live_key: boolean;
}

const RECORD = `u.id, u.email, u.role, u.active, u.care_access, u.safeguarding_lead, u.created_at, u.updated_at,
  exists (select from public.api_keys k where k.user_id = u.id and k.revoked_at is null
          and (k.expires_at is null or k.expires_at > now())) as has_live_key`;

export interface UserFilters {
  role?: Role;
  active?: boolean;
  q?: string;
  limit: number;
  offset: number;
}

export async function listUsers(sql: Sql, filters: UserFilters) {
  const where: string[] = [];
  const params: unknown[] = [];
  if (filters.role !== undefined) {
    params.push(filters.role);
    where.push(`u.role = $${params.length}`);
  }
  if (filters.active !== undefined) {
    params.push(filters.active);
    where.push(`u.active = $${params.length}`);
  }
  if (filters.q !== undefined) {
    params.push(`%${filters.q.replace(/[\\%_]/g, "\\$&")}%`);
    where.push(`u.email ilike $${params.length}`);
  }
  return listPage<UserRecord>(sql, {
    columns: RECORD,
    from: "public.users u",
    where,
    params,
    orderBy: "u.created_at, u.id",
    limit: filters.limit,
    offset: filters.offset,
  });
}

export async function getUser(sql: Sql, id: string) {
  return sql.one<UserRecord>(`select ${RECORD} from public.users u where u.id = $1`, [id]);
}

/** A new user of the caller's tenant; an e-mail the tenant has already is a 409 (users_email_key). */
export async function addUser(sql: Sql, email: string, role: Role) {
  return sql.one<UserRecord>(`insert into public.users as u (email, role) values ($1, $2) returning ${RECORD}`, [email, role]);
}

/**
 * Changes a user's role, active flag, care access or safeguarding lead mark.
 * The database revokes a deactivated user's keys, refuses to leave a tenant
 * without an active admin (409) and lets only an admin change care access or
 * the lead mark (403).
 */
export async function changeUser(
  sql: Sql,
  id: string,
  change: { role?: Role; active?: boolean; care_access?: CareAccess; safeguarding_lead?: boolean },
) {
  const set: string[] = [];
  const params: unknown[] = [id];
  if (change.role !== undefined) {
    params.push(change.role);
    set.push(`role = $${params.length}`);
  }
  if (change.active !== undefined) {
    params.push(change.active);
    set.push(`active = $${params.length}`);
  }
  if (change.care_access !== undefined) {
    params.push(change.care_access);
    set.push(`care_access = $${params.length}`);
  }
  if (change.safeguarding_lead !== undefined) {
    params.push(change.safeguarding_lead);
    set.push(`safeguarding_lead = $${params.length}`);
  }
  const rows = await sql.query(`update public.users set ${set.join(", ")} where id = $1 returning id`, params);
  return rows.length === 1 ? getUser(sql, id) : undefined;
}
