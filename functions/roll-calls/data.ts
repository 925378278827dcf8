import type { ListMeta } from "../db/list.ts";
import type { Sql } from "../db/sql.ts";
import type { RollCallRecord } from "./schemas.ts";

/**
 * Roll calls: written through the database's doors (private.roll_call_*,
 * *_roll_calls.sql), which check the caller's attendance access and the
 * roll call's state; read under row-level security.
 */

async function value<T>(sql: Sql, text: string, values: unknown[]): Promise<T | undefined> {
  return (await sql.one<{ value: T }>(text, values))?.value ?? undefined;
}

export const openRollCall = (sql: Sql, input: object) =>
  value<RollCallRecord>(sql, "select private.roll_call_open($1) as value", [JSON.stringify(input)]);

export const markRollCall = (sql: Sql, id: string, marks: object[]) =>
  value<RollCallRecord>(sql, "select private.roll_call_mark($1, $2) as value", [id, JSON.stringify(marks)]);

export const closeRollCall = (sql: Sql, id: string) =>
  value<RollCallRecord>(sql, "select private.roll_call_close($1) as value", [id]);

export const getRollCall = (sql: Sql, id: string) =>
  value<RollCallRecord>(sql, "select private.roll_call_json(r.id) as value from public.roll_calls r where r.id = $1", [id]);

export async function listRollCalls(
  sql: Sql,
  filters: { instance_id?: string; status?: string; limit: number; offset: number },
): Promise<{ rows: RollCallRecord[]; meta: ListMeta }> {
  const page = await sql.one<{ rows: RollCallRecord[]; total: number }>(
    `with matching as (
       select r.id, r.created_at from public.roll_calls r
       where ($1::uuid is null or r.instance_id = $1::uuid) and ($2::text is null or r.status = $2::text)
     )
     select coalesce((select jsonb_agg(private.roll_call_json(m.id) order by m.created_at, m.id)
                      from (select * from matching order by created_at, id limit $3 offset $4) m), '[]') as rows,
            (select count(*) from matching)::int as total`,
    [filters.instance_id ?? null, filters.status ?? null, filters.limit, filters.offset],
  );
  return { rows: page?.rows ?? [], meta: { total: page?.total ?? 0, limit: filters.limit, offset: filters.offset } };
}

/**
 * Who is in an instance now: the live participants whose presence is `in`,
 * counted per supergroup, subgroup, block and room (every live one of the
 * instance, zero included), with their ids. Undefined when the instance is
 * not the caller's.
 */
export async function instancePresence(sql: Sql, instanceId: string) {
  const row = await sql.one<{ value: unknown }>(
    `with here as (
       select p.id, p.super_group_id, p.sub_group_id, p.block_id, p.room_id from public.participants p
       where p.instance_id = $1 and p.deleted_at is null and p.presence = 'in'
     )
     select jsonb_build_object(
       'instance_id', i.id,
       'present', (select count(*) from here),
       'supergroups', coalesce((select jsonb_agg(jsonb_build_object('id', s.id, 'name', s.name,
           'present', (select count(*) from here h where h.super_group_id = s.id)) order by s.name, s.id)
         from public.supergroups s where s.instance_id = i.id and s.deleted_at is null), '[]'),
       'subgroups', coalesce((select jsonb_agg(jsonb_build_object('id', s.id, 'name', s.name,
           'present', (select count(*) from here h where h.sub_group_id = s.id)) order by s.name, s.id)
         from public.subgroups s where s.instance_id = i.id and s.deleted_at is null), '[]'),
       'blocks', coalesce((select jsonb_agg(jsonb_build_object('id', b.id, 'name', b.name,
           'present', (select count(*) from here h where h.block_id = b.id)) order by b.name, b.id)
         from public.blocks b where b.instance_id = i.id and b.deleted_at is null), '[]'),
       'rooms', coalesce((select jsonb_agg(jsonb_build_object('id', r.id, 'name', r.name, 'room_number', r.room_number,
           'present', (select count(*) from here h where h.room_id = r.id)) order by r.room_number, r.id)
         from public.rooms r where r.instance_id = i.id and r.deleted_at is null), '[]'),
       'present_ids', coalesce((select jsonb_agg(h.id order by h.id) from here h), '[]')) as value
     from public.instances i where i.id = $1 and i.deleted_at is null`,
    [instanceId],
  );
  return row?.value;
}

/**
 * What a device needs to work offline in an instance: each live
 * participant's id, names, groups, room, photo link and presence, the names
 * (and ids) of their authorised pickups when the caller may see them
 * (private.instance_pickups: null otherwise), and a cursor of the event feed
 * taken in the same snapshot, to keep the copy fresh with GET /events?after=.
 * `offset 0` keeps the pickups' subquery from being pulled up: flattened, the
 * planner copies private.instance_pickups($1) into every participant's
 * `k.pickups`, and the whole instance's pickups are aggregated once per child.
 */
export async function instanceRoster(sql: Sql, instanceId: string) {
  const row = await sql.one<{ value: unknown }>(
    `select jsonb_build_object(
       'instance_id', i.id,
       'cursor', pg_snapshot_xmin(pg_current_snapshot())::text || '.0',
       'pickups_visible', k.pickups is not null,
       'participants', coalesce((
         select jsonb_agg(jsonb_build_object(
           'id', p.id, 'user_id', p.user_id, 'first_name', p.first_name, 'surname', p.surname, 'full_name', p.full_name,
           'super_group_id', p.super_group_id, 'supergroup_name', sg.name, 'sub_group_id', p.sub_group_id, 'subgroup_name', sub.name,
           'block_id', p.block_id, 'block_name', b.name, 'room_id', p.room_id, 'room_number', p.room_number, 'room_name', r.name,
           'photo_link', p.photo_link, 'presence', p.presence, 'presence_since', private.iso_time(p.presence_since),
           'authorised_pickups', case when k.pickups is null then null else coalesce(k.pickups -> p.id::text, '[]'::jsonb) end)
           order by p.surname, p.first_name, p.id)
         from public.participants p
         left join public.supergroups sg on sg.id = p.super_group_id
         left join public.subgroups sub on sub.id = p.sub_group_id
         left join public.blocks b on b.id = p.block_id
         left join public.rooms r on r.id = p.room_id
         where p.instance_id = i.id and p.deleted_at is null), '[]')) as value
     from public.instances i
     cross join (select private.instance_pickups($1) as pickups offset 0) k
     where i.id = $1 and i.deleted_at is null`,
    [instanceId],
  );
  return row?.value;
}
