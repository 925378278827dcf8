-- =============================================================================
-- Participants: the insert checks, once per statement instead of once per row
--
-- guard_participant_write looked up and share-locked the instance and each
-- reference for every inserted row: five lookups per row, each under RLS, so
-- each also called private.request_tenant_id(), whose pinned search_path
-- Postgres must set and restore on every call: most of a bulk create's time.
--
-- An insert is now checked by a statement-level trigger that reads the
-- inserted rows from a transition table and locks each distinct instance and
-- reference once: the same rules and locks, a handful of lookups per
-- statement. Updates, one row at a time, keep the row trigger.
--
-- The locks are now taken at the end of the insert instead of before each
-- row. That keeps the guarantee: a soft delete of a referenced row either
-- commits first (the lock below then finds the row deleted and refuses) or
-- waits for the lock, and then sees this insert's participants and refuses.
-- =============================================================================

-- The generated full name, on insert (updates: guard_participant_write).
create function private.fill_participant_full_name() returns trigger
  language plpgsql
  set search_path = ''
as $$
begin
  if new.full_name is null or btrim(new.full_name) = '' then
    new.full_name := private.participant_full_name(new.first_name, new.surname);
  end if;
  return new;
end
$$;

-- Every inserted row needs a writable instance and live references, locked
-- in share mode until the end of the transaction (see the header).
create function private.guard_participant_insert() returns trigger
  language plpgsql
  set search_path = ''
as $$
declare
  v_instance_id uuid;
begin
  for v_instance_id in select distinct instance_id from inserted loop
    perform private.lock_writable_instance(v_instance_id);
  end loop;

  -- Each check: lock the live rows referred to, then refuse if any reference
  -- found no live row.
  perform from public.supergroups
  where id in (select super_group_id from inserted) and deleted_at is null
  for share;
  if exists (select from inserted i where i.super_group_id is not null and not exists (
    select from public.supergroups s where s.id = i.super_group_id and s.deleted_at is null)) then
    raise exception 'supergroup does not exist' using errcode = 'CA400', column = 'super_group_id';
  end if;

  perform from public.subgroups
  where id in (select sub_group_id from inserted) and deleted_at is null
  for share;
  if exists (select from inserted i where i.sub_group_id is not null and not exists (
    select from public.subgroups s where s.id = i.sub_group_id and s.deleted_at is null)) then
    raise exception 'subgroup does not exist' using errcode = 'CA400', column = 'sub_group_id';
  end if;

  perform from public.blocks
  where id in (select block_id from inserted) and deleted_at is null
  for share;
  if exists (select from inserted i where i.block_id is not null and not exists (
    select from public.blocks b where b.id = i.block_id and b.deleted_at is null)) then
    raise exception 'block does not exist' using errcode = 'CA400', column = 'block_id';
  end if;

  perform from public.rooms
  where id in (select room_id from inserted) and deleted_at is null
  for share;
  if exists (select from inserted i where i.room_id is not null and not exists (
    select from public.rooms r where r.id = i.room_id and r.deleted_at is null)) then
    raise exception 'room does not exist' using errcode = 'CA400', column = 'room_id';
  end if;
  return null;
end
$$;

-- The update guard, as before without its insert branch.
create or replace function private.guard_participant_write() returns trigger
  language plpgsql
  set search_path = ''
as $$
begin
  -- full_name follows a name change unless it had been set to something
  -- other than the generated name.
  if (new.first_name, new.surname) is distinct from (old.first_name, old.surname)
     and new.full_name is not distinct from old.full_name
     and old.full_name = private.participant_full_name(old.first_name, old.surname) then
    new.full_name := private.participant_full_name(new.first_name, new.surname);
  elsif new.full_name is null or btrim(new.full_name) = '' then
    new.full_name := private.participant_full_name(new.first_name, new.surname);
  end if;

  perform private.lock_writable_instance(new.instance_id);
  if new.instance_id is distinct from old.instance_id then
    perform private.lock_writable_instance(old.instance_id);
  end if;

  -- Only a reference this update sets is checked: one it keeps was checked when set.
  if new.super_group_id is not null and new.super_group_id is distinct from old.super_group_id then
    perform from public.supergroups where id = new.super_group_id and deleted_at is null for share;
    if not found then
      raise exception 'supergroup does not exist' using errcode = 'CA400', column = 'super_group_id';
    end if;
  end if;
  if new.sub_group_id is not null and new.sub_group_id is distinct from old.sub_group_id then
    perform from public.subgroups where id = new.sub_group_id and deleted_at is null for share;
    if not found then
      raise exception 'subgroup does not exist' using errcode = 'CA400', column = 'sub_group_id';
    end if;
  end if;
  if new.block_id is not null and new.block_id is distinct from old.block_id then
    perform from public.blocks where id = new.block_id and deleted_at is null for share;
    if not found then
      raise exception 'block does not exist' using errcode = 'CA400', column = 'block_id';
    end if;
  end if;
  if new.room_id is not null and new.room_id is distinct from old.room_id then
    perform from public.rooms where id = new.room_id and deleted_at is null for share;
    if not found then
      raise exception 'room does not exist' using errcode = 'CA400', column = 'room_id';
    end if;
  end if;
  return new;
end
$$;

drop trigger participants_guard_write on public.participants;
create trigger participants_guard_write before update on public.participants
  for each row execute function private.guard_participant_write();
create trigger participants_fill_full_name before insert on public.participants
  for each row execute function private.fill_participant_full_name();
create trigger participants_guard_insert after insert on public.participants
  referencing new table as inserted
  for each statement execute function private.guard_participant_insert();

-- The functions that fill a participant's supergroup from its subgroup, and
-- its block from its room, now report a missing instance, subgroup or room
-- themselves. They used to return null and leave the report to the row
-- trigger, which ran before the row's check constraints; the insert guard
-- runs after them, so the unfilled supergroup or block would be refused
-- first, naming a field the client never sent. The order of the checks is
-- the old trigger's: the instance first.
create or replace function private.supergroup_of_subgroup(p_sub_group_id uuid, p_instance_id uuid) returns uuid
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

create or replace function private.room_in_instance(p_room_id uuid, p_instance_id uuid) returns public.rooms
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
