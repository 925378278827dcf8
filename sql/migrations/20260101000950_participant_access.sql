-- =============================================================================
-- Participants: what the API's statements need beyond the table
--
-- The lookups that fill a participant's supergroup from its subgroup and its
-- block and room number from its room.
-- =============================================================================

-- -----------------------------------------------------------------------------
-- Filling references
-- -----------------------------------------------------------------------------

-- The supergroup of a subgroup, for a participant given only the subgroup.
-- A subgroup of another instance is refused here, on the field the client
-- sent: filled in, its supergroup would fail the instance foreign key and the
-- error would name super_group_id, which the client never sent. A missing
-- instance or subgroup is reported here too, the instance first: the insert
-- guard runs after the row's check constraints, so an unfilled supergroup
-- would otherwise be refused first, naming a field the client never sent.
create function private.supergroup_of_subgroup(p_sub_group_id uuid, p_instance_id uuid) returns uuid
  language plpgsql stable
  set search_path = ''
as $$
declare
  v_parent uuid;
  v_instance uuid;
  v_found boolean;
begin
  select s.parent_supergroup_id, s.instance_id into v_parent, v_instance
  from public.subgroups s
  where s.id = p_sub_group_id and s.deleted_at is null;
  v_found := found;
  if v_instance is distinct from p_instance_id then
    if not exists (select from public.instances i where i.id = p_instance_id and i.deleted_at is null) then
      raise exception 'instance does not exist' using errcode = 'CA400', column = 'instance_id';
    elsif v_found then
      raise exception 'does not belong to instance_id' using errcode = 'CA400', column = 'sub_group_id';
    end if;
    raise exception 'subgroup does not exist' using errcode = 'CA400', column = 'sub_group_id';
  end if;
  return v_parent;
end
$$;
grant execute on function private.supergroup_of_subgroup(uuid, uuid) to camp_api;

-- The room a participant is given without its block: the same rules as
-- above, for block_id and room_number.
create function private.room_in_instance(p_room_id uuid, p_instance_id uuid) returns public.rooms
  language plpgsql stable
  set search_path = ''
as $$
declare
  v_room public.rooms;
  v_found boolean;
begin
  -- A room being cleared: nothing to fill (room_number is cleared with it).
  if p_room_id is null then
    return null;
  end if;
  select r.* into v_room
  from public.rooms r
  where r.id = p_room_id and r.deleted_at is null;
  v_found := found;
  if v_room.instance_id is distinct from p_instance_id then
    if not exists (select from public.instances i where i.id = p_instance_id and i.deleted_at is null) then
      raise exception 'instance does not exist' using errcode = 'CA400', column = 'instance_id';
    elsif v_found then
      raise exception 'does not belong to instance_id' using errcode = 'CA400', column = 'room_id';
    end if;
    raise exception 'room does not exist' using errcode = 'CA400', column = 'room_id';
  end if;
  return v_room;
end
$$;
grant execute on function private.room_in_instance(uuid, uuid) to camp_api;
