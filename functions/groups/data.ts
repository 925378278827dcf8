import { softDeleteTable } from "../resources/table.ts";
import { Subgroup, Supergroup, WritableSubgroupFields, WritableSupergroupFields } from "./schemas.ts";

/** Supergroups: name unique per instance; a delete is refused while subgroups or participants point here. */
export const supergroups = softDeleteTable({
  table: "public.supergroups",
  columns: Object.keys(Supergroup.shape),
  writable: WritableSupergroupFields,
  filters: ["instance_id"],
  counted: { list: "supergroups", scope: "instance_id" },
  notNull: ["name", "type"],
});

/** Subgroups: the parent must be a live supergroup of the same instance (trigger plus composite foreign key). */
export const subgroups = softDeleteTable({
  table: "public.subgroups",
  columns: Object.keys(Subgroup.shape),
  writable: WritableSubgroupFields,
  filters: ["instance_id", "parent_supergroup_id"],
  counted: { list: "subgroups", scope: "instance_id" },
  notNull: ["name", "type", "supergroup_name"],
  // The parent is live while the subgroup is (a supergroup with live subgroups cannot be deleted).
  computed: {
    supergroup_name: "(select s.name from public.supergroups s where s.id = subgroups.parent_supergroup_id)",
  },
  computedVersion: "(select s.xmin::text from public.supergroups s where s.id = subgroups.parent_supergroup_id)",
});
