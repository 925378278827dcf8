import type { Principal } from "../principal.ts";

/**
 * What a tenant scope sets at the start of its transaction, all
 * transaction-local (set_config(..., true)), so that it works behind a
 * transaction-mode pooler: the role, a statement timeout, plan caching, the
 * date style and the claims the RLS policies and audit triggers read.
 */

/** The role every API request runs as; see sql/migrations/*_bootstrap.sql. */
export const API_ROLE = "camp_api";

/** A request that exceeds this is cancelled by Postgres, not left holding locks. */
const STATEMENT_TIMEOUT = "15s";

/**
 * How a request's prepared statements are planned: once, for any values (a
 * generic plan), not again for each request's values. Postgres otherwise
 * chooses per statement, and for the participant list, whose generic plan is
 * the same plan, it kept planning afresh on every request, because it costs
 * `limit $n` above a known limit.
 * Statements that need their values' plan set force_custom_plan themselves.
 */
export const REQUEST_PLAN_CACHE_MODE = "force_generic_plan";

/**
 * Dates and timestamps leave Postgres as text, in the form DateStyle gives
 * them: node-postgres parses that text, and the participant list writes dates
 * into its JSON as text. A server, database or login role with another
 * DateStyle (`SQL, DMY` writes 04/05/2010) would change what clients read, so
 * each request pins Postgres's default.
 */
const DATE_STYLE = "ISO, MDY";

/** The select list that opens a tenant scope: role, timeout, plan caching, date style, claims (an SQL text expression). */
export const scopeSettings = (claims: string) =>
  `set_config('role', '${API_ROLE}', true), set_config('statement_timeout', '${STATEMENT_TIMEOUT}', true), ` +
  `set_config('plan_cache_mode', '${REQUEST_PLAN_CACHE_MODE}', true), set_config('DateStyle', '${DATE_STYLE}', true), ` +
  `set_config('request.jwt.claims', ${claims}, true)`;

/** The server's id of a request and the client's own, for the audit trail. */
export type RequestIds = Partial<Pick<Principal, "requestId" | "clientRequestId">>;

/** Who a tenant scope acts for; the optional parts go into the audit trail. */
export type ScopePrincipal = Pick<Principal, "tenantId" | "userId" | "role"> &
  Partial<Pick<Principal, "email" | "via" | "keyId">> &
  RequestIds;

/**
 * The transaction-local claims of a tenant scope: the API role, the tenant,
 * the user and their role (for the policies), and how they called and in
 * which request (for the audit trail's triggers). The key check builds the
 * same in SQL (key-check.ts keyClaims).
 */
export function claimsOf(principal: ScopePrincipal): string {
  return JSON.stringify({
    role: API_ROLE,
    tenant_id: principal.tenantId,
    sub: principal.userId,
    app_role: principal.role,
    email: principal.email,
    via: principal.via,
    key_id: principal.keyId,
    request_id: principal.requestId,
    client_request_id: principal.clientRequestId,
  });
}
