import { softDeleteTable } from "../resources/table.ts";
import { Block, WritableBlockFields } from "./schemas.ts";

/** Blocks: name unique per instance; a delete is refused while rooms or participants point here. */
export const blocks = softDeleteTable({
  table: "public.blocks",
  columns: Object.keys(Block.shape),
  writable: WritableBlockFields,
  filters: ["instance_id"],
});
