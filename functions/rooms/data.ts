import { softDeleteTable } from "../resources/table.ts";
import { Room, WritableRoomFields } from "./schemas.ts";

/** Rooms: the block must be a live block of the same instance; room number unique per block. */
export const rooms = softDeleteTable({
  table: "public.rooms",
  columns: Object.keys(Room.shape),
  writable: WritableRoomFields,
  filters: ["instance_id", "block_id"],
  // A room's block is live while the room is (a block with live rooms cannot be deleted).
  computed: { block_name: "(select b.name from public.blocks b where b.id = rooms.block_id)" },
  computedVersion: "(select b.xmin::text from public.blocks b where b.id = rooms.block_id)",
});
