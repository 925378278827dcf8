import { softDeleteTable } from "../resources/table.ts";
import { Room, WritableRoomFields } from "./schemas.ts";

/** The live participants in the room (the rule of *_room_capacity.sql counts the same). */
const OCCUPANCY = "(select count(*) from public.participants p where p.room_id = rooms.id and p.deleted_at is null)";
/** Free places: null without a capacity (no limit), never below 0 (an admin may have overfilled it). */
const AVAILABLE = `(case when rooms.capacity is not null then greatest(rooms.capacity - ${OCCUPANCY}, 0) end)`;

/** Rooms: the block must be a live block of the same instance; room number unique per block. */
export const rooms = softDeleteTable({
  table: "public.rooms",
  columns: Object.keys(Room.shape),
  writable: WritableRoomFields,
  filters: ["instance_id", "block_id"],
  counted: { list: "rooms", scope: "instance_id" },
  notNull: ["room_number", "occupancy", "block_name"],
  atLeast: { available_min: AVAILABLE },
  // A room's block is live while the room is (a block with live rooms cannot be deleted).
  computed: {
    block_name: "(select b.name from public.blocks b where b.id = rooms.block_id)",
    occupancy: OCCUPANCY,
    available: AVAILABLE,
  },
  // The block's row (its name) and the occupancy: the ETag changes when either does.
  computedVersion: `(select b.xmin::text from public.blocks b where b.id = rooms.block_id) || '.' || ${OCCUPANCY}`,
});
