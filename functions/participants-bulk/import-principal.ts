import type { Database } from "../db/database.ts";
import { badRequest, notFound } from "../errors.ts";
import type { Principal } from "../principal.ts";

/**
 * Who `camp participants import` acts as. The operator names an instance; its
 * tenant is the one imported into (an operator may read every tenant), and
 * the work runs in that tenant's scope, as its first admin, through the same
 * code as the HTTP import. `tenantId`, when given, must be the instance's.
 */
export async function importPrincipal(
  db: Database,
  instanceId: string,
  tenantId?: string,
): Promise<Pick<Principal, "tenantId" | "userId" | "role">> {
  const row = await db.asOwner((sql) =>
    sql.one<{ tenant_id: string; user_id: string | null }>(
      `select i.tenant_id, a.id as user_id
       from public.instances i
       left join lateral (
         select u.id from public.users u where u.tenant_id = i.tenant_id and u.role = 'admin' order by u.created_at, u.id limit 1
       ) a on true
       where i.id = $1 and i.deleted_at is null and ($2::uuid is null or i.tenant_id = $2::uuid)`,
      [instanceId, tenantId ?? null],
    ),
  );
  if (!row) throw notFound(tenantId ? "instance in that tenant" : "instance");
  if (!row.user_id) throw badRequest("the instance's tenant has no admin to import as");
  return { tenantId: row.tenant_id, userId: row.user_id, role: "admin" };
}
