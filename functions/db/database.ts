import pg from "pg";
import { describeError, log } from "../log.ts";
import type { Principal } from "../principal.ts";
import { isRetryable } from "./pg-errors.ts";

// Postgres `date` values stay "YYYY-MM-DD" strings: turning them into JS Dates
// would shift them by the server's time zone.
pg.types.setTypeParser(pg.types.builtins.DATE, (value: string) => value);
// Counts (bigint) are small enough for a JS number everywhere this service uses them.
pg.types.setTypeParser(pg.types.builtins.INT8, (value: string) => Number(value));

/** What data-access functions are given: queries inside the request's transaction. */
export interface Sql {
  query<R extends object = Record<string, unknown>>(text: string, values?: unknown[]): Promise<R[]>;
  /** The first row, or undefined. */
  one<R extends object = Record<string, unknown>>(text: string, values?: unknown[]): Promise<R | undefined>;
  /** Hands each row to `onRow` as it arrives and keeps none: for results too large to hold at once. */
  each<R extends object = Record<string, unknown>>(text: string, values: unknown[], onRow: (row: R) => void): Promise<void>;
}

/** The role every API request runs as; see sql/migrations/*_bootstrap.sql. */
export const API_ROLE = "camp_api";

/** A request that exceeds this is cancelled by Postgres, not left holding locks. */
const STATEMENT_TIMEOUT = "15s";
const MAX_ATTEMPTS = 3;

/**
 * Parameterised statements are sent as named (prepared) statements: each
 * connection parses and plans a statement text once, and Postgres may keep a
 * generic plan, where an unnamed statement is parsed, analysed and planned on
 * every request (planning the participant list costs more than running it).
 * The names are per process and bounded, as are the texts worth preparing:
 * one-off texts (bulk inserts of n rows) go unnamed.
 */
const MAX_NAMED_STATEMENTS = 1_000;
const MAX_NAMED_TEXT = 16_384;
const statementNames = new Map<string, string>();

function statement(text: string, values: unknown[] | undefined, prepare: boolean): pg.QueryConfig {
  if (!prepare || values === undefined || text.length > MAX_NAMED_TEXT) return { text, values };
  let name = statementNames.get(text);
  if (name === undefined) {
    if (statementNames.size >= MAX_NAMED_STATEMENTS) return { text, values };
    name = `camp_${statementNames.size}`;
    statementNames.set(text, name);
  }
  return { name, text, values };
}

/** The named statements each connection has prepared (it keeps them as long as it lives). */
const preparedOn = new WeakMap<pg.ClientBase, Set<string>>();

/**
 * A value as a quoted SQL literal: the text the extended protocol would send
 * for it as a parameter. Values the protocol sends another way (arrays,
 * dates, objects) have none; their statement is sent as usual.
 */
function literalOf(value: unknown): string | undefined {
  if (value === null || value === undefined) return "null";
  if (typeof value === "string") return quoteLiteral(value);
  if (typeof value === "boolean" || (typeof value === "number" && Number.isFinite(value))) return `'${value}'`;
  if (value instanceof Uint8Array) return `'\\x${hex(value)}'`;
  return undefined;
}

/**
 * A string as a quoted SQL literal, as pg's escapeLiteral writes it (quotes
 * doubled; with a backslash, backslashes doubled in an E'' literal), without
 * its character-by-character copy: every read's text carries a few.
 */
export function quoteLiteral(value: string): string {
  if (value.includes("\\")) return ` E'${value.replaceAll("\\", "\\\\").replaceAll("'", "''")}'`;
  return value.includes("'") ? `'${value.replaceAll("'", "''")}'` : `'${value}'`;
}

const HEX_DIGITS = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, "0"));
const hex = (bytes: Uint8Array) => {
  let text = "";
  for (const b of bytes) text += HEX_DIGITS[b];
  return text;
};

/**
 * EXECUTE of a statement this connection has already prepared (the same
 * plan), its values as literals: a text that can travel with others in one
 * round trip (the simple protocol), where the extended protocol takes one
 * statement per round trip. Undefined when the statement is not yet
 * prepared here or a value has no literal form.
 */
function executeText(client: pg.ClientBase, config: pg.QueryConfig): string | undefined {
  if (!config.name || !preparedOn.get(client)?.has(config.name)) return undefined;
  const literals: string[] = [];
  for (const value of config.values ?? []) {
    const literal = literalOf(value);
    if (literal === undefined) return undefined;
    literals.push(literal);
  }
  return `execute ${config.name}${literals.length ? `(${literals.join(", ")})` : ""}`;
}

/** Runs a statement, noting that the connection has prepared it when it is named. */
async function runStatement(client: pg.ClientBase, config: pg.QueryConfig): Promise<pg.QueryResult> {
  const result = await client.query(config);
  if (config.name) {
    const names = preparedOn.get(client) ?? new Set<string>();
    preparedOn.set(client, names.add(config.name));
  }
  return result;
}

/**
 * A transaction whose work is one statement: the statement carries the
 * commit when it can, and a second statement is a mistake of the caller's,
 * refused before it could run outside the transaction.
 */
interface OneStatement {
  sent: boolean;
  committed: boolean;
  /** The transaction is not open yet: its opening (`begin`, key check, scope) goes first, with the statement when it can. */
  opening?: Opening;
}

/** What opens a deferred caller's transaction (RequestDatabase.deferApiKey): `begin` and the key check with the scope. */
interface Opening {
  /** The key check with the scope's settings in its select list (CALLER_CHECK and its values). */
  check: pg.QueryConfig;
  /** The same check as a text of its own, values inlined, when it is not a named statement. */
  text?: string;
  /** Takes the check's row (the caller); called once, when it has run. */
  opened(row: ApiKeyRow | undefined): void;
}

/**
 * Opens the transaction: one round trip, but two the first time a connection
 * prepares the check.
 */
async function open(client: pg.ClientBase, opening: Opening): Promise<void> {
  const check = opening.check.name ? executeText(client, opening.check) : opening.text;
  if (check !== undefined) {
    const results = (await client.query(`begin; ${check}`)) as unknown as pg.QueryResult[];
    opening.opened(results[1]?.rows[0]);
    return;
  }
  await client.query("begin");
  opening.opened((await runStatement(client, opening.check)).rows[0]);
}

async function send(client: pg.ClientBase, config: pg.QueryConfig, one: OneStatement | undefined): Promise<pg.QueryResult> {
  if (one) {
    if (one.sent) throw new Error("a one-statement transaction was given a second statement");
    one.sent = true;
    const opening = one.opening;
    const text = executeText(client, config);
    const check = opening && executeText(client, opening.check);
    if (text !== undefined && (!opening || check !== undefined)) {
      // One round trip: [begin; the key check;] the statement; commit. Its result is the one before the commit's.
      const results = (await client.query(
        opening ? `begin; ${check}; ${text}; commit` : `${text}; commit`,
      )) as unknown as pg.QueryResult[];
      opening?.opened(results[1]?.rows[0]);
      one.committed = true;
      return results.at(-2) as pg.QueryResult;
    }
    if (opening) await open(client, opening);
  }
  return runStatement(client, config);
}

function wrap(client: pg.ClientBase, prepare: boolean, one?: OneStatement): Sql {
  return {
    async query(text, values) {
      return (await send(client, statement(text, values, prepare), one)).rows;
    },
    async one(text, values) {
      return (await send(client, statement(text, values, prepare), one)).rows[0];
    },
    each(text, values, onRow) {
      if (one) throw new Error("a one-statement transaction cannot stream rows");
      // A Query with a row listener and no callback does not collect its rows.
      const query = new pg.Query(statement(text, values, prepare));
      return new Promise((resolve, reject) => {
        query.on("row", onRow);
        query.on("end", () => resolve());
        query.on("error", reject);
        client.query(query);
      });
    },
  };
}

/**
 * A request's way to the pool: it lends at most one connection at a time.
 * A request that held a connection while it waited for a second could, with
 * enough like it, hold the whole pool while each waits for one more, and every
 * tenant's requests would then wait and fail. So a second checkout while one
 * is out is refused at once, as the bug it is; one after another is fine.
 */
export class OneConnection {
  #out = false;

  constructor(private readonly pool: pg.Pool) {}

  async connect(): Promise<pg.PoolClient> {
    if (this.#out) throw new Error("a request asked for a second database connection while it holds one");
    this.#out = true;
    try {
      return await this.pool.connect();
    } catch (error) {
      this.#out = false;
      throw error;
    }
  }

  /** Gives the connection back; `broken` destroys it (its state is unknown). */
  release(client: pg.PoolClient, broken = false): void {
    this.#out = false;
    client.release(broken);
  }

  /** One statement on a connection of its own, given back at once. */
  async query<R extends object>(config: pg.QueryConfig): Promise<R[]> {
    const client = await this.connect();
    let broken = false;
    try {
      return (await client.query<R>(config)).rows;
    } catch (error) {
      // A Postgres error leaves the connection usable; anything else (a lost socket) may not.
      broken = typeof (error as { severity?: unknown }).severity !== "string";
      throw error;
    } finally {
      this.release(client, broken);
    }
  }
}

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

/** A live key's owner, as private.authenticate_api_key returns it. */
export interface ApiKeyRow {
  key_id: string;
  tenant_id: string;
  user_id: string;
  email: string;
  role: Principal["role"];
  scopes: Principal["scopes"];
}

/** A rate-limit lease to ask for: `weight` hits for the request, up to `want` in all, of `limit` per `windowSeconds`. */
export interface RateCharge {
  weight: number;
  want: number;
  limit: number;
  windowSeconds: number;
}

/** What private.rate_lease granted: hits, what the shared count has left, milliseconds until the window ends. */
export interface RateGrant {
  granted: number;
  remaining: number;
  window_ms: number;
}

/** What is left of the caller's rate limit after this request. */
export interface RateState {
  limit: number;
  remaining: number;
  /** Seconds until the window ends. */
  reset: number;
}

type GrantRow = { [K in keyof RateGrant]: RateGrant[K] | null };

const grantOf = (row: GrantRow | undefined): RateGrant | undefined =>
  row?.granted == null ? undefined : { granted: row.granted, remaining: row.remaining ?? 0, window_ms: row.window_ms ?? 1 };

/** A lease statement's call, for the user `subject` (SQL) or the key with this hash. */
export const leaseCall = (charge: RateCharge, of: { subject: string } | { keyHash: Uint8Array }) =>
  "subject" in of
    ? `private.rate_lease(${of.subject}, ${charge.weight}, ${charge.want}, ${charge.limit}, ${charge.windowSeconds})`
    : `private.rate_lease_key('\\x${hex(of.keyHash)}'::bytea, ${charge.weight}, ${charge.want}, ${charge.limit}, ${charge.windowSeconds})`;

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

/** The statements that open a transaction with a tenant scope: role, timeout, plan caching, date style, claims. */
const scopeSettings = (claims: string) =>
  `set_config('role', '${API_ROLE}', true), set_config('statement_timeout', '${STATEMENT_TIMEOUT}', true), ` +
  `set_config('plan_cache_mode', '${REQUEST_PLAN_CACHE_MODE}', true), set_config('DateStyle', '${DATE_STYLE}', true), ` +
  `set_config('request.jwt.claims', ${claims}, true)`;

/** How asTenant runs its work. */
export interface TenantOptions {
  /**
   * The work runs exactly one statement, so the commit can travel with it:
   * one round trip fewer once the connection has prepared the statement
   * (reads and single-row writes). Inside wholeRequest, or with
   * prepared statements off, the commit is sent on its own as usual.
   */
  oneStatement?: boolean;
}

/** A caller known by an API key that the scope's first statement checks (RequestDatabase.deferApiKey). */
export interface DeferredCaller<P> {
  /** The key check with the tenant scope in its select list (CALLER_CHECK and its values). */
  check: pg.QueryConfig;
  /** The same as a text of its own (keyScopeSelect), when the check is not a named statement. */
  text?: string;
  principalOf(row: ApiKeyRow): P;
}

/** The claims of a key's caller as claimsOf writes them, built in SQL from the key's row `k` and the request ids. */
const keyClaims = (requestId: string, clientRequestId: string) =>
  `json_build_object('role', '${API_ROLE}', 'tenant_id', k.tenant_id, 'sub', k.user_id, 'app_role', k.role,
      'email', k.email, 'via', 'api_key', 'key_id', k.key_id, 'request_id', ${requestId},
      'client_request_id', ${clientRequestId})::text`;

/**
 * The key check that opens a tenant scope: the key's row, with the scope's
 * settings in the same select list. The function runs (as its owner) before
 * the select list switches the role. `check` is authenticate_api_key (no row
 * for a key that is not live) or api_key_caller (raises CA401).
 */
function keyScopeSelect(check: string, hash: Uint8Array, ids: RequestIds): string {
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
const CALLER_CHECK = `select k.key_id, k.tenant_id, k.user_id, k.email, k.role, k.scopes,
  ${scopeSettings(keyClaims("$2::text", "$3::text"))}
  from private.api_key_caller($1) k`;

/** The server's id of a request and the client's own, for the audit trail. */
export type RequestIds = Partial<Pick<Principal, "requestId" | "clientRequestId">>;

/** Who a tenant scope acts for; the optional parts go into the audit trail. */
export type ScopePrincipal = Pick<Principal, "tenantId" | "userId" | "role"> &
  Partial<Pick<Principal, "email" | "via" | "keyId">> &
  RequestIds;

/**
 * The transaction-local claims of a tenant scope: the API role, the tenant,
 * the user and their role (for the policies), and how they called and in
 * which request (for the audit trail's triggers).
 */
function claimsOf(principal: ScopePrincipal): string {
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
      const usable =
        typeof (error as { severity?: unknown }).severity === "string" &&
        (await client.query("rollback").then(
          () => true,
          () => false,
        ));
      this.connection.release(client, !usable);
      throw error;
    }
  }
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

  /**
   * Gives a connection back after a failed statement: rolled back and kept
   * when Postgres refused the statement (a key that is not live, say: no
   * reconnection for each made-up key), destroyed when its state is unknown.
   */
  async #release(client: pg.PoolClient, error: unknown): Promise<void> {
    const usable =
      typeof (error as { severity?: unknown }).severity === "string" &&
      (await client.query("rollback").then(
        () => true,
        () => false,
      ));
    this.connection.release(client, !usable);
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
      await this.#release(client, error);
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
