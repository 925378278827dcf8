-- =============================================================================
-- Structure: what an update may not move
--
-- A supergroup, subgroup, block or room stays in the instance it was created
-- in. Its children and the participants pointing at it are tied to that
-- instance by composite foreign keys, so a move would either fail on one of
-- them with a message about another table, or would have to drag them along.
-- A subgroup may change supergroup, and a room block, but not while a
-- participant points at it: the participant's (supergroup, subgroup) or
-- (block, room) pair would stop matching. Both refusals name the field.
-- =============================================================================

create function private.refuse_instance_change() returns trigger
  language plpgsql
  set search_path = ''
as $$
begin
  raise exception 'cannot be changed; create the record in the other instance instead'
    using errcode = 'CA400', column = 'instance_id';
end
$$;

-- Named to sort before the *_guard_write triggers (triggers fire in name
-- order), so a move is refused before any instance is looked up or locked.
create trigger supergroups_freeze_instance_id before update on public.supergroups
  for each row when (new.instance_id is distinct from old.instance_id)
  execute function private.refuse_instance_change();
create trigger subgroups_freeze_instance_id before update on public.subgroups
  for each row when (new.instance_id is distinct from old.instance_id)
  execute function private.refuse_instance_change();
create trigger blocks_freeze_instance_id before update on public.blocks
  for each row when (new.instance_id is distinct from old.instance_id)
  execute function private.refuse_instance_change();
create trigger rooms_freeze_instance_id before update on public.rooms
  for each row when (new.instance_id is distinct from old.instance_id)
  execute function private.refuse_instance_change();

-- Deleted participants count too: they keep their pair, and the foreign key
-- checks every row. Rare operation; the scan is the one the foreign key's own
-- check would make anyway.
create function private.guard_subgroup_move() returns trigger
  language plpgsql
  set search_path = ''
as $$
begin
  if exists (select from public.participants where sub_group_id = old.id) then
    raise exception 'subgroup has participants (deleted ones included), so its supergroup cannot be changed'
      using errcode = 'CA409', column = 'parent_supergroup_id';
  end if;
  return new;
end
$$;

create function private.guard_room_move() returns trigger
  language plpgsql
  set search_path = ''
as $$
begin
  if exists (select from public.participants where room_id = old.id) then
    raise exception 'room has participants (deleted ones included), so its block cannot be changed'
      using errcode = 'CA409', column = 'block_id';
  end if;
  return new;
end
$$;

create trigger subgroups_guard_move before update on public.subgroups
  for each row when (new.parent_supergroup_id is distinct from old.parent_supergroup_id)
  execute function private.guard_subgroup_move();
create trigger rooms_guard_move before update on public.rooms
  for each row when (new.block_id is distinct from old.block_id)
  execute function private.guard_room_move();
