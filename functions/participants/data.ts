import { allOf, type ListMeta } from "../db/list.ts";
import type { Sql } from "../db/sql.ts";
import type { Precondition } from "../http/etag.ts";
import { afterCondition, cursorOf, cursorValues, type OrderColumn } from "../resources/cursor.ts";
import { orderBy, orderKeys } from "../resources/listing.ts";
import { OVERRIDE_CAPACITY_FROM } from "../rooms/capacity.ts";
import { FIELD_NAMES, type FieldName, NAME_FIELDS, PARTICIPANT_FIELDS, type SqlKind } from "./fields.ts";
import { type CreateInput, type ListFilters, type UpdateInput, WRITABLE_FIELDS, type WritableField } from "./schemas.ts";

/**
 * Participant data access. Every statement runs inside the request's tenant
 * scope: RLS limits it to the caller's tenant, the trigger and the composite
 * foreign keys of sql/migrations/*_participants.sql hold the rules.
 */

/** A timestamp as JavaScript's toISOString writes it (ISO 8601, UTC, milliseconds), whatever the session's settings. */
export const isoTimestamp = (column: string) => `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** The four names a participant carries, as SQL expressions over `p`. */
type NameExpressions = readonly [supergroup: string, subgroup: string, block: string, room: string];

/**
 * The names by primary key, one lookup per row, right whatever the rows'
 * instances. Joined instead, the page's 50 rows were hashed against every
 * group and block of the tenant, a cost that grows with the tenant.
 */
const NAMES_BY_ID: NameExpressions = [
  "(select sg.name from public.supergroups sg where sg.id = p.super_group_id)",
  "(select sub.name from public.subgroups sub where sub.id = p.sub_group_id)",
  "(select b.name from public.blocks b where b.id = p.block_id)",
  "(select r.name from public.rooms r where r.id = p.room_id)",
];

/**
 * The names of a page whose rows are all in one instance (`instance` is its
 * placeholder): each table joined on (instance_id, id), so Postgres reads the
 * instance's few groups, blocks and rooms once each by the unique
 * (instance_id, id) index, where NAMES_BY_ID makes 200 index lookups for a
 * page of 50 (each a subplan that evaluates the table's policy again). The
 * composite foreign keys of the participants migration make (instance_id,
 * super_group_id) and the others point at exactly the row the id alone would.
 */
const namesOfInstance = (instance: string) => ({
  expressions: ["sg.name", "sub.name", "b.name", "r.name"] as NameExpressions,
  joins: `left join public.supergroups sg on sg.instance_id = ${instance} and sg.id = p.super_group_id
  left join public.subgroups sub on sub.instance_id = ${instance} and sub.id = p.sub_group_id
  left join public.blocks b on b.instance_id = ${instance} and b.id = p.block_id
  left join public.rooms r on r.instance_id = ${instance} and r.id = p.room_id`,
});

/**
 * A participant as the API writes it, written by Postgres for every response
 * that carries participants, so the server passes the JSON on without reading
 * a row or a field of it: its fields and the four names, each with the SQL
 * for its text. Every field of a participant is a JSON string or null (ids,
 * dates as YYYY-MM-DD, timestamps as JavaScript's toISOString writes them),
 * which is what lets json_object write it from two text arrays: it escapes
 * each value and looks up no types, where json_build_object looked up the
 * type of each of its arguments on every row. A field
 * that is not a string would need json_build_object again
 * (tests/participants-list.test.ts fails when the Participant schema gets one).
 */
function participantJson(names: NameExpressions, options: { deletedAt?: boolean } = {}): string {
  const fields: Array<[key: string, text: string]> = [
    ...FIELD_NAMES.map((name): [string, string] => [name, jsonText(name)]),
    ...NAME_FIELDS.map((name, i): [string, string] => [name, names[i] as string]),
    ...(options.deletedAt ? [["deleted_at", isoTimestamp("p.deleted_at")] as [string, string]] : []),
  ];
  const keys = fields.map(([key]) => key).join(",");
  return `json_object('{${keys}}'::text[], array[${fields.map(([, text]) => text).join(", ")}])`;
}

/** A field of `p` as the text its JSON value is. */
function jsonText(name: FieldName): string {
  const kind: SqlKind = PARTICIPANT_FIELDS[name].sql;
  if (kind === "uuid" || kind === "date") return `p.${name}::text`;
  if (kind === "timestamp") return isoTimestamp(`p.${name}`);
  return `p.${name}`;
}

/**
 * A participant over `p` as the API writes it, names looked up by id: what
 * get, create and update answer with (a list page and a bulk create write
 * their participants with the same participantJson, names read otherwise).
 */
export const PARTICIPANT_JSON = participantJson(NAMES_BY_ID);

/** The names joined by primary key, for statements over many rows of any instances (CSV export, bulk create). */
export const JOINS = `left join public.supergroups sg on sg.id = p.super_group_id
  left join public.subgroups sub on sub.id = p.sub_group_id
  left join public.blocks b on b.id = p.block_id
  left join public.rooms r on r.id = p.room_id`;

/**
 * PARTICIPANT_JSON with its names from JOINS, for many rows of any instances
 * (bulk create): Postgres joins the names once for the whole set where
 * PARTICIPANT_JSON makes four lookups per row.
 */
export const PARTICIPANT_JSON_JOINED = participantJson(["sg.name", "sub.name", "b.name", "r.name"]);

/** Columns to write and the SQL expression for each, with the parameters they use. */
interface Assignments {
  columns: string[];
  expressions: string[];
  params: unknown[];
}

/**
 * What a write sets: each field the client sent, plus the fields filled from a
 * reference when the client sent the reference without them — super_group_id
 * from the subgroup, block_id and room_number from the room. The filling is
 * part of the write statement itself (functions of the *_participant_access
 * migration), so it reads the rows the write's triggers then lock and check;
 * a missing instance, subgroup or room is reported by those functions, on the
 * field sent.
 * `instance` is the SQL for the participant's current instance (updates only).
 */
function assignments(input: Partial<Record<WritableField, unknown>>, firstParam: number, instance: string): Assignments {
  const out: Assignments = { columns: [], expressions: [], params: [] };
  const sent = (field: WritableField) => input[field] !== undefined;
  const placeholders = new Map<WritableField, string>();
  for (const field of WRITABLE_FIELDS) {
    if (!sent(field)) continue;
    out.params.push(input[field]);
    const placeholder = `$${firstParam + out.params.length - 1}`;
    placeholders.set(field, placeholder);
    out.columns.push(field);
    out.expressions.push(placeholder);
  }
  const fill = (column: WritableField, expression: string) => {
    out.columns.push(column);
    out.expressions.push(expression);
  };
  // The instance the participant has after the write: the one sent, else its current one.
  const inInstance = `${placeholders.get("instance_id") ?? instance}::uuid`;
  const sub = placeholders.get("sub_group_id");
  if (sub && input.sub_group_id !== null && !sent("super_group_id")) {
    fill("super_group_id", `private.supergroup_of_subgroup(${sub}::uuid, ${inInstance})`);
  }
  const room = placeholders.get("room_id");
  const roomRow = `private.room_in_instance(${room}::uuid, ${inInstance})`;
  if (room && input.room_id !== null && !sent("block_id")) fill("block_id", `(${roomRow}).block_id`);
  // The room number follows the room unless the client sent its own; clearing the room clears it.
  if (room && !sent("room_number")) fill("room_number", `(${roomRow}).room_number`);
  return out;
}

/** A participant as the API writes it (JSON, from Postgres) with its row version, for its ETag. */
export interface ParticipantJson {
  json: string;
  version: string;
}

/** `and t.xmin = any(...)` for an If-Match, as parameter `next`. */
function matching(precondition: Precondition, next: number): [string, unknown[]] {
  return Array.isArray(precondition) ? [` and t.xmin = any($${next}::text[]::xid[])`, [precondition]] : ["", []];
}

/** How a write places the participant: `overrideCapacity` lets an admin fill a room over its capacity. */
export interface WriteOptions {
  overrideCapacity?: boolean;
}

/** Creates the participant; returns it as the API writes it. */
export async function createParticipant(sql: Sql, input: CreateInput, options: WriteOptions = {}): Promise<ParticipantJson> {
  const a = assignments(input, 1, "null");
  const values = options.overrideCapacity
    ? `select ${a.expressions.join(", ")} from ${OVERRIDE_CAPACITY_FROM}`
    : `values (${a.expressions.join(", ")})`;
  const row = await sql.one<ParticipantJson>(
    `with p as (
       insert into public.participants (${a.columns.join(", ")}) ${values}
       returning *, xmin::text as _version
     )
     select ${PARTICIPANT_JSON}::text as json, p._version as version from p`,
    a.params,
  );
  return row as ParticipantJson;
}

/**
 * The live participant with this id as the API writes it, or undefined (also
 * for another tenant's id).
 */
export async function getParticipant(sql: Sql, id: string): Promise<ParticipantJson | undefined> {
  return sql.one<ParticipantJson>(
    `select ${PARTICIPANT_JSON}::text as json, p.xmin::text as version
     from public.participants p where p.id = $1 and p.deleted_at is null`,
    [id],
  );
}

/** Whether a live participant with this id exists in the tenant (to tell a failed If-Match from a missing one). */
export async function participantExists(sql: Sql, id: string): Promise<boolean> {
  return (await sql.one("select from public.participants where id = $1 and deleted_at is null", [id])) !== undefined;
}

/**
 * Changes the fields the client sent; returns the participant as the API
 * writes it, or undefined when there is no live participant with this id or
 * (with `precondition`) its version is not one of those given, checked in the
 * update's own WHERE so that a write in between is never lost.
 */
export async function updateParticipant(
  sql: Sql,
  id: string,
  input: UpdateInput,
  precondition?: Precondition,
  options: WriteOptions = {},
): Promise<ParticipantJson | undefined> {
  const a = assignments(input, 2, "t.instance_id");
  const set = a.columns.map((column, i) => `${column} = ${a.expressions[i]}`).join(", ");
  const [condition, extra] = matching(precondition, a.params.length + 2);
  const from = options.overrideCapacity ? ` from ${OVERRIDE_CAPACITY_FROM}` : "";
  return sql.one<ParticipantJson>(
    `with p as (
       update public.participants t set ${set}${from} where t.id = $1 and t.deleted_at is null${condition}
       returning t.*, t.xmin::text as _version
     )
     select ${PARTICIPANT_JSON}::text as json, p._version as version from p`,
    [id, ...a.params, ...extra],
  );
}

/** Soft delete; false when there is no live participant with this id (or `precondition` fails, as for update). */
export async function deleteParticipant(sql: Sql, id: string, precondition?: Precondition): Promise<boolean> {
  const [condition, extra] = matching(precondition, 2);
  const rows = await sql.query(
    `update public.participants t set deleted_at = now() where t.id = $1 and t.deleted_at is null${condition} returning t.id`,
    [id, ...extra],
  );
  return rows.length === 1;
}

/** Filters that are plain equality on a participant column. */
const EQUALITY_FILTERS = ["instance_id", "status", "super_group_id", "sub_group_id", "block_id", "room_id"] as const;

/**
 * The ids `q` finds: the live participants from an index (trigrams for a
 * term of three letters or more, letters and pairs for a shorter one:
 * *_short_search.sql), and with include_deleted the deleted ones too, which
 * the partial indexes do not hold.
 */
const searchIds = (term: string, includeDeleted: boolean | undefined) =>
  `select id from private.search_participant_ids(${term}) as s(id)` +
  (includeDeleted ? ` union all select id from private.search_deleted_participant_ids(${term}) as d(id)` : "");

/**
 * The list's conditions on `p`, also used by the CSV export.
 *
 * `q` goes through private.search_participant_ids, where an index can serve
 * it (under RLS it could not: see the function in the *_participants
 * migration); with `found`, the conditions name a CTE `found` of those ids
 * instead, which the caller defines once (the search then runs once for a
 * page and its total).
 */
export function listConditions(
  filters: Omit<ListFilters, "limit" | "offset" | "sort" | "updated_since" | "include_deleted" | "severe_allergy"> &
    Partial<Pick<ListFilters, "updated_since" | "include_deleted" | "severe_allergy">>,
  options: { found?: boolean } = {},
): {
  where: string[];
  params: unknown[];
  /** The placeholder of the instance filter, when there is one. */
  instance?: string;
  /** The query of the ids `q` finds, to define the `found` CTE with, when `found` was asked for. */
  search?: string;
} {
  const where = filters.include_deleted ? [] : ["p.deleted_at is null"];
  const params: unknown[] = [];
  let instance: string | undefined;
  for (const field of EQUALITY_FILTERS) {
    const value = filters[field];
    if (value === undefined) continue;
    params.push(value);
    const placeholder = `$${params.length}`;
    if (field === "instance_id") instance = placeholder;
    where.push(`p.${field} = ${placeholder}`);
  }
  let search: string | undefined;
  if (filters.q !== undefined) {
    params.push(filters.q);
    const term = `$${params.length}`;
    if (options.found) {
      search = searchIds(term, filters.include_deleted);
      where.push("p.id in (select id from found)");
    } else {
      where.push(`p.id in (select found.id from (${searchIds(term, filters.include_deleted)}) as found(id))`);
    }
  }
  if (filters.presence === "none") where.push("p.presence is null");
  else if (filters.presence !== undefined) {
    params.push(filters.presence);
    where.push(`p.presence = $${params.length}`);
  }
  if (filters.updated_since !== undefined) {
    params.push(filters.updated_since);
    where.push(`p.updated_at >= $${params.length}::timestamptz`);
  }
  // The care doors' set of ids (403 without care access), never the care record itself.
  if (filters.severe_allergy) where.push("p.id in (select private.severe_allergy_participants())");
  return { where, params, instance, search };
}

/** Query parameters a list may carry and still read its total from the kept counts. */
const COUNTED_BY = new Set(["instance_id", "status", "include_deleted", "limit", "offset", "sort", "after"]);

/** Participant columns that are never null: a cursor over these alone is a row comparison. */
const NOT_NULL = new Set([
  "id",
  "instance_id",
  "user_id",
  "first_name",
  "surname",
  "full_name",
  "status",
  "created_at",
  "updated_at",
]);

/** The list's order as the cursor needs it. */
const orderColumns = (filters: ListFilters): OrderColumn[] =>
  orderKeys(filters.sort).map((key) => ({ key, sql: `p.${key.column}`, nullable: !NOT_NULL.has(key.column) }));

/**
 * One page of participants, as the JSON array the response carries, their
 * total and the cursor of the page that follows, in one statement (one
 * round trip). Postgres writes the page's JSON, so the server passes it on
 * without reading a row or a field of it.
 * The page is cut before the names are looked up, so an offset skips rows
 * without looking up names. The total is the one the database keeps
 * (private.list_counts) when the list is filtered on instance, status and
 * include_deleted alone; any other filter counts the rows it matches, once,
 * through an index. One row more than the page is read, to tell whether
 * another page follows. A page of one instance (the usual request) takes
 * its names from that instance's rows.
 */
export async function listParticipants(sql: Sql, filters: ListFilters): Promise<{ json: string; meta: ListMeta }> {
  const { where, params, instance, search } = listConditions(filters, { found: true });
  const found = search ? `with found as materialized (${search}) ` : "";
  const kept = Object.entries(filters).every(([name, value]) => value === undefined || COUNTED_BY.has(name));
  // Counted before the cursor's condition joins them: the total is of the whole list.
  const counted = allOf(where);
  let total = `(select count(*) from public.participants p where ${counted})`;
  const order = orderColumns(filters);
  if (filters.after !== undefined) {
    const after = afterCondition(filters.after, order, params.length + 1, filters.offset);
    where.push(after.condition);
    params.push(...after.params);
  }
  const conditions = allOf(where);
  if (kept) {
    const status = filters.status === undefined ? "null" : `$${params.push(filters.status)}`;
    total = `private.kept_total('participants', ${instance ?? "null"}::uuid, ${status}::text, ${filters.include_deleted ? "true" : "false"})`;
  }
  const n = params.length;
  const limit = `$${n + 1}`;
  const names = instance ? namesOfInstance(instance) : { expressions: NAMES_BY_ID, joins: "" };
  const orderSql = orderBy(filters.sort, "p.");
  const json = participantJson(names.expressions, { deletedAt: filters.include_deleted });
  // Filtered on a care flag, the answer tells that flag of every participant it counts, on its page or only
  // in its total (a search narrowed to one name and a page past the end still count them): each is a read, on
  // the record (docs/security.md, "The severe-allergy filter").
  const flagReads = filters.severe_allergy
    ? `, private.audit_care_flag_reads(array(select p.id from public.participants p where ${counted})) as flag_reads`
    : "";
  const page = await sql.one<{ json: string; total: number; last_key: string | null }>(
    `${found}select coalesce(json_agg(${json} order by ${orderSql}) filter (where p._n <= ${limit}), '[]')::text as json,
       ${total} as total,
       case when count(*) > ${limit} then max(case when p._n = ${limit} then ${cursorValues(order)} end) end as last_key${flagReads}
     from (
       select p.*, row_number() over () as _n from (
         select * from public.participants p where ${conditions}
         order by ${orderSql} limit ${limit} + 1 offset $${n + 2}
       ) p
     ) p
     ${names.joins}`,
    [...params, filters.limit, filters.offset],
  );
  return {
    json: page?.json ?? "[]",
    meta: {
      total: page?.total ?? 0,
      limit: filters.limit,
      offset: filters.offset,
      next: page?.last_key ? cursorOf(order, page.last_key) : null,
    },
  };
}
