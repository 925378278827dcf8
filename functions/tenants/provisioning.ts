import { issueFirstKey, issueKey, type KeyOptions, liveKeysOf, replaceKey } from "../api-keys/data.ts";
import { SCOPES, type Scope } from "../api-keys/scopes.ts";
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

/** A tenant and its first admin, whose key has the given scopes (default read and write). */
export async function createTenant(db: Database, name: string, adminEmail: string, options: { scopes?: Scope[] } = {}) {
  const tenant = await db.asOwner((sql) =>
    sql.one<{ id: string }>("insert into public.tenants (name) values ($1) returning id", [name.trim()]),
  );
  const tenantId = (tenant as { id: string }).id;
  const admin = await addUser(db, tenantId, adminEmail, "admin");
  const { key } = await issueKeyFor(db, admin, { scopes: options.scopes });
  return { tenant_id: tenantId, user_id: admin.user_id, api_key: key };
}

/**
 * The demo tenant of a first `npm start`: its admin's key carries every scope
 * (SCOPES), so a newcomer can try everything an admin may, care routes
 * included.
 */
export async function createDemoTenant(db: Database, adminEmail: string) {
  return createTenant(db, "Demo camps", adminEmail, { scopes: [...SCOPES] });
}

/** Every tenant with its ids and how many users and admins it has (`camp tenant list`), oldest first. */
export async function listTenants(db: Database) {
  return db.asOwner((sql) =>
    sql.query<{ tenant_id: string; name: string; created_at: Date; users: number; admins: number }>(
      `select t.id as tenant_id, t.name, t.created_at,
              count(u.id)::int as users, (count(u.id) filter (where u.role = 'admin' and u.active))::int as admins
       from public.tenants t left join public.users u on u.tenant_id = t.id
       group by t.id order by t.created_at, t.id`,
    ),
  );
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

/** How `camp keys issue` issues: a name for a further key, scopes and expiry, or the replacement of a live key. */
export interface IssueOptions extends KeyOptions {
  replace?: boolean;
}

/**
 * Issues a key for the user (`camp keys issue`, a new tenant's admin), as the
 * API would:
 * - without a name, the user's first key: 409 naming the ways out when the
 *   user has a live one (as `generate`);
 * - with a name, a further key beside the others (as `POST /api-keys`);
 * - with `replace`, the live key of that name (or the user's only live key)
 *   is replaced in the same transaction by one with its name, scopes and
 *   expiry, as `regenerate` does; with none to replace, a key is issued.
 * The database refuses a deactivated user, a name in use and a user at the
 * cap of live keys (409).
 */
export async function issueKeyFor(db: Database, user: UserRef, options: IssueOptions = {}) {
  const { replace, ...key } = options;
  const ref = { id: user.user_id, email: user.email };
  return db.asTenant({ tenantId: user.tenant_id, userId: user.user_id, role: user.role }, async (sql) => {
    if (replace) {
      const live = await liveKeysOf(sql, user.user_id);
      const named = key.name == null ? undefined : key.name.toLowerCase();
      const target = named !== undefined ? live.find((k) => k.name?.toLowerCase() === named) : live[0];
      if (named === undefined && live.length > 1) {
        const names = live.map((k) => k.name ?? "(unnamed)").join(", ");
        throw conflict(`${user.email} holds ${live.length} live keys (${names}); name the one to replace with --name`, {
          field: "name",
          issue: "names which key to replace",
        });
      }
      const replaced = target && (await replaceKey(sql, target.id));
      if (replaced) return replaced;
    }
    return key.name == null ? issueFirstKey(sql, ref, key) : issueKey(sql, user.user_id, key);
  });
}
