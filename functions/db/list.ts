import type { ListMeta } from "../http/envelope.ts";
import type { Sql } from "./database.ts";

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
 * One page of a list and the total: two statements, the count first (it can
 * use an index-only scan) and the page in (created_at, id) order so pages never
 * repeat or skip rows.
 */
export async function listPage<R extends object>(sql: Sql, q: ListQuery): Promise<{ rows: R[]; meta: ListMeta }> {
  const where = q.where.length > 0 ? `where ${q.where.join(" and ")}` : "";
  const n = q.params.length;
  const [count] = await sql.query<{ total: number }>(`select count(*) as total from ${q.from} ${where}`, q.params);
  const rows = await sql.query<R>(
    `select ${q.columns} from ${q.from} ${where} order by ${q.orderBy} limit $${n + 1} offset $${n + 2}`,
    [...q.params, q.limit, q.offset],
  );
  return { rows, meta: { total: count?.total ?? 0, limit: q.limit, offset: q.offset } };
}
