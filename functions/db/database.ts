import pg from "pg";
import { describeError, log } from "../log.ts";
import { wrap } from "./client-sql.ts";
import { OneConnection } from "./one-connection.ts";
import { RequestDatabase } from "./request-database.ts";
import type { ScopePrincipal } from "./scope-settings.ts";
import type { Sql } from "./sql.ts";
import { statement } from "./statements.ts";
import { type TenantOptions, TenantScope } from "./tenant-scope.ts";

/**
 * The pool. The rest of the database layer, one job a file: sql.ts (what
 * data access is given), statements.ts (named statements and their EXECUTE
 * form), one-connection.ts (a request holds one connection at a time),
 * request-database.ts (a request's way in: key lookup, rate lease),
 * key-check.ts (the key check that opens a tenant scope, deferred on the
 * read path), scope-settings.ts (what a tenant scope sets), tenant-scope.ts
 * (the tenant transaction), client-sql.ts (the one-statement transaction),
 * pg-errors.ts (Postgres errors to the client's).
 */

// Postgres `date` values stay "YYYY-MM-DD" strings: turning them into JS Dates
// would shift them by the server's time zone.
pg.types.setTypeParser(pg.types.builtins.DATE, (value: string) => value);
// Counts (bigint) are small enough for a JS number everywhere this service uses them.
pg.types.setTypeParser(pg.types.builtins.INT8, (value: string) => Number(value));

export interface DatabaseOptions {
  /** Connections in the pool. */
  max?: number;
  /** Named (prepared) statements; see `prepare` below. */
  prepare?: boolean;
  /** How long a request waits for a connection before it is answered 503. */
  connectTimeoutMs?: number;
  /** Told of every lost connection; by default one line in the log. */
  onConnectionError?: (error: Error) => void;
}

/** One line per lost connection: its cause, never a connection string. */
export function logConnectionError(error: Error): void {
  log.warn("database connection lost", describeError(error));
}

/**
 * The service's handle on Postgres: a pool, the key lookup, and the tenant
 * scopes (TenantScope) every tenant transaction runs in. Handlers never
 * filter by tenant themselves; the RLS policies do it from the claims a
 * scope sets.
 */
export class Database {
  readonly pool: pg.Pool;

  /**
   * Whether to use named statements. Off behind a transaction-mode pooler that
   * does not track prepared statements (PgBouncer before 1.21 without
   * max_prepared_statements, Supavisor in transaction mode): a statement
   * prepared on one server connection would be missing on the next.
   */
  readonly prepare: boolean;

  constructor(connectionString: string, options: DatabaseOptions = {}) {
    this.prepare = options.prepare ?? true;
    const warn = options.onConnectionError ?? logConnectionError;
    this.pool = new pg.Pool({
      connectionString,
      max: options.max ?? 10,
      idleTimeoutMillis: 30_000,
      // While Postgres is unreachable a request waits at most this long for a
      // connection, then gets a 503, instead of queueing behind others.
      connectionTimeoutMillis: options.connectTimeoutMs ?? 3_000,
    });
    // A connection can be lost at any moment (a restart, pg_terminate_backend,
    // a network cut), also while a request holds it between two statements,
    // when node-postgres reports it only as an 'error' event on the client: an
    // event nobody listens to would end the process. The request's next
    // statement then fails and is answered 503; the pool replaces the client.
    this.pool.on("connect", (client: pg.PoolClient) => client.on("error", warn));
    // An idle client's loss is reported here; the pool has already dropped it.
    this.pool.on("error", warn);
  }

  /** A tenant scope for this principal, with no transaction open yet (the CLI's, an operator's). */
  scopeFor<P extends ScopePrincipal>(principal: P): TenantScope<P> {
    return new TenantScope(new OneConnection(this.pool), this.prepare, principal);
  }

  /** `work` in one tenant transaction of its own (see TenantScope.run), for code outside a request. */
  asTenant<T>(principal: ScopePrincipal, work: (sql: Sql) => Promise<T>, options: TenantOptions = {}): Promise<T> {
    return this.scopeFor(principal).run(work, options);
  }

  /**
   * A request's handle on the database: everything a request does with
   * Postgres goes through it, on at most one pooled connection at a time
   * (OneConnection). The request context carries this, never the Database.
   */
  forRequest(): RequestDatabase {
    return new RequestDatabase(new OneConnection(this.pool), this.prepare);
  }

  /** Runs `work` in one transaction as the connecting role (operators and the CLI; no RLS). */
  async asOwner<T>(work: (sql: Sql) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query("begin");
      const result = await work(wrap(client, this.prepare));
      await client.query("commit");
      return result;
    } catch (error) {
      await client.query("rollback").catch(() => {});
      throw error;
    } finally {
      client.release();
    }
  }

  /** A single statement outside any tenant scope and any request (the CLI, the server's start). */
  async query<R extends object = Record<string, unknown>>(text: string, values?: unknown[]): Promise<R[]> {
    return (await this.pool.query(statement(text, values, this.prepare))).rows as R[];
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
