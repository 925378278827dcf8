import type pg from "pg";
import type { Principal } from "../principal.ts";
import { API_ROLE, type RequestIds, scopeSettings } from "./scope-settings.ts";
import { executeText, hex, quoteLiteral, runStatement } from "./statements.ts";

/**
 * The API key check that opens a tenant scope: the key's row, with the
 * scope's settings in the same select list, so that checking the key and
 * opening the scope cost one statement. Deferred (RequestDatabase.deferApiKey),
 * it travels with the route's first statement.
 */

/** A live key's owner, as private.authenticate_api_key returns it. */
export interface ApiKeyRow {
  key_id: string;
  tenant_id: string;
  user_id: string;
  email: string;
  role: Principal["role"];
  scopes: Principal["scopes"];
}

/** A caller known by an API key that the scope's first statement checks (RequestDatabase.deferApiKey). */
export interface DeferredCaller<P> {
  /** The key check with the tenant scope in its select list (CALLER_CHECK and its values). */
  check: pg.QueryConfig;
  /** The same as a text of its own (keyScopeSelect), when the check is not a named statement. */
  text?: string;
  principalOf(row: ApiKeyRow): P;
}

/** What opens a deferred caller's transaction: `begin` and the key check with the scope. */
export interface Opening {
  /** The key check with the scope's settings in its select list (CALLER_CHECK and its values). */
  check: pg.QueryConfig;
  /** The same check as a text of its own, values inlined, when it is not a named statement. */
  text?: string;
  /** Takes the check's row (the caller); called once, when it has run. */
  opened(row: ApiKeyRow | undefined): void;
}

/** The claims of a key's caller as claimsOf writes them, built in SQL from the key's row `k` and the request ids. */
const keyClaims = (requestId: string, clientRequestId: string) =>
  `json_build_object('role', '${API_ROLE}', 'tenant_id', k.tenant_id, 'sub', k.user_id, 'app_role', k.role,
      'email', k.email, 'via', 'api_key', 'key_id', k.key_id, 'request_id', ${requestId},
      'client_request_id', ${clientRequestId})::text`;

/**
 * The key check as a text of its own. The function runs (as its owner)
 * before the select list switches the role. `check` is authenticate_api_key
 * (no row for a key that is not live) or api_key_caller (raises CA401).
 */
export function keyScopeSelect(check: string, hash: Uint8Array, ids: RequestIds): string {
  const literal = (value: string | undefined) => (value === undefined ? "null" : quoteLiteral(value));
  // The hash is hex of our own digest, so it can stand in the text as a literal: a parameter
  // would need the extended protocol, which takes one statement per round trip.
  return `select k.key_id, k.tenant_id, k.user_id, k.email, k.role, k.scopes,
         ${scopeSettings(keyClaims(literal(ids.requestId), literal(ids.clientRequestId)))}
         from private.${check}('\\x${hex(hash)}'::bytea) k`;
}

/**
 * The read path's key check (deferApiKey), one prepared statement for every
 * request: $1 the key's hash, $2 and $3 the request ids. private.api_key_caller
 * raises for a key that is not live, so nothing sent after it in the same
 * text runs.
 */
export const CALLER_CHECK = `select k.key_id, k.tenant_id, k.user_id, k.email, k.role, k.scopes,
  ${scopeSettings(keyClaims("$2::text", "$3::text"))}
  from private.api_key_caller($1) k`;

/**
 * Opens the transaction of a deferred caller: one round trip, but two the
 * first time a connection prepares the check.
 */
export async function open(client: pg.ClientBase, opening: Opening): Promise<void> {
  const check = opening.check.name ? executeText(client, opening.check) : opening.text;
  if (check !== undefined) {
    const results = (await client.query(`begin; ${check}`)) as unknown as pg.QueryResult[];
    opening.opened(results[1]?.rows[0]);
    return;
  }
  await client.query("begin");
  opening.opened((await runStatement(client, opening.check)).rows[0]);
}
