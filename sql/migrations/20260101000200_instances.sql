-- =============================================================================
-- Instances: a tenant's camps or sessions
--
-- Everything else (groups, blocks, rooms, participants) lives in an instance.
-- An archived instance is read-only: writes to it, or to anything in it, fail
-- with CA409 until its status changes. Deletes are soft (deleted_at).
--
-- Errors raised by the rules in these migrations use two custom SQLSTATEs that
-- the API maps in one place: CA400 (bad reference, reported as 400 with the
-- field in the error's COLUMN) and CA409 (conflict with the data's state, 409).
-- =============================================================================

create table public.instances (
  id          uuid primary key default gen_random_uuid(),
  tenant_id   uuid not null default private.request_tenant_id() references public.tenants (id),
  name        text not null constraint instances_name_check check (char_length(btrim(name)) between 1 and 200),
  description text constraint instances_description_check check (char_length(description) <= 2000),
  status      text not null default 'upcoming'
              constraint instances_status_check check (status in ('upcoming', 'active', 'completed', 'archived')),
  start_date  date,
  end_date    date,
  location    text constraint instances_location_check check (char_length(location) <= 200),
  created_at  timestamptz not null default now(),
  updated_at  timestamptz not null default now(),
  deleted_at  timestamptz,
  constraint instances_end_date_check check (end_date >= start_date),
  -- Target of the composite foreign keys that keep every row in its tenant.
  constraint instances_tenant_id_id_key unique (tenant_id, id)
);

-- Serves the tenant policy and the list order (created_at, id).
create index instances_list on public.instances (tenant_id, created_at, id) where deleted_at is null;

create trigger instances_touch_updated_at before update on public.instances
  for each row execute function private.touch_updated_at();

alter table public.instances enable row level security;
create policy "API callers manage the instances of their tenant" on public.instances
  for all to camp_api
  using (tenant_id = (select private.request_tenant_id()))
  with check (tenant_id = (select private.request_tenant_id()));
-- No delete grant: the API deletes softly, so a hard delete is never needed.
grant select, insert, update on public.instances to camp_api;

-- Called by every write to a row that lives in an instance. Takes a share lock
-- on the instance row, so a concurrent archive or delete of the instance waits
-- for this write to commit (and then sees it), and checks that the instance
-- exists in the caller's tenant (RLS applies: this runs as the caller) and is
-- not archived.
create function private.lock_writable_instance(p_instance_id uuid) returns void
  language plpgsql
  set search_path = ''
as $$
declare
  v_status text;
begin
  select i.status into v_status
  from public.instances i
  where i.id = p_instance_id and i.deleted_at is null
  for share;
  if not found then
    raise exception 'instance does not exist' using errcode = 'CA400', column = 'instance_id';
  end if;
  if v_status = 'archived' then
    raise exception 'instance is archived and read-only' using errcode = 'CA409', column = 'instance_id';
  end if;
end
$$;
grant execute on function private.lock_writable_instance(uuid) to camp_api;

-- An archived instance takes no write but the one that un-archives it; a
-- soft delete is refused while anything live still sits in the instance.
create function private.guard_instance_write() returns trigger
  language plpgsql
  set search_path = ''
as $$
begin
  if old.status = 'archived' and new.status = 'archived' then
    raise exception 'instance is archived and read-only' using errcode = 'CA409', column = 'status';
  end if;
  if old.deleted_at is null and new.deleted_at is not null then
    -- Subgroups and rooms need a live parent, so checking these three covers all.
    if exists (select from public.supergroups where instance_id = old.id and deleted_at is null)
       or exists (select from public.blocks where instance_id = old.id and deleted_at is null)
       or exists (select from public.participants where instance_id = old.id and deleted_at is null) then
      raise exception 'instance still holds groups, blocks or participants' using errcode = 'CA409';
    end if;
  end if;
  return new;
end
$$;

create trigger instances_guard_write before update on public.instances
  for each row execute function private.guard_instance_write();
