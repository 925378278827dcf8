-- =============================================================================
-- Participants: what the API's statements need beyond the table
--
-- The search behind `q`, the indexes of the list shapes the base migration does
-- not cover, and the lookups that fill a participant's supergroup from its
-- subgroup and its block and room number from its room.
-- =============================================================================

-- -----------------------------------------------------------------------------
-- Search (`q`)
-- -----------------------------------------------------------------------------

-- Trigram indexes serve `ilike '%term%'`. Supabase keeps extensions in the
-- `extensions` schema; a plain Postgres gets the same layout.
create schema if not exists extensions;
create extension if not exists pg_trgm with schema extensions;

-- The searchable text of a participant: names and user_id, joined by a unit
-- separator (chr(31)) so that a term never matches across two fields. The
-- list query calls this with the same arguments as the index below, or the
-- index is not used.
create function private.participant_search_text(p_first_name text, p_surname text, p_full_name text, p_user_id text)
  returns text
  language sql immutable parallel safe
  set search_path = ''
as $$
  select p_first_name || chr(31) || p_surname || chr(31) || p_full_name || chr(31) || p_user_id
$$;
grant execute on function private.participant_search_text(text, text, text, text) to camp_api;

-- The operator class is looked up where pg_trgm actually lives: on a database
-- where it was installed earlier in another schema, `create extension if not
-- exists` above leaves it there.
do $$
declare
  v_schema text;
begin
  select n.nspname into v_schema
  from pg_extension e join pg_namespace n on n.oid = e.extnamespace
  where e.extname = 'pg_trgm';
  execute format(
    'create index participants_search on public.participants using gin '
    '(private.participant_search_text(first_name, surname, full_name, user_id) %I.gin_trgm_ops) '
    'where deleted_at is null',
    v_schema
  );
end
$$;

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
