import { allOf, type ListMeta } from "../db/list.ts";
import type { Sql } from "../db/sql.ts";
import type { MovementCreateInput, MovementListFilters, MovementRecord, SyncResult } from "./schemas.ts";

/**
 * Movements. The API role reads them under RLS; it writes them only through
 * the database's door, private.attendance_record (*_attendance.sql), which
 * decides who may record, holds the pickup rule and the timeline, and
 * raises what the client gets (CA403, CA404, CA409).
 */

/** What the door answers for one movement. */
export interface Recorded {
  outcome: "accepted" | "duplicate" | "conflict" | "invalid";
  reason?: string | null;
  field?: string;
  movement?: MovementRecord;
  security_code?: string | null;
}

/** Records one movement (POST /attendance): the door raises on any refusal. */
export async function recordMovement(sql: Sql, input: MovementCreateInput): Promise<Recorded> {
  const row = await sql.one<{ value: Recorded }>("select private.attendance_record($1, false) as value", [JSON.stringify(input)]);
  if (!row) throw new Error("the attendance door returned no row");
  return row.value;
}

const MOVEMENT_JSON = "private.movement_json(m)";

export async function getMovement(sql: Sql, id: string): Promise<MovementRecord | undefined> {
  const row = await sql.one<{ value: MovementRecord }>(
    `select ${MOVEMENT_JSON} as value from public.attendance_movements m where m.id = $1`,
    [id],
  );
  return row?.value;
}

/** One page of movements in timeline order (recorded_at, then the nonce that breaks ties), and the total. */
export async function listMovements(sql: Sql, filters: MovementListFilters): Promise<{ rows: MovementRecord[]; meta: ListMeta }> {
  const where: string[] = [];
  const params: unknown[] = [];
  const add = (condition: (placeholder: string) => string, value: unknown) => {
    params.push(value);
    where.push(condition(`$${params.length}`));
  };
  if (filters.instance_id !== undefined) add((p) => `m.instance_id = ${p}::uuid`, filters.instance_id);
  if (filters.participant_id !== undefined) add((p) => `m.participant_id = ${p}::uuid`, filters.participant_id);
  if (filters.direction !== undefined) add((p) => `m.direction = ${p}`, filters.direction);
  if (filters.since !== undefined) add((p) => `m.recorded_at >= ${p}::timestamptz`, filters.since);
  const conditions = allOf(where);
  const n = params.length;
  const page = await sql.one<{ rows: MovementRecord[]; total: number }>(
    `select coalesce(jsonb_agg(${MOVEMENT_JSON} order by m.recorded_at, m.nonce), '[]') as rows,
       (select count(*) from public.attendance_movements m where ${conditions})::int as total
     from (
       select * from public.attendance_movements m where ${conditions}
       order by m.recorded_at, m.nonce limit $${n + 1} offset $${n + 2}
     ) m`,
    [...params, filters.limit, filters.offset],
  );
  return { rows: page?.rows ?? [], meta: { total: page?.total ?? 0, limit: filters.limit, offset: filters.offset } };
}

/** Records checked by the database's door one by one (private.attendance_sync), each answered in its place. */
export async function syncMovements(sql: Sql, records: Array<{ index: number; record: object }>): Promise<SyncResult[]> {
  if (records.length === 0) return [];
  const row = await sql.one<{ value: SyncResult[] }>("select private.attendance_sync($1) as value", [
    JSON.stringify(records.map((r) => r.record)),
  ]);
  // The door numbers the records it was given; put back each one's place in the upload.
  return (row?.value ?? []).map((result) => ({ ...result, index: (records[result.index] as { index: number }).index }));
}
