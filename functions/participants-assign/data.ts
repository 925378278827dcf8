import type { Sql } from "../db/sql.ts";
import type { CurrentParticipant, PlannedEntry } from "./plan.ts";

/**
 * The assign route's statements: the participants read and locked for the
 * length of the transaction, and every change written by one update. RLS
 * scopes both to the caller's tenant: another tenant's participant is not
 * found, as a deleted one is not.
 */

/**
 * The live participants with these ids, each with its instance's status,
 * locked (FOR UPDATE) until the transaction ends, so that the placement
 * planned from them is the one the update replaces. Locked in id order: two
 * assignments of overlapping sets wait for each other instead of deadlocking.
 */
export async function lockParticipants(sql: Sql, ids: string[]): Promise<Map<string, CurrentParticipant>> {
  const rows = await sql.query<CurrentParticipant>(
    `select p.id, p.instance_id, i.status as instance_status,
            p.super_group_id, p.sub_group_id, p.block_id, p.room_id, p.room_number
     from public.participants p
     join public.instances i on i.id = p.instance_id
     where p.id = any($1::uuid[]) and p.deleted_at is null
     order by p.id
     for update of p`,
    [ids],
  );
  return new Map(rows.map((row) => [row.id, row]));
}

/**
 * Writes every changed placement in one statement (one audit event per
 * participant, from the statement's audit trigger). The row triggers and
 * foreign keys check each row as for a single update. Returns how many rows
 * were written.
 */
export async function writePlacements(sql: Sql, changes: PlannedEntry[]): Promise<number> {
  if (changes.length === 0) return 0;
  const rows = changes.map(({ participant_id, after }) => ({ id: participant_id, ...after }));
  const [row] = await sql.query<{ n: number }>(
    `with changed as (
       update public.participants t
       set super_group_id = v.super_group_id, sub_group_id = v.sub_group_id, block_id = v.block_id,
           room_id = v.room_id, room_number = v.room_number
       from jsonb_to_recordset($1::jsonb)
         as v(id uuid, super_group_id uuid, sub_group_id uuid, block_id uuid, room_id uuid, room_number text)
       where t.id = v.id and t.deleted_at is null
       returning 1
     )
     select count(*) as n from changed`,
    [JSON.stringify(rows)],
  );
  return row?.n ?? 0;
}

/**
 * Refuses (CA409, constraint room_capacity) naming every one of these rooms
 * that now holds more live participants than its capacity, unless the
 * transaction overrides capacity (private.assert_room_capacity, *_room_capacity.sql).
 * The deferred per-row check at commit would stop at the first room; this
 * names them all, on `assignments`, the set whose final state overflows them.
 * It also takes each room's capacity lock, so what it found holds until commit.
 */
export async function assertRoomCapacity(sql: Sql, rooms: string[]): Promise<void> {
  if (rooms.length === 0) return;
  await sql.query("select private.assert_room_capacity($1::uuid[], 'assignments')", [rooms]);
}
