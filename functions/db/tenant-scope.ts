import type pg from "pg";
import { wrap } from "./client-sql.ts";
import { type DeferredCaller, type Opening, open } from "./key-check.ts";
import type { OneConnection } from "./one-connection.ts";
import { isRetryable } from "./pg-errors.ts";
import { claimsOf, type ScopePrincipal, scopeSettings } from "./scope-settings.ts";
import type { Sql } from "./sql.ts";
import { quoteLiteral } from "./statements.ts";

const MAX_ATTEMPTS = 3;

/** How a tenant scope runs its work. */
export interface TenantOptions {
  /**
   * The work runs exactly one statement, so the commit can travel with it:
   * one round trip fewer once the connection has prepared the statement
   * (reads and single-row writes). Inside wholeRequest, or with
   * prepared statements off, the commit is sent on its own as usual.
   */
  oneStatement?: boolean;
}

/**
 * One request's tenant scope, carried on the request context as
 * `c.get("tenant")` (set by the auth middleware, closed by it when the request
 * ends): every transaction of the request runs through it, as the API role
 * with the principal's tenant in the transaction-local claims that the RLS
 * policies read. Only SET LOCAL / set_config(..., true) is used, so this
 * works behind a transaction-mode pooler.
 */
export class TenantScope<P extends ScopePrincipal = ScopePrincipal> {
  /** A transaction the key lookup opened with this scope's claims, until the first run takes it. */
  #opened: pg.PoolClient | undefined;
  /** The transaction of wholeRequest, which every run joins while it lasts. */
  #whole: pg.PoolClient | undefined;
  #principal: P | undefined;
  /** A caller whose key is checked by the scope's first statement (RequestDatabase.deferApiKey), until it is. */
  #deferred: DeferredCaller<P> | undefined;

  constructor(
    private readonly connection: OneConnection,
    private readonly prepare: boolean,
    caller: P | DeferredCaller<P>,
    opened?: pg.PoolClient,
  ) {
    if ("check" in caller) this.#deferred = caller;
    else this.#principal = caller;
    this.#opened = opened;
  }

  /** Who the scope acts for; for a deferred caller, known once the first run has checked the key. */
  get principal(): P {
    if (this.#principal === undefined) throw new Error("the caller is read before its key was checked (deferApiKey)");
    return this.#principal;
  }

  /** The deferred caller's opening, resolving the principal from the key check's row when it has run. */
  #opening(): Opening | undefined {
    const deferred = this.#deferred;
    if (!deferred) return undefined;
    return {
      check: deferred.check,
      text: deferred.text,
      opened: (row) => {
        // api_key_caller raises for a key that is not live, so the row is there.
        if (!row) throw new Error("the key check returned no row");
        this.#principal = deferred.principalOf(row);
        this.#deferred = undefined;
      },
    };
  }

  /** The transaction the key lookup opened, once: a retry or a second run opens its own. */
  #takeOpened(): pg.PoolClient | undefined {
    const client = this.#opened;
    this.#opened = undefined;
    return client;
  }

  /** One round trip opens a transaction and the tenant scope (for a deferred caller, with its key check). */
  async #begin(): Promise<pg.PoolClient> {
    const client = await this.connection.connect();
    try {
      const opening = this.#opening();
      if (opening) await open(client, opening);
      // The claims are built from uuids, a fixed role and the request id, and quoted as a literal.
      else await client.query(`begin; select ${scopeSettings(quoteLiteral(claimsOf(this.principal)))}`);
      return client;
    } catch (error) {
      await this.connection.releaseAfter(client, error);
      throw error;
    }
  }

  /**
   * Runs `work` in one transaction of the scope (inside wholeRequest, in
   * that one: the request holds one connection, so it has one transaction at
   * a time). Serialization failures and deadlocks are retried; `work` must
   * therefore be safe to rerun.
   */
  async run<T>(work: (sql: Sql) => Promise<T>, options: TenantOptions = {}): Promise<T> {
    const prepare = this.prepare;
    if (this.#whole) return work(wrap(this.#whole, prepare));
    for (let attempt = 1; ; attempt++) {
      // A deferred caller's key check travels with a one-statement run's statement: one round trip in all.
      const defer = this.#opened === undefined && this.#deferred !== undefined && options.oneStatement && prepare;
      const client = this.#takeOpened() ?? (defer ? await this.connection.connect() : await this.#begin());
      let broken = false;
      try {
        const one = options.oneStatement
          ? { sent: false, committed: false, opening: defer ? this.#opening() : undefined }
          : undefined;
        const result = await work(wrap(client, prepare, one));
        if (!one?.committed) await client.query("commit");
        return result;
      } catch (error) {
        try {
          await client.query("rollback");
        } catch {
          broken = true;
        }
        if (attempt < MAX_ATTEMPTS && isRetryable(error)) continue;
        throw error;
      } finally {
        this.connection.release(client, broken);
      }
    }
  }

  /**
   * Runs `work` in one transaction that every run of this scope joins until
   * it ends, so that what a whole request writes and what is recorded about
   * it commit together (idempotency). `work` says whether to commit; a throw
   * rolls back. Its `last` handle runs the statement that ends a committing
   * transaction, sent with the commit (as run's oneStatement). Not retried:
   * the request's route ran inside it.
   */
  async wholeRequest<T>(work: (sql: Sql, last: Sql) => Promise<{ commit: boolean; result: T }>): Promise<T> {
    const prepare = this.prepare;
    const client = this.#takeOpened() ?? (await this.#begin());
    let broken = false;
    try {
      this.#whole = client;
      const one = { sent: false, committed: false };
      const { commit, result } = await work(wrap(client, prepare), wrap(client, prepare, one));
      if (!one.committed) await client.query(commit ? "commit" : "rollback");
      return result;
    } catch (error) {
      await client.query("rollback").catch(() => {
        broken = true;
      });
      throw error;
    } finally {
      this.#whole = undefined;
      this.connection.release(client, broken);
    }
  }

  /**
   * Ends the transaction the key lookup opened if no run used it. It holds
   * nothing but the key lookup, whose record of use (last_used_at) is kept,
   * as when the lookup ran on its own.
   */
  async close(): Promise<void> {
    // A deferred caller whose request never reached the database: its key is checked all the same (a 401 wins).
    if (this.#deferred) this.#opened = await this.#begin();
    const client = this.#takeOpened();
    if (!client) return;
    try {
      await client.query("commit");
      this.connection.release(client);
    } catch {
      this.connection.release(client, true);
    }
  }
}
