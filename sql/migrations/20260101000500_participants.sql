-- =============================================================================
-- Participants: the people taking part in an instance
--
-- Every reference (supergroup, subgroup, block, room) must lie in the
-- participant's own instance, a subgroup in the participant's supergroup and a
-- room in the participant's block: composite foreign keys hold all of it, so
-- no interleaving of requests can break it. user_id is unique per instance
-- among live participants; a deleted participant's user_id may be reused.
-- =============================================================================

-- -----------------------------------------------------------------------------
-- The search key: `q` ignores case, accents and punctuation
-- -----------------------------------------------------------------------------

-- `jose` finds José, `muller` finds Müller, `oconnor` finds O'Connor. A
-- participant's searchable text is kept in a generated column (search_key,
-- below) with a trigram index on it, which serves `like '%term%'`. Supabase
-- keeps extensions in the `extensions` schema; a plain Postgres gets the same
-- layout.
create schema if not exists extensions;
create extension if not exists pg_trgm with schema extensions;
create extension if not exists unaccent with schema extensions;

-- unaccent() is only STABLE (its dictionary could be changed); this wrapper
-- names the dictionary explicitly and is declared IMMUTABLE so that a
-- generated column and an index may use it. The dictionary is looked up where
-- the extension actually lives.
do $$
declare
  v_schema text;
begin
  select n.nspname into v_schema
  from pg_extension e join pg_namespace n on n.oid = e.extnamespace
  where e.extname = 'unaccent';
  execute format($f$
    create function private.search_key(p_text text) returns text
      language sql immutable parallel safe strict
      set search_path = ''
    as $body$
      select regexp_replace(lower(%1$I.unaccent(%2$L::regdictionary, p_text)), '[^[:alnum:]' || chr(31) || ']+', '', 'g')
    $body$
  $f$, v_schema, v_schema || '.unaccent');
  -- The API role computes the generated column below when it writes a participant.
  execute format('grant usage on schema %I to camp_api', v_schema);
end
$$;

comment on function private.search_key(text) is
  'Text as search compares it: lower case, without accents, without anything but letters, digits and the field separator chr(31).';
grant execute on function private.search_key(text) to camp_api;

-- -----------------------------------------------------------------------------
-- The table
-- -----------------------------------------------------------------------------

create table public.participants (
  id               uuid primary key default gen_random_uuid(),
  tenant_id        uuid not null default private.request_tenant_id(),
  instance_id      uuid not null,
  user_id          text not null constraint participants_user_id_check check (char_length(btrim(user_id)) between 1 and 200),
  first_name       text not null constraint participants_first_name_check check (char_length(btrim(first_name)) between 1 and 200),
  surname          text not null constraint participants_surname_check check (char_length(btrim(surname)) between 1 and 200),
  -- Filled from first_name and surname when not given (see the trigger below).
  full_name        text not null constraint participants_full_name_check check (char_length(full_name) <= 401),
  gender           text constraint participants_gender_check check (gender in ('Male', 'Female', 'Other')),
  pronouns         text constraint participants_pronouns_check check (char_length(pronouns) <= 50),
  status           text not null default 'active' constraint participants_status_check check (status in ('active', 'inactive')),
  date_of_birth    date,
  school_year      text constraint participants_school_year_check check (char_length(school_year) <= 200),
  rank             text constraint participants_rank_check check (char_length(rank) <= 200),
  unit_name        text constraint participants_unit_name_check check (char_length(unit_name) <= 200),
  school_institute text constraint participants_school_institute_check check (char_length(school_institute) <= 200),
  arrival_date     date,
  departure_date   date,
  super_group_id   uuid,
  sub_group_id     uuid,
  block_id         uuid,
  room_id          uuid,
  room_number      text constraint participants_room_number_check check (char_length(room_number) <= 200),
  photo_link       text constraint participants_photo_link_check check (char_length(photo_link) <= 2000),
  created_at       timestamptz not null default now(),
  updated_at       timestamptz not null default now(),
  deleted_at       timestamptz,
  -- The current photo: the stored object's key (<tenant_id>/<participant_id>/<sha256>.<ext>
  -- in the PhotoStore, local files or Supabase Storage), its type, size and hash,
  -- updated in the same transaction as photo_link, so the link never points at nothing.
  photo_key          text,
  photo_content_type text
    constraint participants_photo_content_type_check
    check (photo_content_type in ('image/jpeg', 'image/png', 'image/gif', 'image/webp')),
  -- The contract's limit: 5 MB (5,242,880 bytes), after metadata is removed.
  photo_size         integer
    constraint participants_photo_size_check check (photo_size between 1 and 5242880),
  -- SHA-256 of the stored bytes: the object's name and the ETag it is served with.
  photo_sha256       text
    constraint participants_photo_sha256_check check (photo_sha256 ~ '^[0-9a-f]{64}$'),
  -- What `q` searches: the names and user_id folded by private.search_key and
  -- joined by chr(31), so that no term matches across two fields.
  search_key         text generated always as (
    private.search_key(first_name || chr(31) || surname || chr(31) || full_name || chr(31) || user_id)
  ) stored,
  -- Set by POST /participants/{id}/erase (private.erase_participant, *_audit.sql).
  erased_at          timestamptz,
  constraint participants_departure_date_check check (departure_date >= arrival_date),
  -- A subgroup or room is only ever held together with its parent.
  constraint participants_sub_group_id_check check (sub_group_id is null or super_group_id is not null),
  constraint participants_room_id_check check (room_id is null or block_id is not null),
  constraint participants_instance_id_fkey foreign key (tenant_id, instance_id) references public.instances (tenant_id, id),
  constraint participants_super_group_id_fkey foreign key (instance_id, super_group_id) references public.supergroups (instance_id, id),
  constraint participants_sub_group_id_fkey foreign key (instance_id, sub_group_id) references public.subgroups (instance_id, id),
  constraint participants_sub_group_id_parent_fkey foreign key (super_group_id, sub_group_id)
    references public.subgroups (parent_supergroup_id, id),
  constraint participants_block_id_fkey foreign key (instance_id, block_id) references public.blocks (instance_id, id),
  constraint participants_room_id_fkey foreign key (instance_id, room_id) references public.rooms (instance_id, id),
  constraint participants_room_id_parent_fkey foreign key (block_id, room_id) references public.rooms (block_id, id),
  -- The four photo columns come together, and the key is exactly the one the row
  -- implies: inside the row's own tenant and participant folder, named by its
  -- hash, with the extension of its type. A key can never point at another
  -- tenant's or another participant's object.
  constraint participants_photo_key_check check (
    (photo_key is null and photo_content_type is null and photo_size is null and photo_sha256 is null)
    or photo_key = tenant_id::text || '/' || id::text || '/' || photo_sha256 || '.' ||
       case photo_content_type
         when 'image/jpeg' then 'jpg'
         when 'image/png' then 'png'
         when 'image/gif' then 'gif'
         when 'image/webp' then 'webp'
       end
  )
);

comment on column public.participants.search_key is
  'What `q` searches: the names and user_id as private.search_key folds them, joined by chr(31). Generated; never written.';
comment on column public.participants.erased_at is
  'When the participant''s personal data was erased (POST /participants/{id}/erase): the row keeps its id and instance, nothing else of the person.';

create unique index participants_user_id_key on public.participants (instance_id, user_id) where deleted_at is null;
-- List shapes: the whole tenant, or one instance, in (created_at, id) order.
create index participants_list on public.participants (tenant_id, created_at, id) where deleted_at is null;
-- tenant_id is carried in the per-instance index so that the page's total,
-- counted under RLS (which checks each row's tenant), is an index-only scan.
create index participants_by_instance on public.participants (instance_id, created_at, id) include (tenant_id)
  where deleted_at is null;
-- Reference filters and the "still referenced" checks of soft deletes.
create index participants_by_super_group on public.participants (super_group_id, created_at, id) where deleted_at is null;
create index participants_by_sub_group on public.participants (sub_group_id, created_at, id) where deleted_at is null;
create index participants_by_block on public.participants (block_id, created_at, id) where deleted_at is null;
create index participants_by_room on public.participants (room_id, created_at, id) where deleted_at is null;
-- POST/GET /photos/user/{userId} accept a participant's user_id, which is
-- unique only per instance: this finds it across the caller's tenant.
create index participants_by_user_id on public.participants (tenant_id, user_id) where deleted_at is null;
-- status=... across the tenant and within an instance, in list order; the
-- counts are index-only scans of these.
create index participants_by_status on public.participants (tenant_id, status, created_at, id) where deleted_at is null;
create index participants_by_instance_status on public.participants (instance_id, status, created_at, id)
  where deleted_at is null;
-- A page of one instance sorted by a name, or of a whole tenant, read in
-- index order: `id` follows the sort key in the same direction, as the list
-- query writes it (functions/resources/listing.ts).
create index participants_by_instance_surname on public.participants (instance_id, surname, id) where deleted_at is null;
create index participants_by_instance_first_name on public.participants (instance_id, first_name, id) where deleted_at is null;
create index participants_by_tenant_surname on public.participants (tenant_id, surname, id) where deleted_at is null;
-- Sync: what changed since a time, deleted rows included.
create index participants_by_updated_at on public.participants (tenant_id, updated_at, id);
-- `q`: the trigram index on the search key, in the schema pg_trgm lives in.
do $$
declare
  v_schema text;
begin
  select n.nspname into v_schema
  from pg_extension e join pg_namespace n on n.oid = e.extnamespace
  where e.extname = 'pg_trgm';
  execute format(
    'create index participants_search_key on public.participants using gin (search_key %I.gin_trgm_ops) where deleted_at is null',
    v_schema
  );
end
$$;

create trigger participants_touch_updated_at before update on public.participants
  for each row execute function private.touch_updated_at();

-- The generated full name: first name and surname, trimmed.
create function private.participant_full_name(p_first_name text, p_surname text) returns text
  language sql immutable
  set search_path = ''
as $$
  select btrim(coalesce(p_first_name, '') || ' ' || coalesce(p_surname, ''))
$$;
grant execute on function private.participant_full_name(text, text) to camp_api;

-- Every write needs a writable instance; each newly set reference must point at
-- a live row, locked in share mode so that a concurrent soft delete of it waits
-- for this write and then refuses (and the other way round: this write waits
-- for the delete and then reports the reference as missing).
--
-- An insert is checked once per statement, not once per row: a trigger reads
-- the inserted rows from a transition table and locks each distinct instance
-- and reference once (a bulk create of 1,000 rows makes a handful of lookups,
-- not five per row, each under RLS). Its locks are taken at the end of the
-- insert, which keeps the guarantee: a soft delete of a referenced row either
-- commits first (the lock then finds the row deleted and refuses) or waits
-- for the lock, and then sees this insert's participants and refuses.
-- Updates, one row at a time, keep a row trigger.

-- full_name is generated when missing on insert.
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

-- On update, full_name follows a name change unless it had been set to
-- something other than the generated name; a reference is checked when this
-- update sets it (one it keeps was checked when set).
create function private.guard_participant_write() returns trigger
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

create trigger participants_guard_write before update on public.participants
  for each row execute function private.guard_participant_write();
create trigger participants_fill_full_name before insert on public.participants
  for each row execute function private.fill_participant_full_name();
create trigger participants_guard_insert after insert on public.participants
  referencing new table as inserted
  for each statement execute function private.guard_participant_insert();

alter table public.participants enable row level security;
create policy "API callers manage the participants of their tenant" on public.participants
  for all to camp_api
  using (tenant_id = (select private.request_tenant_id()))
  with check (tenant_id = (select private.request_tenant_id()));
grant select, insert, update on public.participants to camp_api;

-- Planner statistics: the tenant follows from the instance. Every API
-- statement carries the RLS condition tenant_id = <caller's tenant>, which
-- Postgres would take to be independent of the other conditions: on a
-- database of ten tenants it would expect a tenth of an instance's
-- participants where all of them match, and read and sort the whole instance
-- instead of walking participants_by_instance and stopping after one page.
-- Functional-dependency statistics tell it that instance, group, block and
-- room each determine the tenant (those of the structure tables are with them).
create statistics public.participants_tenant_dependencies (dependencies)
  on tenant_id, instance_id, super_group_id, sub_group_id, block_id, room_id
  from public.participants;

-- The search runs as its owner so that the trigram index can serve it: under
-- RLS the planner may not move the non-leakproof LIKE below the policy, and
-- would check every row of the tenant. It filters on the tenant itself.
-- A term that folds to nothing (only punctuation) finds nobody.
create function private.search_participant_ids(p_term text) returns setof uuid
  language sql stable security definer
  set search_path = ''
as $$
  select p.id
  from public.participants p
  where p.tenant_id = (select private.request_tenant_id())
    and p.deleted_at is null
    and private.search_key($1) <> ''
    and p.search_key like '%' || private.search_key($1) || '%'
$$;
revoke all on function private.search_participant_ids(text) from public;
grant execute on function private.search_participant_ids(text) to camp_api;
