import type { Sql } from "../db/database.ts";
import { COLUMNS, JOINS, listConditions, type ParticipantRow } from "../participants/data.ts";
import type { CreateInput, ListFilters } from "../participants/schemas.ts";

/**
 * Set-based data access for many participants at once: what a batch refers
 * to is read in three statements whatever its size, and rows are written by
 * one multi-row insert per chunk. RLS scopes every statement to the caller's
 * tenant, so another tenant's instances, groups, blocks and rooms are simply
 * not found; the participant triggers and foreign keys still check each row.
 */

export type StructureKind = "supergroup" | "subgroup" | "block" | "room";

/** A supergroup, subgroup, block or room, as far as participant rules need it. */
export interface StructureRecord {
  kind: StructureKind;
  id: string;
  instance_id: string;
  /** A subgroup's supergroup, a room's block. */
  parent_id: string | null;
  /** The name; for a room its number, which is what is unique (per block). */
  name: string;
  /** A room's name. */
  label: string | null;
}

export interface InstanceRecord {
  id: string;
  status: string;
}

/** Live instances of the tenant among these ids. */
export async function findInstances(sql: Sql, ids: string[]): Promise<InstanceRecord[]> {
  return sql.query<InstanceRecord>("select id, status from public.instances where id = any($1::uuid[]) and deleted_at is null", [
    ids,
  ]);
}

/**
 * Live structure records with one of these ids, plus every one of the
 * instances in `whole` (for references by name). One statement for all four
 * tables.
 */
export async function findStructure(sql: Sql, ids: string[], whole: string[]): Promise<StructureRecord[]> {
  const where = "deleted_at is null and (id = any($1::uuid[]) or instance_id = any($2::uuid[]))";
  return sql.query<StructureRecord>(
    `select 'supergroup' as kind, id, instance_id, null::uuid as parent_id, name, null as label from public.supergroups where ${where}
     union all
     select 'subgroup', id, instance_id, parent_supergroup_id, name, null from public.subgroups where ${where}
     union all
     select 'block', id, instance_id, null, name, null from public.blocks where ${where}
     union all
     select 'room', id, instance_id, block_id, room_number, name from public.rooms where ${where}`,
    [ids, whole],
  );
}

/**
 * The (instance_id, user_id) pairs among these that a live participant already
 * holds: one statement per instance (a batch rarely spans more than one), each
 * a lookup of the unique index (instance_id, user_id). Written without a join
 * on purpose: statements are prepared, and a generic plan for a join against
 * unnest(...) may scan the tenant's participants once per batch row when the
 * table's statistics lag behind a bulk load.
 */
export async function takenUserIds(sql: Sql, pairs: Array<{ instance_id: string; user_id: string }>) {
  const byInstance = new Map<string, string[]>();
  for (const { instance_id, user_id } of pairs) {
    const list = byInstance.get(instance_id);
    if (list) list.push(user_id);
    else byInstance.set(instance_id, [user_id]);
  }
  const taken: Array<{ instance_id: string; user_id: string }> = [];
  for (const [instanceId, userIds] of byInstance) {
    const rows = await sql.query<{ user_id: string }>(
      `select p.user_id from public.participants p
       where p.instance_id = $1 and p.user_id = any($2::text[]) and p.deleted_at is null`,
      [instanceId, userIds],
    );
    for (const { user_id } of rows) taken.push({ instance_id: instanceId, user_id });
  }
  return taken;
}

/** Each writable column and its type in the recordset the insert reads. */
const RECORD_TYPES: Record<string, "uuid" | "date" | "text"> = {
  id: "uuid",
  instance_id: "uuid",
  user_id: "text",
  first_name: "text",
  surname: "text",
  full_name: "text",
  gender: "text",
  pronouns: "text",
  status: "text",
  date_of_birth: "date",
  school_year: "text",
  rank: "text",
  unit_name: "text",
  school_institute: "text",
  arrival_date: "date",
  departure_date: "date",
  super_group_id: "uuid",
  sub_group_id: "uuid",
  block_id: "uuid",
  room_id: "uuid",
  room_number: "text",
  photo_link: "text",
};
const RECORD_COLUMNS = Object.keys(RECORD_TYPES);
const RECORDSET = RECORD_COLUMNS.map((c) => `${c} ${RECORD_TYPES[c]}`).join(", ");
// insert … select cannot ask for a column default, so status gets its default ('active') here.
const SELECT_LIST = RECORD_COLUMNS.map((c) => (c === "status" ? "coalesce(r.status, 'active')" : `r.${c}`)).join(", ");

export type NewParticipant = CreateInput & { id: string };

/**
 * One statement for the whole chunk: the rows travel as one JSON parameter and
 * are inserted from jsonb_to_recordset; the triggers run for each row as for a
 * single create. Returns the created rows (in id order, which is row order:
 * see orderedIds), or only their number when `returnRows` is false.
 */
export async function insertParticipants(
  sql: Sql,
  rows: NewParticipant[],
  returnRows: boolean,
): Promise<ParticipantRow[] | number> {
  const insert = `insert into public.participants (${RECORD_COLUMNS.join(", ")})
    select ${SELECT_LIST} from jsonb_to_recordset($1::jsonb) as r(${RECORDSET})`;
  if (!returnRows) {
    const [row] = await sql.query<{ n: number }>(`with p as (${insert} returning 1) select count(*) as n from p`, [
      JSON.stringify(rows),
    ]);
    return row?.n ?? 0;
  }
  return sql.query<ParticipantRow>(`with p as (${insert} returning *) select ${COLUMNS} from p ${JOINS} order by p.id`, [
    JSON.stringify(rows),
  ]);
}

export type ExportFilters = Omit<ListFilters, "limit" | "offset">;
export type ExportRow = ParticipantRow & { cursor_at: string };

/** Where the previous page ended: its last row's created_at (as Postgres wrote it, to the microsecond) and id. */
export interface PageCursor {
  at: string;
  id: string;
}

/**
 * One page of the list's rows after `after`, in (created_at, id) order: keyset
 * paging, so each page is one short indexed read in a transaction of its own,
 * and no row is repeated or skipped however long the export takes.
 */
export async function exportPage(sql: Sql, filters: ExportFilters, after: PageCursor | undefined, size: number) {
  const { where, params } = listConditions(filters);
  if (after) {
    params.push(after.at, after.id);
    where.push(`(p.created_at, p.id) > ($${params.length - 1}::timestamptz, $${params.length}::uuid)`);
  }
  params.push(size);
  // The page is cut before the joins, as in the list: names are looked up for its rows only.
  return sql.query<ExportRow>(
    `select ${COLUMNS}, p.created_at::text as cursor_at
     from (
       select * from public.participants p where ${where.join(" and ")}
       order by p.created_at, p.id limit $${params.length}
     ) p
     ${JOINS}
     order by p.created_at, p.id`,
    params,
  );
}
