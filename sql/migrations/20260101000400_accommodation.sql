-- =============================================================================
-- Accommodation: blocks and the rooms in them
--
-- Same shape as the groups: a room's block must be a block of the room's own
-- instance (composite foreign key); block names are unique per instance and
-- room numbers per block, among live rows, whatever their case.
-- =============================================================================

create table public.blocks (
  id          uuid primary key default gen_random_uuid(),
  tenant_id   uuid not null default private.request_tenant_id(),
  instance_id uuid not null,
  name        text not null constraint blocks_name_check check (char_length(btrim(name)) between 1 and 200),
  description text constraint blocks_description_check check (char_length(description) <= 2000),
  created_at  timestamptz not null default now(),
  updated_at  timestamptz not null default now(),
  deleted_at  timestamptz,
  constraint blocks_instance_id_fkey foreign key (tenant_id, instance_id) references public.instances (tenant_id, id),
  constraint blocks_instance_id_id_key unique (instance_id, id)
);

create unique index blocks_name_key on public.blocks (instance_id, lower(btrim(name))) where deleted_at is null;
create index blocks_list on public.blocks (tenant_id, created_at, id) where deleted_at is null;
create index blocks_by_instance on public.blocks (instance_id, created_at, id) where deleted_at is null;

create table public.rooms (
  id          uuid primary key default gen_random_uuid(),
  tenant_id   uuid not null default private.request_tenant_id(),
  instance_id uuid not null,
  block_id    uuid not null,
  room_number text not null constraint rooms_room_number_check check (char_length(btrim(room_number)) between 1 and 200),
  name        text constraint rooms_name_check check (char_length(name) <= 200),
  capacity    integer constraint rooms_capacity_check check (capacity >= 0),
  created_at  timestamptz not null default now(),
  updated_at  timestamptz not null default now(),
  deleted_at  timestamptz,
  constraint rooms_instance_id_fkey foreign key (tenant_id, instance_id) references public.instances (tenant_id, id),
  constraint rooms_block_id_fkey foreign key (instance_id, block_id) references public.blocks (instance_id, id),
  -- Targets of the participant foreign keys: "room in the participant's
  -- instance" and "room belongs to the participant's block".
  constraint rooms_instance_id_id_key unique (instance_id, id),
  constraint rooms_block_id_id_key unique (block_id, id)
);

create unique index rooms_room_number_key on public.rooms (block_id, lower(btrim(room_number))) where deleted_at is null;
create index rooms_list on public.rooms (tenant_id, created_at, id) where deleted_at is null;
create index rooms_by_instance on public.rooms (instance_id, created_at, id) where deleted_at is null;
create index rooms_by_block on public.rooms (block_id, created_at, id) where deleted_at is null;

create trigger blocks_touch_updated_at before update on public.blocks
  for each row execute function private.touch_updated_at();
create trigger rooms_touch_updated_at before update on public.rooms
  for each row execute function private.touch_updated_at();

create function private.guard_block_write() returns trigger
  language plpgsql
  set search_path = ''
as $$
begin
  perform private.lock_writable_instance(new.instance_id);
  if tg_op = 'UPDATE' and new.instance_id is distinct from old.instance_id then
    perform private.lock_writable_instance(old.instance_id);
  end if;
  if tg_op = 'UPDATE' and old.deleted_at is null and new.deleted_at is not null then
    if exists (select from public.rooms where block_id = old.id and deleted_at is null)
       or exists (select from public.participants where block_id = old.id and deleted_at is null) then
      raise exception 'block still has rooms or participants' using errcode = 'CA409';
    end if;
  end if;
  return new;
end
$$;

create function private.guard_room_write() returns trigger
  language plpgsql
  set search_path = ''
as $$
begin
  perform private.lock_writable_instance(new.instance_id);
  if tg_op = 'UPDATE' and new.instance_id is distinct from old.instance_id then
    perform private.lock_writable_instance(old.instance_id);
  end if;
  if tg_op = 'INSERT' or new.block_id is distinct from old.block_id then
    perform from public.blocks b
    where b.id = new.block_id and b.deleted_at is null
    for share;
    if not found then
      raise exception 'block does not exist' using errcode = 'CA400', column = 'block_id';
    end if;
  end if;
  if tg_op = 'UPDATE' and old.deleted_at is null and new.deleted_at is not null then
    if exists (select from public.participants where room_id = old.id and deleted_at is null) then
      raise exception 'room still has participants' using errcode = 'CA409';
    end if;
  end if;
  return new;
end
$$;

create trigger blocks_guard_write before insert or update on public.blocks
  for each row execute function private.guard_block_write();
create trigger rooms_guard_write before insert or update on public.rooms
  for each row execute function private.guard_room_write();

alter table public.blocks enable row level security;
create policy "API callers manage the blocks of their tenant" on public.blocks
  for all to camp_api
  using (tenant_id = (select private.request_tenant_id()))
  with check (tenant_id = (select private.request_tenant_id()));
grant select, insert, update on public.blocks to camp_api;

alter table public.rooms enable row level security;
create policy "API callers manage the rooms of their tenant" on public.rooms
  for all to camp_api
  using (tenant_id = (select private.request_tenant_id()))
  with check (tenant_id = (select private.request_tenant_id()));
grant select, insert, update on public.rooms to camp_api;

-- The instance (and for a room its block) determines the tenant: a
-- functional-dependency statistic tells the planner, which would otherwise take
-- the RLS condition on tenant_id for independent of the instance and
-- underestimate every per-instance lookup (see participants_tenant_dependencies).
create statistics public.blocks_tenant_dependencies (dependencies) on tenant_id, instance_id from public.blocks;
create statistics public.rooms_tenant_dependencies (dependencies) on tenant_id, instance_id, block_id from public.rooms;
