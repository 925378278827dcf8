import { softDeleteTable } from "../resources/table.ts";
import { Instance, WritableInstanceFields } from "./schemas.ts";

/** Instances: an archived one refuses writes, a delete is refused while anything live is in it (both by trigger). */
export const instances = softDeleteTable({
  table: "public.instances",
  columns: Object.keys(Instance.shape),
  writable: WritableInstanceFields,
  filters: ["status"],
  counted: { list: "instances", status: "status" },
  notNull: ["name", "status"],
});
