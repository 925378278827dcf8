import { softDeleteTable } from "../resources/table.ts";
import { Block, WritableBlockFields } from "./schemas.ts";

/**
 * The block's totals over its live rooms, as a room counts them
 * (rooms/data.ts): null capacity and available when a room has no limit;
 * 0 for a block without rooms. Occupancy counts the live participants in
 * its rooms (a participant's room is in the participant's block, and a room
 * with live participants cannot be deleted), not those in the block without
 * a room.
 */
const ROOM_OCCUPANCY = "(select count(*) from public.participants p where p.room_id = r.id and p.deleted_at is null)";
const CAPACITY = `(select case when bool_or(r.capacity is null) then null else coalesce(sum(r.capacity), 0) end
   from public.rooms r where r.block_id = blocks.id and r.deleted_at is null)`;
const OCCUPANCY = `(select count(*) from public.participants p
   where p.block_id = blocks.id and p.room_id is not null and p.deleted_at is null)`;
const AVAILABLE = `(select case when bool_or(r.capacity is null) then null
     else coalesce(sum(greatest(r.capacity - ${ROOM_OCCUPANCY}, 0)), 0)::bigint end
   from public.rooms r where r.block_id = blocks.id and r.deleted_at is null)`;

/** Blocks: name unique per instance; a delete is refused while rooms or participants point here. */
export const blocks = softDeleteTable({
  table: "public.blocks",
  columns: Object.keys(Block.shape),
  writable: WritableBlockFields,
  filters: ["instance_id"],
  counted: { list: "blocks", scope: "instance_id" },
  notNull: ["name", "occupancy"],
  computed: { capacity: CAPACITY, occupancy: OCCUPANCY, available: AVAILABLE },
  // The totals themselves (null as an empty part): the ETag changes when they do.
  computedVersion: `coalesce(${CAPACITY}::text, '') || '.' || ${OCCUPANCY} || '.' || coalesce(${AVAILABLE}::text, '')`,
});
