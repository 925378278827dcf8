import type { ListMeta } from "../db/list.ts";
import { allOf, listPage } from "../db/list.ts";
import type { Sql } from "../db/sql.ts";
import type { Precondition } from "../http/etag.ts";
import { afterCondition, cursorOf, cursorValues, type OrderColumn } from "./cursor.ts";
import { type ListOptions, orderBy, orderKeys, syncConditions } from "./listing.ts";

export interface TableSpec {
  /** Schema-qualified table, e.g. `public.blocks`. */
  table: string;
  /** What the API returns, in order: never tenant_id or deleted_at. */
  columns: readonly string[];
  /** What a client may write; other keys of a body are never used. */
  writable: readonly string[];
  /** Columns a list may be filtered on (equality). */
  filters: readonly string[];
  /**
   * Lower bounds a list may be filtered on: query parameter → SQL expression
   * over the table's row (`available_min` → the free places). A row whose
   * expression is null matches no bound.
   */
  atLeast?: Readonly<Record<string, string>>;
  /**
   * Computed read-only fields: name → SQL expression over the table's row,
   * which it names unqualified by schema (`rooms.block_id`). Read, listed,
   * sorted and returned by writes like columns; never written.
   */
  computed?: Readonly<Record<string, string>>;
  /**
   * The version of the row the computed fields are read from (its `xmin`), so
   * that a record's ETag changes when they do (a renamed block renames its
   * rooms' block_name). If-Match compares the record's own version only.
   */
  computedVersion?: string;
  /**
   * The list's total kept by the database (private.list_counts): its name
   * there, and the filters that are its scope (the instance) and status.
   * A list filtered on these alone reads the kept total; any other filter
   * counts rows.
   */
  counted?: { list: string; scope?: string; status?: string };
  /** Sortable columns (and computed fields) that are never null: a cursor over them alone is a row comparison. */
  notNull?: readonly string[];
}

/** A record with its row version, from which its ETag is made (http/etag.ts). */
export interface Versioned<Row> {
  row: Row;
  version: string;
}

export interface Page<Row> {
  rows: Row[];
  meta: ListMeta;
}

const IDENTIFIER = /^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?$/;

/** Column names are interpolated into SQL: they come from code, and this makes sure of it. */
function identifiers(names: readonly string[]): readonly string[] {
  for (const name of names) if (!IDENTIFIER.test(name)) throw new Error(`not an SQL identifier: ${name}`);
  return names;
}

/** The given writable values, in a fixed order, skipping what the client left out. */
function pick(writable: readonly string[], values: Record<string, unknown>): [string[], unknown[]] {
  const names = writable.filter((name) => values[name] !== undefined);
  return [names, names.map((name) => values[name])];
}

/**
 * Data access for a tenant table with soft delete. Tenant scoping is RLS's job
 * (the caller's transaction carries the claims), so no statement here names
 * tenant_id; a row of another tenant is simply not found. Rules (uniqueness,
 * membership, archived instances, delete-while-referenced) are the database's:
 * their errors reach the client through db/pg-errors.ts.
 */
export function softDeleteTable<Row extends object = Record<string, unknown>>(spec: TableSpec) {
  const table = identifiers([spec.table])[0];
  const writable = identifiers(spec.writable);
  const filters = identifiers(spec.filters);
  const computed = spec.computed ?? {};
  identifiers(Object.keys(computed));
  const atLeast = spec.atLeast ?? {};
  identifiers(Object.keys(atLeast));
  // deleted_at is returned only by a list that includes deleted rows; computed fields as their expressions.
  const returning = identifiers(spec.columns.filter((column) => column !== "deleted_at"))
    .map((column) => (column in computed ? `${computed[column]} as ${column}` : column))
    .join(", ");
  const version = spec.computedVersion ? `xmin::text || coalesce('.' || ${spec.computedVersion}, '')` : "xmin::text";
  const withVersion = `${returning}, ${version} as _version`;
  const versioned = (found: (Row & { _version: string }) | undefined): Versioned<Row> | undefined => {
    if (!found) return undefined;
    const { _version: version, ...row } = found;
    return { row: row as unknown as Row, version };
  };
  /** `and xmin = any(...)` for an If-Match, as the next parameter. */
  const matching = (precondition: Precondition, next: number): [string, unknown[]] =>
    Array.isArray(precondition) ? [` and xmin = any($${next}::text[]::xid[])`, [precondition]] : ["", []];

  /**
   * The kept total's SQL when the list is filtered on its counted scope and
   * status alone (its parameters appended to `params`), else undefined.
   */
  const keptTotal = (
    names: string[],
    plain: boolean,
    options: ListOptions,
    given: Record<string, unknown>,
    params: unknown[],
  ): string | undefined => {
    const counted = spec.counted;
    if (!counted || !plain || !names.every((name) => name === counted.scope || name === counted.status)) return undefined;
    const argument = (name: string | undefined) => {
      if (name === undefined || given[name] === undefined) return "null";
      params.push(given[name]);
      return `$${params.length}`;
    };
    const scope = argument(counted.scope);
    const status = argument(counted.status);
    return `private.kept_total('${counted.list}', ${scope}::uuid, ${status}::text, ${options.include_deleted ? "true" : "false"})`;
  };
  const notNull = new Set(["id", "created_at", "updated_at", ...(spec.notNull ?? [])]);
  /** The list's order as the cursor needs it: each key's SQL over the row and whether it can be null. */
  const orderColumns = (options: ListOptions): OrderColumn[] =>
    orderKeys(options.sort).map((key) => ({
      key,
      sql: key.column in computed ? (computed[key.column] as string) : key.column,
      nullable: !notNull.has(key.column),
    }));

  return {
    async get(sql: Sql, id: string): Promise<Versioned<Row> | undefined> {
      return versioned(
        await sql.one<Row & { _version: string }>(`select ${withVersion} from ${table} where id = $1 and deleted_at is null`, [
          id,
        ]),
      );
    },

    /** Whether a live row with this id exists in the tenant (to tell a failed If-Match from a missing record). */
    async exists(sql: Sql, id: string): Promise<boolean> {
      return (await sql.one(`select from ${table} where id = $1 and deleted_at is null`, [id])) !== undefined;
    },

    async list(sql: Sql, given: Record<string, unknown>, options: ListOptions): Promise<Page<Row>> {
      const [names, params] = pick(filters, given);
      const [bounds, minimums] = pick(Object.keys(atLeast), given);
      const where = names.map((name, i) => `${name} = $${i + 1}`);
      for (const [i, bound] of bounds.entries()) where.push(`${atLeast[bound]} >= $${params.length + i + 1}`);
      const sync = syncConditions(options, "", params.length + minimums.length + 1);
      const all: unknown[] = [...params, ...minimums, ...sync.params];
      const kept = keptTotal(names, bounds.length === 0 && options.updated_since === undefined, options, given, all);
      // Counted before the cursor's condition joins them: the total is of the whole list.
      const total = kept ?? `(select count(*) from ${table} where ${allOf([...sync.where, ...where])})`;
      const order = orderColumns(options);
      if (options.after !== undefined) {
        const after = afterCondition(options.after, order, all.length + 1, options.offset);
        where.push(after.condition);
        all.push(...after.params);
      }
      const page = await listPage<Row>(sql, {
        columns: options.include_deleted ? `${returning}, deleted_at` : returning,
        from: table as string,
        where: [...sync.where, ...where],
        params: all,
        orderBy: orderBy(options.sort),
        limit: options.limit,
        offset: options.offset,
        total,
        keyOf: spec.counted ? cursorValues(order) : undefined,
      });
      if (spec.counted) page.meta.next = page.lastKey === undefined ? null : cursorOf(order, page.lastKey);
      return { rows: page.rows, meta: page.meta };
    },

    async insert(sql: Sql, values: Record<string, unknown>): Promise<Versioned<Row>> {
      const [names, params] = pick(writable, values);
      const placeholders = params.map((_, i) => `$${i + 1}`).join(", ");
      const row = await sql.one<Row & { _version: string }>(
        `insert into ${table} (${names.join(", ")}) values (${placeholders}) returning ${withVersion}`,
        params,
      );
      return versioned(row) as Versioned<Row>;
    },

    /**
     * The updated row, or undefined when there is no live row with this id in
     * the tenant or (with `precondition`) its version is not one of those given.
     * The version is checked in the update's own WHERE, so a write that came in
     * between makes it match nothing rather than be lost.
     */
    async update(
      sql: Sql,
      id: string,
      values: Record<string, unknown>,
      precondition?: Precondition,
    ): Promise<Versioned<Row> | undefined> {
      const [names, params] = pick(writable, values);
      // An empty change still goes through the triggers (archived instance, moves), like any write.
      const set = names.length > 0 ? names.map((name, i) => `${name} = $${i + 2}`).join(", ") : "updated_at = now()";
      const [condition, extra] = matching(precondition, params.length + 2);
      return versioned(
        await sql.one<Row & { _version: string }>(
          `update ${table} set ${set} where id = $1 and deleted_at is null${condition} returning ${withVersion}`,
          [id, ...params, ...extra],
        ),
      );
    },

    /** Whether a live row was deleted (`precondition` as for update); a row still referenced makes the database refuse (409). */
    async softDelete(sql: Sql, id: string, precondition?: Precondition): Promise<boolean> {
      const [condition, extra] = matching(precondition, 2);
      const rows = await sql.query(
        `update ${table} set deleted_at = now() where id = $1 and deleted_at is null${condition} returning id`,
        [id, ...extra],
      );
      return rows.length === 1;
    },
  };
}

export type SoftDeleteTable<Row extends object> = ReturnType<typeof softDeleteTable<Row>>;
