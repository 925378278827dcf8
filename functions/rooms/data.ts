import { softDeleteTable } from "../resources/table.ts";
import { Room, WritableRoomFields } from "./schemas.ts";

/** Rooms: the block must be a live block of the same instance; room number unique per block. */
export const rooms = softDeleteTable({
  table: "public.rooms",
  columns: Object.keys(Room.shape),
  writable: WritableRoomFields,
  filters: ["instance_id", "block_id"],
});
