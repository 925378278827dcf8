-- =============================================================================
-- Reporting: block_occupancy without a per-block rescan
--
-- block_occupancy found each block's participants without a room with a
-- correlated subquery over the `placed` CTE. A CTE cannot be indexed, so
-- Postgres rescanned all of `placed` (one row per occupied room and per
-- block with roomless participants) once per block, so its cost grew with
-- blocks × rooms rather than with the data. The same figures now come from one hash join on the block.
--
-- Nothing else changes: same columns, types, order and rows; the view stays
-- security_invoker (so the base tables' RLS still decides what it sees) and
-- keeps its grants and comments (create or replace keeps the view's oid).
-- =============================================================================

create or replace view reporting.block_occupancy with (security_invoker = true) as
with placed as (
  select p.block_id, p.room_id, count(*) as participants
  from public.participants p
  where p.deleted_at is null and p.block_id is not null
  group by p.block_id, p.room_id
), room_load as (
  select r.block_id, r.capacity, coalesce(pl.participants, 0) as occupants
  from public.rooms r
  left join placed pl on pl.room_id = r.id
  where r.deleted_at is null
), block_load as (
  select
    block_id,
    count(*) as rooms,
    count(*) filter (where capacity is null) as rooms_without_capacity,
    sum(capacity) as capacity,
    sum(occupants)::bigint as occupants,
    sum(case when capacity is not null then greatest(capacity - occupants, 0) end)::bigint as free_places
  from room_load
  group by block_id
), roomless as (
  -- `placed` is grouped by (block, room), so this is at most one row per
  -- block: the left join below cannot multiply blocks.
  select pl.block_id, pl.participants
  from placed pl
  where pl.room_id is null
)
select
  b.instance_id,
  i.name as instance_name,
  b.id as block_id,
  b.name as block_name,
  coalesce(l.rooms, 0) as rooms,
  coalesce(l.rooms_without_capacity, 0) as rooms_without_capacity,
  l.capacity,
  coalesce(l.occupants, 0) as occupants,
  coalesce(nr.participants, 0) as without_room,
  l.free_places,
  round(100.0 * l.occupants / nullif(l.capacity, 0), 1) as occupancy_percent
from public.blocks b
join public.instances i on i.id = b.instance_id and i.deleted_at is null
left join block_load l on l.block_id = b.id
left join roomless nr on nr.block_id = b.id
where b.deleted_at is null;
