import { allOf } from "../db/list.ts";
import type { Sql } from "../db/sql.ts";
import { isoTimestamp, JOINS, listConditions, PARTICIPANT_JSON_JOINED } from "../participants/data.ts";
import { FIELD_NAMES, type FieldName, NAME_FIELDS, PARTICIPANT_FIELDS, type SqlKind } from "../participants/fields.ts";
import type { CreateInput, ListFilters } from "../participants/schemas.ts";
import { CARE_COLUMNS } from "./care-columns.ts";

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
 * single create. Returns the created participants as the API writes them, a
 * JSON array in id order, which is row order (see orderedIds), or only their
 * number when `returnRows` is false.
 */
export async function insertParticipants(
  sql: Sql,
  rows: NewParticipant[],
  returnRows: boolean,
): Promise<{ json: string; count: number } | number> {
  const insert = `insert into public.participants (${RECORD_COLUMNS.join(", ")})
    select ${SELECT_LIST} from jsonb_to_recordset($1::jsonb) as r(${RECORDSET})`;
  if (!returnRows) {
    const [row] = await sql.query<{ n: number }>(`with p as (${insert} returning 1) select count(*) as n from p`, [
      JSON.stringify(rows),
    ]);
    return row?.n ?? 0;
  }
  const [row] = await sql.query<{ json: string; count: number }>(
    `with p as (${insert} returning *)
     select coalesce(json_agg(${PARTICIPANT_JSON_JOINED} order by p.id), '[]')::text as json, count(*) as count
     from p ${JOINS}`,
    [JSON.stringify(rows)],
  );
  return row ?? { json: "[]", count: 0 };
}

export type ExportFilters = Omit<ListFilters, "limit" | "offset">;

/** A row's place in list order: its created_at (as Postgres wrote it, to the microsecond) and id. */
export interface PageCursor {
  at: string;
  id: string;
}

/** The list's conditions and, for a page of the export, its keyset bounds: after `after`, up to `through`. */
function pageConditions(filters: ExportFilters, after?: PageCursor, through?: PageCursor) {
  const { where, params } = listConditions(filters);
  const key = (cursor: PageCursor) => {
    params.push(cursor.at, cursor.id);
    return `($${params.length - 1}::timestamptz, $${params.length}::uuid)`;
  };
  if (after) where.push(`(p.created_at, p.id) > ${key(after)}`);
  if (through) where.push(`(p.created_at, p.id) <= ${key(through)}`);
  return { conditions: allOf(where), params: params as string[] };
}

/**
 * Where the export's next page ends: the key of the `size`-th row after
 * `after`, in list order; undefined when fewer rows remain (the last page).
 * An index read of at most `size` keys.
 */
export async function exportPageEnd(
  sql: Sql,
  filters: ExportFilters,
  after: PageCursor | undefined,
  size: number,
): Promise<PageCursor | undefined> {
  const { conditions, params } = pageConditions(filters, after);
  return sql.one<PageCursor>(
    `select p.created_at::text as at, p.id from public.participants p where ${conditions}
     order by p.created_at, p.id offset $${params.length + 1} limit 1`,
    [...params, size - 1],
  );
}

/** Every exported column, in order: the participant's fields, then the names of what it points at. */
export const EXPORT_COLUMNS = [...FIELD_NAMES, ...NAME_FIELDS] as const;

/**
 * Text a spreadsheet would run as a formula (a cell starting with =, +, -,
 * @, tab or CR, or the full-width = + - @) gets a leading ', so that it
 * shows as text: the rule of csv-stringify's escape_formulas.
 */
const neutralised = (column: string) =>
  `case when left(${column}, 1) in ('=', '+', '-', '@', chr(9), chr(13), '\uFF1D', '\uFF0B', '\uFF0D', '\uFF20') ` +
  `then '''' || ${column} else ${column} end`;
/** Dates as YYYY-MM-DD whatever the session's DateStyle; timestamps as the API writes them. */
const isoDate = (column: string) => `to_char(${column}, 'YYYY-MM-DD')`;

/** A field of `p` as its CSV text: the client's own words neutralised, the rest converted. */
function csvText(name: FieldName): string {
  const column = `p.${name}`;
  const kind: SqlKind = PARTICIPANT_FIELDS[name].sql;
  if (kind === "uuid") return `${column}::text`;
  if (kind === "date") return isoDate(column);
  if (kind === "timestamp") return isoTimestamp(column);
  return kind === "text" ? neutralised(column) : column;
}

/** Each name from its table in JOINS. */
const NAME_ALIASES = { supergroup_name: "sg", subgroup_name: "sub", block_name: "b", room_name: "r" } as const;

/** Each exported column as text. */
const EXPORT_VALUES: Record<(typeof EXPORT_COLUMNS)[number], string> = {
  ...(Object.fromEntries(FIELD_NAMES.map((name) => [name, csvText(name)])) as Record<FieldName, string>),
  ...(Object.fromEntries(NAME_FIELDS.map((name) => [name, neutralised(`${NAME_ALIASES[name]}.name`)])) as Record<
    (typeof NAME_FIELDS)[number],
    string
  >),
};

/**
 * A CSV field (RFC 4180) from a text column: in quotes, its quotes doubled,
 * when it holds a comma, a quote or a line break; empty for null.
 */
const csvField = (column: string) =>
  `case when ${column} ~ '[",\\r\\n]' then '"' || replace(${column}, '"', '""') || '"' else coalesce(${column}, '') end`;
const EXPORT_TEXT = EXPORT_COLUMNS.map((c) => `${EXPORT_VALUES[c]} as ${c}`).join(",\n  ");
const CSV_LINE = EXPORT_COLUMNS.map((c) => csvField(`v.${c}`)).join(" || ',' ||\n  ");
/**
 * The safeguarding columns, on request, from the care door that reads them
 * (private.care_export_cells: care access or 403, each read recorded), in the
 * order of CARE_COLUMNS, neutralised like every cell of the client's words.
 */
const CARE_TEXT = ", private.care_export_cells(p.id) as care";
const CARE_LINE = CARE_COLUMNS.map((_, i) => csvField(neutralised(`v.care[${i + 1}]`))).join(" || ',' ||\n  ");

/**
 * Lines per piece of a page: a piece is a few tens of kB, and none is held
 * longer than it takes to pass it on (see exportPageCsv).
 */
const LINES_PER_PIECE = 100;

/**
 * One page of the export as CSV lines, each ending in CRLF, written by
 * Postgres: the list's rows after `after` up to and including `through` (to
 * the end without it), in list order, handed to `onPiece` LINES_PER_PIECE
 * lines at a time as they arrive. The server thus holds a piece of text at a
 * time, where it used to hold a page of row objects, a string per field:
 * garbage that grew with the export and that V8 freed only with a full
 * collection (the figures: bench/README.md, "Figures behind the code's comments").
 */
export async function exportPageCsv(
  sql: Sql,
  filters: ExportFilters,
  page: { after?: PageCursor; through?: PageCursor; withCare?: boolean },
  onPiece: (csv: string) => void,
): Promise<void> {
  const { conditions, params } = pageConditions(filters, page.after, page.through);
  const line = page.withCare ? `${CSV_LINE} || ',' ||\n  ${CARE_LINE}` : CSV_LINE;
  await sql.each<{ csv: string }>(
    `select string_agg(${line} || E'\\r\\n', '' order by v.n) as csv
     from (
       select ${EXPORT_TEXT}${page.withCare ? CARE_TEXT : ""}, row_number() over (order by p.created_at, p.id) - 1 as n
       from (select * from public.participants p where ${conditions}) p
       ${JOINS}
     ) v
     group by v.n / ${LINES_PER_PIECE}
     order by v.n / ${LINES_PER_PIECE}`,
    params,
    (piece) => onPiece(piece.csv),
  );
}

/** A live participant an upsert may update: its id and writable fields as the create schema reads them. */
export type ExistingParticipant = CreateInput & { id: string };

/** Every writable field as its text (dates as YYYY-MM-DD), so that a stored row compares with a file's cells. */
const EXISTING_FIELDS = RECORD_COLUMNS.map((c) => (RECORD_TYPES[c] === "text" ? `p.${c}` : `p.${c}::text as ${c}`)).join(", ");

/** The instance's live participants holding one of these user_ids: one lookup of the unique index per value. */
export async function existingParticipants(sql: Sql, instanceId: string, userIds: string[]): Promise<ExistingParticipant[]> {
  return sql.query<ExistingParticipant>(
    `select ${EXISTING_FIELDS} from public.participants p
     where p.instance_id = $1 and p.user_id = any($2::text[]) and p.deleted_at is null`,
    [instanceId, userIds],
  );
}

/** Columns an upsert may change (the instance and id stay). */
const UPDATABLE = RECORD_COLUMNS.filter((c) => c !== "id" && c !== "instance_id");

/**
 * The changed fields of many participants in one statement: each row's
 * `changes` holds only what changes, and every other column keeps its value
 * (so the audit trail and the events see exactly those changes). Returns how
 * many rows were updated.
 */
export async function updateParticipants(
  sql: Sql,
  rows: Array<{ id: string; changes: Record<string, unknown> }>,
): Promise<number> {
  if (rows.length === 0) return 0;
  const sets = UPDATABLE.map(
    (c) => `${c} = case when u.changes ? '${c}' then (u.changes ->> '${c}')::${RECORD_TYPES[c]} else p.${c} end`,
  ).join(",\n      ");
  const [row] = await sql.query<{ n: number }>(
    `with u as (
       update public.participants p set
      ${sets}
       from jsonb_to_recordset($1::jsonb) as u(id uuid, changes jsonb)
       where p.id = u.id and p.deleted_at is null
       returning 1)
     select count(*)::int as n from u`,
    [JSON.stringify(rows)],
  );
  return row?.n ?? 0;
}

/** A room an import puts participants into: where it is, its places, and who is there now. */
export interface RoomPlaces {
  room_id: string;
  room_number: string;
  block_name: string;
  capacity: number | null;
  occupancy: number;
}

export async function roomPlaces(sql: Sql, roomIds: string[]): Promise<RoomPlaces[]> {
  if (roomIds.length === 0) return [];
  return sql.query<RoomPlaces>(
    `select r.id as room_id, r.room_number, b.name as block_name, r.capacity,
            (select count(*) from public.participants p where p.room_id = r.id and p.deleted_at is null)::int as occupancy
     from public.rooms r join public.blocks b on b.id = r.block_id
     where r.id = any($1::uuid[]) and r.deleted_at is null and r.capacity is not null`,
    [roomIds],
  );
}

/** The caller's care access (none, read or write) as the care doors judge it: the user's, narrowed by the key's scopes. */
export async function careAccess(sql: Sql): Promise<"none" | "read" | "write"> {
  const row = await sql.one<{ access: "none" | "read" | "write" }>("select private.care_access() as access");
  return row?.access ?? "none";
}
