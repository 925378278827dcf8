import type pg from "pg";
import { type ApiKeyRow, CALLER_CHECK, keyScopeSelect } from "./key-check.ts";
import type { OneConnection } from "./one-connection.ts";
import { type GrantRow, grantOf, leaseCall, type RateCharge, type RateGrant } from "./rate-lease.ts";
import type { RequestIds, ScopePrincipal } from "./scope-settings.ts";
import { quoteLiteral, statement } from "./statements.ts";
import { TenantScope } from "./tenant-scope.ts";

/**
 * What a request may do with the database (Database.forRequest): look a key
 * up, run a statement outside a tenant scope, open tenant scopes, all on the
 * request's one connection at a time.
 */
export class RequestDatabase {
  constructor(
    private readonly connection: OneConnection,
    private readonly prepare: boolean,
  ) {}

  /** A single statement outside any tenant scope (authentication, health). */
  query<R extends object = Record<string, unknown>>(text: string, values?: unknown[]): Promise<R[]> {
    return this.connection.query<R>(statement(text, values, this.prepare));
  }

  /** A tenant scope for this principal, with no transaction open yet (a Bearer caller's). */
  scopeFor<P extends ScopePrincipal>(principal: P): TenantScope<P> {
    return new TenantScope(this.connection, this.prepare, principal);
  }

  /**
   * The tenant scope of the live key with this SHA-256, checked by the
   * scope's first statement instead of a round trip of its own: a read whose
   * work is one prepared statement sends `begin`, the key check with the
   * scope, the statement and `commit` in one text (private.api_key_caller
   * raises for a key that is not live, so the statement never runs without
   * the scope). The principal is known once that has run; the scope's close
   * checks the key of a request that never reached the database. For a route
   * that does not read the principal before its first statement.
   */
  deferApiKey<P extends ScopePrincipal>(
    hash: Uint8Array,
    toPrincipal: (row: ApiKeyRow) => P,
    ids: RequestIds = {},
  ): TenantScope<P> {
    const check = statement(CALLER_CHECK, [hash, ids.requestId ?? null, ids.clientRequestId ?? null], this.prepare);
    // The text form only where the check cannot be prepared (see open).
    const text = check.name ? undefined : keyScopeSelect("api_key_caller", hash, ids);
    return new TenantScope(this.connection, this.prepare, { check, text, principalOf: toPrincipal });
  }

  /**
   * The live key with this SHA-256 and the tenant scope of its owner, built
   * by `toPrincipal`, or undefined. With `openScope` the same round trip also
   * opens the scope's first transaction, with the claims TenantScope.run
   * would set: the scope's first run takes it instead of opening its own (one
   * round trip and one pool checkout fewer per request). The caller must
   * close the scope when the request is done, so a transaction no run used is
   * ended. Only open a scope when the request's body is already in hand: it
   * holds a connection.
   */
  async authenticateApiKey<P extends ScopePrincipal, S extends object = never>(
    hash: Uint8Array,
    toPrincipal: (row: ApiKeyRow) => P,
    options: {
      openScope: boolean;
      charge?: RateCharge;
      ids?: RequestIds;
      /**
       * A statement to run in the scope just opened, in the same round trip
       * (with openScope only): SQL text whose values `quote` has made literals.
       * Its first row comes back as `inScope`.
       */
      inScope?: (quote: (value: string) => string) => string;
    },
  ): Promise<{ scope: TenantScope<P>; lease?: RateGrant; inScope?: S } | undefined> {
    const { openScope, charge } = options;
    if (!openScope) {
      const lease = charge ? leaseCall(charge, { subject: "'user:' || k.user_id::text" }) : undefined;
      const [row] = await this.query<ApiKeyRow & GrantRow>(
        lease
          ? `select k.*, h.granted, h.remaining, h.window_ms from private.authenticate_api_key($1) k left join lateral ${lease} h on true`
          : "select * from private.authenticate_api_key($1)",
        [hash],
      );
      return row && { scope: new TenantScope(this.connection, this.prepare, toPrincipal(row)), lease: grantOf(row) };
    }
    // The lease runs in a statement of its own, committed at once: it outlives the request, and
    // its counter row is never locked for the length of one.
    const lease = charge ? leaseCall(charge, { keyHash: hash }) : undefined;
    const client = await this.connection.connect();
    const inScope = options.inScope?.(quoteLiteral);
    try {
      const results = (await client.query(
        `${lease ? `select * from ${lease}; commit; ` : ""}begin; ${keyScopeSelect("authenticate_api_key", hash, options.ids ?? {})}${inScope ? `; ${inScope}` : ""}`,
      )) as unknown as pg.QueryResult<ApiKeyRow & GrantRow>[];
      const row = results[results.length - (inScope ? 2 : 1)]?.rows[0];
      if (!row) {
        await client.query("rollback");
        this.connection.release(client);
        return undefined;
      }
      return {
        scope: new TenantScope(this.connection, this.prepare, toPrincipal(row), client),
        lease: lease ? grantOf(results[0]?.rows[0]) : undefined,
        inScope: inScope ? (results.at(-1)?.rows[0] as S | undefined) : undefined,
      };
    } catch (error) {
      // A Postgres error (a refused lease, CA429, say) leaves the connection usable once rolled back.
      await this.connection.releaseAfter(client, error);
      throw error;
    }
  }
}
