import { softDeleteTable } from "../resources/table.ts";
import { Subgroup, Supergroup, WritableSubgroupFields, WritableSupergroupFields } from "./schemas.ts";

/** Supergroups: name unique per instance; a delete is refused while subgroups or participants point here. */
export const supergroups = softDeleteTable({
  table: "public.supergroups",
  columns: Object.keys(Supergroup.shape),
  writable: WritableSupergroupFields,
  filters: ["instance_id"],
});

/** Subgroups: the parent must be a live supergroup of the same instance (trigger plus composite foreign key). */
export const subgroups = softDeleteTable({
  table: "public.subgroups",
  columns: Object.keys(Subgroup.shape),
  writable: WritableSubgroupFields,
  filters: ["instance_id", "parent_supergroup_id"],
});
