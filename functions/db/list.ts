import type { Sql } from "./sql.ts";

/** Pagination figures every list response carries. */
export interface ListMeta {
  total: number;
  limit: number;
  offset: number;
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
}

/**
 * Conditions as one SQL boolean: joined with `and`, or `true` when there is
 * none, so that `where ${allOf(…)}` is valid SQL whatever the filters (a list
 * with every filter optional, `include_deleted=true` included, may have none).
 */
export const allOf = (conditions: readonly string[]): string => (conditions.length > 0 ? conditions.join(" and ") : "true");

/**
 * One page of a list and the total, in one statement: the count, then the
 * page in a lateral subquery beside it, so an empty page (an offset past the
 * end) still brings the total. The order is deterministic ((created_at, id)
 * by default), so pages never repeat or skip rows.
 */
export async function listPage<R extends object>(sql: Sql, q: ListQuery): Promise<{ rows: R[]; meta: ListMeta }> {
  const where = `where ${allOf(q.where)}`;
  const n = q.params.length;
  const found = await sql.query<R & Counted>(
    `select c._total, p.* from (select count(*) as _total from ${q.from} ${where}) c
     left join lateral (
       select true as _on_page, ${q.columns} from ${q.from} ${where} order by ${q.orderBy} limit $${n + 1} offset $${n + 2}
     ) p on true`,
    [...q.params, q.limit, q.offset],
  );
  const rows = found.filter((row) => row._on_page).map(({ _total, _on_page, ...row }) => row as unknown as R);
  return { rows, meta: { total: found[0]?._total ?? 0, limit: q.limit, offset: q.offset } };
}

/** The columns listPage adds to each row. */
interface Counted {
  _total: number;
  _on_page: boolean | null;
}
