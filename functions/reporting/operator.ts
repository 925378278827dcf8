import { base64url } from "jose";
import type { Database, Sql } from "../db/database.ts";
import { badRequest, conflict, notFound } from "../http/errors.ts";
import { scramSha256Verifier } from "./scram.ts";

/**
 * Reporting roles (`camp reporting grant|revoke|list`): Postgres login roles
 * for staff and BI tools, each bound to one tenant through
 * private.reporting_roles (see sql/migrations/*_reporting.sql). Roles are
 * cluster-wide; the mapping lives in the service's database, so a role sees
 * nothing in any other database.
 */

/** The group role whose grants and policies every reporting role inherits. */
export const REPORTING_GROUP = "camp_reporting";

/** Lower case, so the name needs no quoting in psql; as the mapping table's check. */
const ROLE_NAME = /^[a-z][a-z0-9_]{2,62}$/;
const PASSWORD_BYTES = 32;
const VERIFIER = /^SCRAM-SHA-256\$\d+:[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+$/;

export interface ReportingGrant {
  role: string;
  tenant_id: string;
  password: string;
}

export interface ReportingRoleRow {
  role: string;
  tenant_id: string;
  tenant_name: string;
  created_at: Date;
  role_exists: boolean;
}

export function checkRoleName(name: string): string {
  if (!ROLE_NAME.test(name) || name.startsWith("pg_")) {
    throw badRequest("role: 3 to 63 characters, lower-case letters, digits and _, starting with a letter, not pg_");
  }
  return name;
}

/** A name that passed checkRoleName, double-quoted all the same. */
const ident = (name: string) => `"${checkRoleName(name).replaceAll('"', '""')}"`;

export function newReportingPassword(): string {
  return base64url.encode(crypto.getRandomValues(new Uint8Array(PASSWORD_BYTES)));
}

/**
 * Creates a login role bound to `tenantId`, with a generated password that is
 * returned once and sent to Postgres only as a SCRAM verifier. The role is a
 * member of camp_reporting and of nothing else, has no other attribute, and
 * starts read-only with the reporting schema on its search path.
 */
export async function grantReportingRole(db: Database, tenantId: string, role: string): Promise<ReportingGrant> {
  checkRoleName(role);
  const password = newReportingPassword();
  const verifier = await scramSha256Verifier(password);
  if (!VERIFIER.test(verifier)) throw new Error("unexpected password verifier");
  await db.asOwner(async (sql) => {
    if (!(await sql.one("select from public.tenants where id = $1", [tenantId]))) throw notFound("tenant");
    if (await sql.one("select from pg_roles where rolname = $1", [role])) throw conflict(`role ${role} already exists`);
    // A mapping left behind by a role dropped by hand must not outlive it.
    await sql.query("delete from private.reporting_roles where role_name = $1", [role]);
    await sql.query(
      `create role ${ident(role)} login inherit nosuperuser nocreatedb nocreaterole noreplication nobypassrls password '${verifier}'`,
    );
    await sql.query(`grant ${REPORTING_GROUP} to ${ident(role)}`);
    await sql.query(`alter role ${ident(role)} set default_transaction_read_only = on`);
    await sql.query(`alter role ${ident(role)} set search_path = reporting`);
    await sql.query("insert into private.reporting_roles (role_name, tenant_id) values ($1, $2)", [role, tenantId]);
  });
  return { role, tenant_id: tenantId, password };
}

interface RoleFacts {
  reporting_member: boolean;
  other_memberships: boolean;
  privileged: boolean;
  can_drop_owned: boolean;
}

async function roleFacts(sql: Sql, role: string): Promise<RoleFacts | undefined> {
  return sql.one<RoleFacts>(
    `select
       exists (select from pg_auth_members m where m.member = r.oid and m.roleid = $2::regrole) as reporting_member,
       exists (select from pg_auth_members m where m.member = r.oid and m.roleid <> $2::regrole) as other_memberships,
       r.rolsuper or r.rolcreaterole or r.rolcreatedb or r.rolreplication or r.rolbypassrls as privileged,
       pg_has_role(current_user, r.oid, 'usage') as can_drop_owned
     from pg_roles r where r.rolname = $1`,
    [role, REPORTING_GROUP],
  );
}

/**
 * Drops a reporting role and its mapping, ending its open sessions. Refuses
 * any role that `grant` did not make (not mapped, or with other memberships or
 * attributes): this command must never drop camp_api, postgres or a person.
 */
export async function revokeReportingRole(db: Database, role: string) {
  checkRoleName(role);
  return db.asOwner(async (sql) => {
    const mapped = await sql.one<{ tenant_id: string }>(
      "select tenant_id from private.reporting_roles where role_name = $1 for update",
      [role],
    );
    const facts = await roleFacts(sql, role);
    if (!mapped && !facts) throw notFound("reporting role");
    if (facts && (!mapped || !facts.reporting_member || facts.other_memberships || facts.privileged)) {
      throw badRequest(`${role} is not a reporting role made by camp reporting grant; not dropping it`);
    }
    // Removing the mapping first makes any session still open see nothing.
    await sql.query("delete from private.reporting_roles where role_name = $1", [role]);
    if (facts) {
      await endSessions(sql, role);
      if (facts.can_drop_owned) await sql.query(`drop owned by ${ident(role)}`);
      await sql.query(`drop role ${ident(role)}`);
    }
    return { role, tenant_id: mapped?.tenant_id ?? null, dropped: Boolean(facts) };
  });
}

/** Best effort: an operator without pg_signal_backend still revokes, and the mapping is gone anyway. */
async function endSessions(sql: Sql, role: string): Promise<void> {
  await sql.query("savepoint end_sessions");
  try {
    await sql.query("select pg_terminate_backend(pid) from pg_stat_activity where usename = $1 and pid <> pg_backend_pid()", [
      role,
    ]);
    await sql.query("release savepoint end_sessions");
  } catch {
    await sql.query("rollback to savepoint end_sessions");
  }
}

export async function listReportingRoles(db: Database): Promise<ReportingRoleRow[]> {
  return db.asOwner((sql) =>
    sql.query<ReportingRoleRow>(
      `select r.role_name as role, r.tenant_id, t.name as tenant_name, r.created_at,
              exists (select from pg_roles where rolname = r.role_name) as role_exists
       from private.reporting_roles r join public.tenants t on t.id = r.tenant_id
       order by r.created_at, r.role_name`,
    ),
  );
}

/**
 * How the new role connects: the service's own database URL with the role's
 * credentials. Supabase's shared pooler names users `<role>.<project-ref>`,
 * so a suffix on the service's user name is kept.
 */
export function connectionDetails(databaseUrl: string, grant: ReportingGrant) {
  const url = new URL(databaseUrl);
  const suffix = /^[^.]+(\.[^.]+)$/.exec(decodeURIComponent(url.username))?.[1] ?? "";
  const user = `${grant.role}${suffix}`;
  url.username = encodeURIComponent(user);
  url.password = encodeURIComponent(grant.password);
  return {
    host: url.hostname,
    port: Number(url.port || 5432),
    database: decodeURIComponent(url.pathname.replace(/^\//, "")),
    user,
    url: url.toString(),
  };
}
