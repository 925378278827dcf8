-- =============================================================================
-- Planner statistics: the tenant follows from the instance
--
-- Every API statement carries the RLS condition tenant_id = <caller's tenant>.
-- Postgres takes it to be independent of the other conditions, so on a
-- database of ten tenants it expects a tenth of an instance's participants
-- where all of them match. With that estimate the per-instance list read and
-- joined every participant of the instance and sorted them, instead of
-- walking participants_by_instance in order and stopping after one page.
-- Functional-dependency statistics tell the planner that instance, group,
-- block and room each determine the tenant.
-- =============================================================================

create statistics public.participants_tenant_dependencies (dependencies)
  on tenant_id, instance_id, super_group_id, sub_group_id, block_id, room_id
  from public.participants;

create statistics public.supergroups_tenant_dependencies (dependencies) on tenant_id, instance_id from public.supergroups;
create statistics public.subgroups_tenant_dependencies (dependencies)
  on tenant_id, instance_id, parent_supergroup_id from public.subgroups;
create statistics public.blocks_tenant_dependencies (dependencies) on tenant_id, instance_id from public.blocks;
create statistics public.rooms_tenant_dependencies (dependencies) on tenant_id, instance_id, block_id from public.rooms;

-- Extended statistics are gathered by ANALYZE; on a database that already
-- holds data, gather them now rather than at the next autovacuum.
analyze public.participants, public.supergroups, public.subgroups, public.blocks, public.rooms;
