import { activeKeyOf, issueKey, replaceKey } from "../api-keys/data.ts";
import type { Database } from "../db/database.ts";
import { badRequest, conflict, notFound } from "../errors.ts";
import type { Role } from "../principal.ts";

/**
 * Operator actions (the `camp` CLI, first start of the embedded default).
 * Creating tenants and users is not something the API role may do, so these
 * run as the connecting role; keys are still issued inside the tenant's scope,
 * through the same code as the API.
 */

export type { Role };

export interface UserRef {
  tenant_id: string;
  user_id: string;
  email: string;
  role: Role;
}

export async function addUser(db: Database, tenantId: string, email: string, role: Role): Promise<UserRef> {
  return db.asOwner(async (sql) => {
    const tenant = await sql.one("select id from public.tenants where id = $1", [tenantId]);
    if (!tenant) throw notFound("tenant");
    const existing = await sql.one("select id from public.users where tenant_id = $1 and lower(email) = lower($2)", [
      tenantId,
      email,
    ]);
    if (existing) throw conflict(`a user with e-mail ${email} already exists in this tenant`);
    const user = await sql.one<{ id: string }>(
      "insert into public.users (tenant_id, email, role) values ($1, $2, $3) returning id",
      [tenantId, email, role],
    );
    return { tenant_id: tenantId, user_id: (user as { id: string }).id, email, role };
  });
}

export async function createTenant(db: Database, name: string, adminEmail: string) {
  const tenant = await db.asOwner((sql) =>
    sql.one<{ id: string }>("insert into public.tenants (name) values ($1) returning id", [name.trim()]),
  );
  const tenantId = (tenant as { id: string }).id;
  const admin = await addUser(db, tenantId, adminEmail, "admin");
  const { key } = await issueKeyFor(db, admin);
  return { tenant_id: tenantId, user_id: admin.user_id, api_key: key };
}

/** Users with this e-mail, in any tenant (an e-mail is unique only per tenant). */
export async function findUsers(db: Database, email: string, tenantId?: string): Promise<UserRef[]> {
  return db.asOwner((sql) =>
    sql.query<UserRef>(
      `select tenant_id, id as user_id, email, role from public.users
       where lower(email) = lower($1) and ($2::uuid is null or tenant_id = $2::uuid) order by created_at`,
      [email, tenantId ?? null],
    ),
  );
}

/** The one user an e-mail (and optional tenant) names, or a clear error. */
export async function resolveUser(db: Database, email: string, tenantId?: string): Promise<UserRef> {
  const users = await findUsers(db, email, tenantId);
  if (users.length === 0) throw notFound("user");
  if (users.length > 1) throw badRequest(`${email} is a user of several tenants; name one with --tenant`);
  return users[0] as UserRef;
}

/**
 * Issues a key for the user. With `replace`, a live key the user has (a lost
 * one) is replaced in the same transaction by one with its name, scopes and
 * expiry, as `regenerate` does. The database refuses a deactivated user (409).
 */
export async function issueKeyFor(db: Database, user: UserRef, options: { replace?: boolean } = {}) {
  return db.asTenant({ tenantId: user.tenant_id, userId: user.user_id, role: user.role }, async (sql) => {
    const live = options.replace ? await activeKeyOf(sql, user.user_id) : undefined;
    return (live && (await replaceKey(sql, live.id))) || issueKey(sql, user.user_id);
  });
}
