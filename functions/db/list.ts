import type { Sql } from "./sql.ts";

/** Pagination figures every list response carries. */
export interface ListMeta {
  total: number;
  limit: number;
  offset: number;
  /** Lists that page by cursor: the cursor of the page's last row, null on the last page. */
  next?: string | null;
}

export interface ListQuery {
  /** The select list, e.g. `p.id, p.name`. */
  columns: string;
  /** `from` and joins, e.g. `public.blocks b`. */
  from: string;
  /** Conditions joined with `and` (RLS adds the tenant; never add it here). */
  where: string[];
  params: unknown[];
  /** Deterministic order; the default suits every table with (created_at, id) indexes. */
  orderBy: string;
  limit: number;
  offset: number;
  /**
   * The total's SQL when the database keeps it (private.kept_total), instead
   * of counting the rows `where` matches.
   */
  total?: string;
  /** SQL of a row's cursor values (resources/cursor.ts), to answer the page's last key with. */
  keyOf?: string;
}

/**
 * Conditions as one SQL boolean: joined with `and`, or `true` when there is
 * none, so that `where ${allOf(…)}` is valid SQL whatever the filters (a list
 * with every filter optional, `include_deleted=true` included, may have none).
 */
export const allOf = (conditions: readonly string[]): string => (conditions.length > 0 ? conditions.join(" and ") : "true");

/**
 * One page of a list and the total, in one statement: the count (or the
 * kept total), then the page in a lateral subquery beside it, so an empty
 * page (an offset past the end) still brings the total. The order is
 * deterministic ((created_at, id) by default), so pages never repeat or skip
 * rows. With `keyOf`, one row more is read, to tell whether another page
 * follows; `lastKey` is then the last row's key values.
 */
export async function listPage<R extends object>(
  sql: Sql,
  q: ListQuery,
): Promise<{ rows: R[]; meta: ListMeta; lastKey?: string }> {
  const where = `where ${allOf(q.where)}`;
  const n = q.params.length;
  const total = q.total ?? `(select count(*) from ${q.from} ${where})`;
  const read = q.keyOf ? q.limit + 1 : q.limit;
  const found = await sql.query<R & Counted>(
    `select c._total, p.* from (select ${total} as _total) c
     left join lateral (
       select true as _on_page, ${q.keyOf ? `${q.keyOf} as _key, ` : ""}${q.columns}
       from ${q.from} ${where} order by ${q.orderBy} limit $${n + 1} offset $${n + 2}
     ) p on true`,
    [...q.params, read, q.offset],
  );
  const onPage = found.filter((row) => row._on_page);
  const more = onPage.length > q.limit;
  const rows = onPage.slice(0, q.limit).map(({ _total, _on_page, _key, ...row }) => row as unknown as R);
  const meta = { total: Number(found[0]?._total ?? 0), limit: q.limit, offset: q.offset };
  return { rows, meta, lastKey: more ? onPage[q.limit - 1]?._key : undefined };
}

/** The columns listPage adds to each row. */
interface Counted {
  _total: number;
  _on_page: boolean | null;
  _key?: string;
}
