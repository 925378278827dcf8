import { z } from "@hono/zod-openapi";
import type { Sql } from "../db/sql.ts";
import { ApiError, type FieldIssue } from "../errors.ts";

/**
 * Room capacity as the API sees it. The rule itself is the database's
 * (*_room_capacity.sql: a deferred check of every room a transaction fills);
 * this module holds the admin's override flag and the up-front count that
 * lets a bulk write or an import name every room it would overfill.
 */

/** `override_capacity=true`: an admin places participants over capacity on purpose (staff: 403). */
export const overrideCapacityParam = z
  .enum(["true", "false"], { error: "must be true or false" })
  .optional()
  .transform((value) => value === "true")
  .openapi({
    type: "string",
    enum: ["true", "false"],
    description:
      "Admins only (403 for staff): place participants even where a room is full. The audit event of each participant placed over capacity records the room, its capacity and occupancy, and the admin (its actor).",
  });

export const OverrideCapacityQuery = z.object({ override_capacity: overrideCapacityParam });

/**
 * A FROM item that turns the override on for the statement's transaction
 * before the statement writes (private.override_room_capacity refuses a
 * caller who is not an admin with CA403, a 403 naming override_capacity).
 * Part of the write's own statement, so the override costs no round trip.
 */
export const OVERRIDE_CAPACITY_FROM = "private.override_room_capacity() as capacity_override";

/** Turns the override on for the rest of the transaction (for work of several statements). */
export async function overrideCapacity(sql: Sql): Promise<void> {
  await sql.query(`select from ${OVERRIDE_CAPACITY_FROM}`);
}

/** A room that a set of new placements would fill over its capacity. */
export interface RoomOverflow {
  room_id: string;
  room_number: string;
  capacity: number;
  /** The live participants it would hold: those there now and the new ones. */
  occupancy: number;
}

/**
 * The rooms that `placements` (room ids, one per participant to be placed,
 * repeated for several) would fill over capacity, counting the live
 * participants already there. A check ahead of the write, to name every
 * room at once; the database's deferred check still judges the commit.
 */
export async function roomOverflows(sql: Sql, placements: Array<string | null | undefined>): Promise<RoomOverflow[]> {
  const adding = new Map<string, number>();
  for (const room of placements) if (room) adding.set(room, (adding.get(room) ?? 0) + 1);
  if (adding.size === 0) return [];
  const rows = await sql.query<{ room_id: string; room_number: string; capacity: number; occupancy: number }>(
    `select r.id as room_id, r.room_number, r.capacity,
            (select count(*) from public.participants p where p.room_id = r.id and p.deleted_at is null) + a.adding as occupancy
     from unnest($1::uuid[], $2::int[]) as a(room_id, adding)
     join public.rooms r on r.id = a.room_id and r.deleted_at is null
     where r.capacity is not null`,
    [[...adding.keys()], [...adding.values()]],
  );
  return rows.filter((row) => row.occupancy > row.capacity).sort((a, b) => a.room_id.localeCompare(b.room_id));
}

/** A room over capacity as an issue of a 409's details (as db/pg-errors.ts writes the database's refusal). */
export function overflowIssue(room: RoomOverflow, field = "room_id"): FieldIssue {
  return {
    field,
    issue: `room ${room.room_number} would hold ${room.occupancy} participants, over its capacity of ${room.capacity}`,
    room_id: room.room_id,
    room_number: room.room_number,
    capacity: room.capacity,
    occupancy: room.occupancy,
  };
}

/** The 409 for rooms over capacity: one issue per room; the message names the room when there is one. */
export function capacityConflict(rooms: RoomOverflow[], field = "room_id"): ApiError {
  const details = rooms.map((room) => overflowIssue(room, field));
  if (details.length === 0)
    return new ApiError("CONFLICT", "a room would be over its capacity", { field, issue: "a room would be over its capacity" });
  const message =
    details.length === 1 ? (details[0] as FieldIssue).issue : `${details.length} rooms would be over their capacity`;
  return new ApiError("CONFLICT", message, details);
}
