import { base64url } from "jose";
import type { Database } from "../db/database.ts";
import type { Sql } from "../db/sql.ts";
import { badRequest, conflict, notFound } from "../errors.ts";
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
/** The group that holds the care views' and tables' privileges: roles granted --care only (*_reporting_care_role.sql). */
export const REPORTING_CARE_GROUP = "camp_reporting_care";

/** Lower case, so the name needs no quoting in psql; as the mapping table's check. */
const ROLE_NAME = /^[a-z][a-z0-9_]{2,62}$/;
const PASSWORD_BYTES = 32;
const VERIFIER = /^SCRAM-SHA-256\$\d+:[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+$/;

/** What a reporting role may use of the cluster; see sql/migrations/*_reporting_limits.sql. */
export interface ReportingLimits {
  /** Concurrent connections of this role. */
  connectionLimit: number;
  /** Longest statement, in milliseconds; enforced by the guard even if the role lifts its own setting. */
  statementTimeoutMs: number;
  /** Longest idle time inside a transaction, in milliseconds, before the session is ended. */
  idleTimeoutMs: number;
  /** Temporary file space per session, in kilobytes (sorts and hashes that spill to disk). */
  tempFileLimitKb: number;
}

export const DEFAULT_REPORTING_LIMITS: ReportingLimits = {
  connectionLimit: 3,
  statementTimeoutMs: 30_000,
  idleTimeoutMs: 60_000,
  tempFileLimitKb: 1_048_576,
};

export interface GrantOptions extends Partial<ReportingLimits> {
  /** Whether the role reads care data (contacts, care records, consents and their audit events); default false. */
  care?: boolean;
  /**
   * Connections all reporting roles of the cluster may hold together; by
   * default a quarter of the connections left to ordinary roles, so the API
   * keeps the rest.
   */
  connectionBudget?: number;
}

export interface ReportingGrant {
  role: string;
  tenant_id: string;
  /** Whether the role reads care data. */
  care: boolean;
  password: string;
  limits: ReportingLimits;
  /** What the operator should still do by hand, e.g. on a shared cluster. */
  warnings: string[];
}

export interface ReportingRoleRow {
  role: string;
  tenant_id: string;
  tenant_name: string;
  care: boolean;
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
 * member of camp_reporting (and, granted care, of camp_reporting_care) and of nothing else, has no other attribute,
 * starts read-only with the reporting schema on its search path, and gets the
 * limits of `options` (DEFAULT_REPORTING_LIMITS otherwise).
 */
export async function grantReportingRole(
  db: Database,
  tenantId: string,
  role: string,
  options: GrantOptions = {},
): Promise<ReportingGrant> {
  checkRoleName(role);
  const { care = false, connectionBudget, ...limitOptions } = options;
  const limits = checkLimits({ ...DEFAULT_REPORTING_LIMITS, ...definedOnly(limitOptions) });
  const password = newReportingPassword();
  const verifier = await scramSha256Verifier(password);
  if (!VERIFIER.test(verifier)) throw new Error("unexpected password verifier");
  const warnings = await db.asOwner(async (sql) => {
    if (!(await sql.one("select from public.tenants where id = $1", [tenantId]))) throw notFound("tenant");
    // Grants of one cluster take turns, so two cannot both fit the last of the budget.
    await sql.query("select pg_advisory_xact_lock(hashtext('camp reporting grant'))");
    if (await sql.one("select from pg_roles where rolname = $1", [role])) throw conflict(`role ${role} already exists`);
    await checkBudget(sql, limits.connectionLimit, connectionBudget);
    // A mapping left behind by a role dropped by hand must not outlive it.
    await sql.query("delete from private.reporting_roles where role_name = $1", [role]);
    await sql.query(
      `create role ${ident(role)} login inherit nosuperuser nocreatedb nocreaterole noreplication nobypassrls
       connection limit ${limits.connectionLimit} password '${verifier}'`,
    );
    await sql.query(`grant ${REPORTING_GROUP} to ${ident(role)}`);
    if (care) await sql.query(`grant ${REPORTING_CARE_GROUP} to ${ident(role)}`);
    await sql.query(`alter role ${ident(role)} set default_transaction_read_only = on`);
    await sql.query(`alter role ${ident(role)} set search_path = reporting`);
    await sql.query(`alter role ${ident(role)} set statement_timeout = ${limits.statementTimeoutMs}`);
    await sql.query(`alter role ${ident(role)} set idle_in_transaction_session_timeout = ${limits.idleTimeoutMs}`);
    await sql.query(
      `insert into private.reporting_roles (role_name, tenant_id, connection_limit, statement_timeout, idle_timeout, care)
       values ($1, $2, $3, make_interval(secs => $4::float8 / 1000), make_interval(secs => $5::float8 / 1000), $6)`,
      [role, tenantId, limits.connectionLimit, limits.statementTimeoutMs, limits.idleTimeoutMs, care],
    );
    await sql.query("select private.restrict_reporting_database()");
    return [...(await setTempFileLimit(sql, role, limits.tempFileLimitKb)), ...(await remainingReach(sql, role))];
  });
  return { role, tenant_id: tenantId, care, password, limits, warnings };
}

const definedOnly = <T extends object>(value: T): Partial<T> =>
  Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;

function checkLimits(limits: ReportingLimits): ReportingLimits {
  const within = (value: number, min: number, max: number) => Number.isInteger(value) && value >= min && value <= max;
  if (!within(limits.connectionLimit, 1, 100)) throw badRequest("connection limit: a whole number from 1 to 100");
  if (!within(limits.statementTimeoutMs, 100, 3_600_000)) throw badRequest("statement timeout: 100 ms to 1 hour");
  if (!within(limits.idleTimeoutMs, 100, 3_600_000)) throw badRequest("idle timeout: 100 ms to 1 hour");
  if (!within(limits.tempFileLimitKb, 0, 2 ** 31 - 1)) throw badRequest("temp file limit: a whole number of kilobytes");
  return limits;
}

/** Refuses a role whose connections would take the cluster's reporting roles past their budget. */
async function checkBudget(sql: Sql, connectionLimit: number, budget?: number): Promise<void> {
  const row = await sql.one<{ used: number; budget: number }>(
    `select coalesce(sum(r.rolconnlimit) filter (where r.rolconnlimit > 0), 0)::int as used,
            ((current_setting('max_connections')::int - current_setting('superuser_reserved_connections')::int) / 4)::int as budget
     from pg_roles r join pg_auth_members m on m.member = r.oid
     where m.roleid = $1::regrole`,
    [REPORTING_GROUP],
  );
  const total = budget ?? row?.budget ?? 0;
  const used = row?.used ?? 0;
  if (used + connectionLimit > total) {
    throw conflict(
      `reporting roles already hold ${used} of their ${total} connections; a limit of ${connectionLimit} does not fit (lower --connection-limit or revoke a role)`,
    );
  }
}

/**
 * temp_file_limit can be set for a role only by a superuser (or a role granted
 * SET on it), and then the role cannot lift it. Elsewhere the role keeps the
 * cluster's limit, which the warning says.
 */
async function setTempFileLimit(sql: Sql, role: string, kilobytes: number): Promise<string[]> {
  await sql.query("savepoint temp_file_limit");
  try {
    await sql.query(`alter role ${ident(role)} set temp_file_limit = ${kilobytes}`);
    await sql.query("release savepoint temp_file_limit");
    return [];
  } catch {
    await sql.query("rollback to savepoint temp_file_limit");
    return [`temp_file_limit is not set for ${role}: only a superuser can set it (ALTER ROLE ${role} SET temp_file_limit = ...)`];
  }
}

/** What the role can still reach beyond this database's reporting views, for the operator to close. */
async function remainingReach(sql: Sql, role: string): Promise<string[]> {
  const reach = await sql.one<{ temp: boolean; databases: string[] }>(
    `select has_database_privilege($1, current_database(), 'TEMP') as temp,
            coalesce(array_agg(datname::text order by datname) filter (
              where datallowconn and datname <> current_database() and has_database_privilege($1, datname, 'CONNECT')), '{}'::text[]) as databases
     from pg_database`,
    [role],
  );
  const warnings: string[] = [];
  if (reach?.temp)
    warnings.push(
      `${role} may create temporary tables here: the database owner should REVOKE TEMPORARY ON DATABASE ... FROM PUBLIC`,
    );
  if (reach?.databases.length) {
    warnings.push(
      `${role} may also connect to ${reach.databases.join(", ")} (CONNECT granted to PUBLIC there): on a shared cluster, REVOKE CONNECT ON DATABASE <name> FROM PUBLIC and grant it to the roles that need it`,
    );
  }
  return warnings;
}

/** Runs the guard once: cancels and ends reporting sessions past their limits; returns what it did. */
export async function enforceReportingLimits(db: Database) {
  return db.asOwner((sql) =>
    sql.query<{ pid: number; role_name: string; action: "cancel" | "terminate" }>(
      "select pid, role_name, action from private.enforce_reporting_limits()",
    ),
  );
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
       exists (select from pg_auth_members m where m.member = r.oid and m.roleid not in ($2::regrole, $3::regrole)) as other_memberships,
       r.rolsuper or r.rolcreaterole or r.rolcreatedb or r.rolreplication or r.rolbypassrls as privileged,
       pg_has_role(current_user, r.oid, 'usage') as can_drop_owned
     from pg_roles r where r.rolname = $1`,
    [role, REPORTING_GROUP, REPORTING_CARE_GROUP],
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
      `select r.role_name as role, r.tenant_id, t.name as tenant_name, r.care, r.created_at,
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
