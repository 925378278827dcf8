-- =============================================================================
-- Supergroups and their subgroups
--
-- Membership is held by composite foreign keys: a subgroup's parent must be a
-- supergroup of the subgroup's own instance, and the instance one of the row's
-- own tenant. Names are unique per parent among live rows, whatever their case.
-- =============================================================================

create table public.supergroups (
  id            uuid primary key default gen_random_uuid(),
  tenant_id     uuid not null default private.request_tenant_id(),
  instance_id   uuid not null,
  name          text not null constraint supergroups_name_check check (char_length(btrim(name)) between 1 and 200),
  description   text constraint supergroups_description_check check (char_length(description) <= 2000),
  type          text not null default 'supergroup' constraint supergroups_type_check check (char_length(type) <= 200),
  purpose       text constraint supergroups_purpose_check check (char_length(purpose) <= 2000),
  notifications boolean not null default true,
  created_at    timestamptz not null default now(),
  updated_at    timestamptz not null default now(),
  deleted_at    timestamptz,
  constraint supergroups_instance_id_fkey foreign key (tenant_id, instance_id) references public.instances (tenant_id, id),
  -- Target of the foreign keys that keep subgroups and participants in this instance.
  constraint supergroups_instance_id_id_key unique (instance_id, id)
);

create unique index supergroups_name_key on public.supergroups (instance_id, lower(btrim(name))) where deleted_at is null;
create index supergroups_list on public.supergroups (tenant_id, created_at, id) where deleted_at is null;
create index supergroups_by_instance on public.supergroups (instance_id, created_at, id) where deleted_at is null;

create table public.subgroups (
  id                   uuid primary key default gen_random_uuid(),
  tenant_id            uuid not null default private.request_tenant_id(),
  instance_id          uuid not null,
  parent_supergroup_id uuid not null,
  name                 text not null constraint subgroups_name_check check (char_length(btrim(name)) between 1 and 200),
  description          text constraint subgroups_description_check check (char_length(description) <= 2000),
  type                 text not null default 'subgroup' constraint subgroups_type_check check (char_length(type) <= 200),
  purpose              text constraint subgroups_purpose_check check (char_length(purpose) <= 2000),
  notifications        boolean not null default true,
  created_at           timestamptz not null default now(),
  updated_at           timestamptz not null default now(),
  deleted_at           timestamptz,
  constraint subgroups_instance_id_fkey foreign key (tenant_id, instance_id) references public.instances (tenant_id, id),
  constraint subgroups_parent_supergroup_id_fkey foreign key (instance_id, parent_supergroup_id)
    references public.supergroups (instance_id, id),
  -- Targets of the participant foreign keys: "subgroup in the participant's
  -- instance" and "subgroup belongs to the participant's supergroup".
  constraint subgroups_instance_id_id_key unique (instance_id, id),
  constraint subgroups_parent_supergroup_id_id_key unique (parent_supergroup_id, id)
);

create unique index subgroups_name_key on public.subgroups (parent_supergroup_id, lower(btrim(name))) where deleted_at is null;
create index subgroups_list on public.subgroups (tenant_id, created_at, id) where deleted_at is null;
create index subgroups_by_instance on public.subgroups (instance_id, created_at, id) where deleted_at is null;
create index subgroups_by_parent on public.subgroups (parent_supergroup_id, created_at, id) where deleted_at is null;

create trigger supergroups_touch_updated_at before update on public.supergroups
  for each row execute function private.touch_updated_at();
create trigger subgroups_touch_updated_at before update on public.subgroups
  for each row execute function private.touch_updated_at();

-- Writes need a writable instance; a soft delete needs no live subgroup or
-- participant to still point here.
create function private.guard_supergroup_write() returns trigger
  language plpgsql
  set search_path = ''
as $$
begin
  perform private.lock_writable_instance(new.instance_id);
  if tg_op = 'UPDATE' and new.instance_id is distinct from old.instance_id then
    perform private.lock_writable_instance(old.instance_id);
  end if;
  if tg_op = 'UPDATE' and old.deleted_at is null and new.deleted_at is not null then
    if exists (select from public.subgroups where parent_supergroup_id = old.id and deleted_at is null)
       or exists (select from public.participants where super_group_id = old.id and deleted_at is null) then
      raise exception 'supergroup still has subgroups or participants' using errcode = 'CA409';
    end if;
  end if;
  return new;
end
$$;

-- Writes need a writable instance and a live parent; the share lock on the
-- parent makes a concurrent delete of the parent wait for this write and then
-- see it.
create function private.guard_subgroup_write() returns trigger
  language plpgsql
  set search_path = ''
as $$
begin
  perform private.lock_writable_instance(new.instance_id);
  if tg_op = 'UPDATE' and new.instance_id is distinct from old.instance_id then
    perform private.lock_writable_instance(old.instance_id);
  end if;
  if tg_op = 'INSERT' or new.parent_supergroup_id is distinct from old.parent_supergroup_id then
    perform from public.supergroups s
    where s.id = new.parent_supergroup_id and s.deleted_at is null
    for share;
    if not found then
      raise exception 'supergroup does not exist' using errcode = 'CA400', column = 'parent_supergroup_id';
    end if;
  end if;
  if tg_op = 'UPDATE' and old.deleted_at is null and new.deleted_at is not null then
    if exists (select from public.participants where sub_group_id = old.id and deleted_at is null) then
      raise exception 'subgroup still has participants' using errcode = 'CA409';
    end if;
  end if;
  return new;
end
$$;

create trigger supergroups_guard_write before insert or update on public.supergroups
  for each row execute function private.guard_supergroup_write();
create trigger subgroups_guard_write before insert or update on public.subgroups
  for each row execute function private.guard_subgroup_write();

alter table public.supergroups enable row level security;
create policy "API callers manage the supergroups of their tenant" on public.supergroups
  for all to camp_api
  using (tenant_id = (select private.request_tenant_id()))
  with check (tenant_id = (select private.request_tenant_id()));
grant select, insert, update on public.supergroups to camp_api;

alter table public.subgroups enable row level security;
create policy "API callers manage the subgroups of their tenant" on public.subgroups
  for all to camp_api
  using (tenant_id = (select private.request_tenant_id()))
  with check (tenant_id = (select private.request_tenant_id()));
grant select, insert, update on public.subgroups to camp_api;

-- The instance (and for a subgroup its supergroup) determines the tenant: a
-- functional-dependency statistic tells the planner, which would otherwise take
-- the RLS condition on tenant_id for independent of the instance and
-- underestimate every per-instance lookup (see participants_tenant_dependencies).
create statistics public.supergroups_tenant_dependencies (dependencies) on tenant_id, instance_id from public.supergroups;
create statistics public.subgroups_tenant_dependencies (dependencies)
  on tenant_id, instance_id, parent_supergroup_id from public.subgroups;
