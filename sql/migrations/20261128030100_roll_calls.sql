-- =============================================================================
-- On site, part 2: roll calls
--
-- A roll call takes the participants present in a scope (an instance, a
-- supergroup, a subgroup, a block or a room) as `expected` when it opens;
-- staff mark them present, absent or excused (a later mark of a participant
-- wins); closing it answers who is missing (expected, not marked present or
-- excused) and freezes it. Written only through the doors below, which check
-- the caller's attendance access (*_attendance.sql); read by the API role
-- under row-level security.
-- =============================================================================

create table public.roll_calls (
  id             uuid primary key default gen_random_uuid(),
  tenant_id      uuid not null default private.request_tenant_id(),
  instance_id    uuid not null,
  -- At most one scope within the instance; none: the whole instance.
  super_group_id uuid,
  sub_group_id   uuid,
  block_id       uuid,
  room_id        uuid,
  name           text constraint roll_calls_name_check check (char_length(name) <= 200),
  status         text not null default 'open' constraint roll_calls_status_check check (status in ('open', 'closed')),
  created_by     uuid,
  closed_by      uuid,
  closed_at      timestamptz,
  -- Frozen when closed: how many were missing.
  missing_count  int,
  created_at     timestamptz not null default now(),
  updated_at     timestamptz not null default now(),
  constraint roll_calls_one_scope_check
    check (num_nonnulls(super_group_id, sub_group_id, block_id, room_id) <= 1),
  constraint roll_calls_instance_id_fkey foreign key (tenant_id, instance_id) references public.instances (tenant_id, id),
  constraint roll_calls_tenant_id_id_key unique (tenant_id, id)
);
create index roll_calls_by_instance on public.roll_calls (instance_id, created_at, id);
create index roll_calls_tenant_id on public.roll_calls (tenant_id);
create trigger roll_calls_touch_updated_at before update on public.roll_calls
  for each row execute function private.touch_updated_at();
comment on table public.roll_calls is
  'Head counts: who was expected (present in the scope when it opened), who was marked, who was missing when it closed. Written only through private.roll_call_*.';

-- Who a roll call expected: the participants present in its scope when it opened.
create table public.roll_call_expected (
  roll_call_id   uuid not null,
  participant_id uuid not null,
  tenant_id      uuid not null default private.request_tenant_id(),
  primary key (roll_call_id, participant_id),
  constraint roll_call_expected_roll_call_id_fkey foreign key (tenant_id, roll_call_id)
    references public.roll_calls (tenant_id, id) on delete cascade,
  constraint roll_call_expected_participant_id_fkey foreign key (tenant_id, participant_id)
    references public.participants (tenant_id, id)
);
create index roll_call_expected_by_participant on public.roll_call_expected (participant_id);
create index roll_call_expected_tenant_id on public.roll_call_expected (tenant_id);

-- The current mark of each participant in a roll call (a later mark replaces
-- it; the audit trail keeps every one).
create table public.roll_call_marks (
  id             uuid primary key default gen_random_uuid(),
  roll_call_id   uuid not null,
  participant_id uuid not null,
  tenant_id      uuid not null default private.request_tenant_id(),
  mark           text not null constraint roll_call_marks_mark_check check (mark in ('present', 'absent', 'excused')),
  marked_by      uuid,
  marked_at      timestamptz not null default now(),
  constraint roll_call_marks_participant_key unique (roll_call_id, participant_id),
  constraint roll_call_marks_roll_call_id_fkey foreign key (tenant_id, roll_call_id)
    references public.roll_calls (tenant_id, id) on delete cascade,
  constraint roll_call_marks_participant_id_fkey foreign key (tenant_id, participant_id)
    references public.participants (tenant_id, id)
);
create index roll_call_marks_by_participant on public.roll_call_marks (participant_id);
create index roll_call_marks_tenant_id on public.roll_call_marks (tenant_id);

alter table public.roll_calls enable row level security;
alter table public.roll_call_expected enable row level security;
alter table public.roll_call_marks enable row level security;
create policy "API callers read the roll calls of their tenant" on public.roll_calls
  for select to camp_api using (tenant_id = (select private.request_tenant_id()));
create policy "API callers read who roll calls expected" on public.roll_call_expected
  for select to camp_api using (tenant_id = (select private.request_tenant_id()));
create policy "API callers read roll call marks" on public.roll_call_marks
  for select to camp_api using (tenant_id = (select private.request_tenant_id()));
grant select on public.roll_calls, public.roll_call_expected, public.roll_call_marks to camp_api;
revoke all on public.roll_calls, public.roll_call_expected, public.roll_call_marks from anon, authenticated;

create trigger roll_call_expected_hold_live_participant
  before insert or update on public.roll_call_expected
  for each row execute function private.hold_live_participant();
create trigger roll_call_marks_hold_live_participant
  before insert or update on public.roll_call_marks
  for each row execute function private.hold_live_participant();

-- Every roll call and every mark is in the audit trail.
create trigger roll_calls_audit_insert after insert on public.roll_calls
  referencing new table as new_rows for each statement execute function private.audit_changes('roll_call');
create trigger roll_calls_audit_update after update on public.roll_calls
  referencing old table as old_rows new table as new_rows for each statement execute function private.audit_changes('roll_call');
create trigger roll_call_marks_audit_insert after insert on public.roll_call_marks
  referencing new table as new_rows for each statement execute function private.audit_changes('roll_call_mark');
create trigger roll_call_marks_audit_update after update on public.roll_call_marks
  referencing old table as old_rows new table as new_rows for each statement execute function private.audit_changes('roll_call_mark');

-- -----------------------------------------------------------------------------
-- Reading
-- -----------------------------------------------------------------------------

-- A roll call as the API writes it, with its expected ids, marks, the ids
-- missing so far (or when it closed) and the counts. Runs as the caller:
-- row-level security applies.
create function private.roll_call_json(p_id uuid) returns jsonb
  language sql
  stable
  set search_path = ''
as $$
  with rc as (select * from public.roll_calls r where r.id = p_id),
  expected as (select e.participant_id from public.roll_call_expected e where e.roll_call_id = p_id),
  marks as (select m.* from public.roll_call_marks m where m.roll_call_id = p_id),
  missing as (
    select e.participant_id from expected e
    where not exists (select from marks m where m.participant_id = e.participant_id and m.mark in ('present', 'excused'))
  )
  select jsonb_build_object(
    'id', rc.id, 'instance_id', rc.instance_id, 'super_group_id', rc.super_group_id, 'sub_group_id', rc.sub_group_id,
    'block_id', rc.block_id, 'room_id', rc.room_id, 'name', rc.name, 'status', rc.status,
    'created_by', rc.created_by, 'closed_by', rc.closed_by,
    'created_at', private.iso_time(rc.created_at), 'updated_at', private.iso_time(rc.updated_at),
    'closed_at', private.iso_time(rc.closed_at),
    'expected', coalesce((select jsonb_agg(e.participant_id order by e.participant_id) from expected e), '[]'),
    'marks', coalesce((select jsonb_agg(jsonb_build_object('participant_id', m.participant_id, 'mark', m.mark,
                         'marked_by', m.marked_by, 'marked_at', private.iso_time(m.marked_at)) order by m.marked_at, m.participant_id)
                       from marks m), '[]'),
    'missing', coalesce((select jsonb_agg(x.participant_id order by x.participant_id) from missing x), '[]'),
    'counts', jsonb_build_object(
      'expected', (select count(*) from expected),
      'present', (select count(*) from marks m where m.mark = 'present'),
      'absent', (select count(*) from marks m where m.mark = 'absent'),
      'excused', (select count(*) from marks m where m.mark = 'excused'),
      'missing', (select count(*) from missing)))
  from rc
$$;
revoke all on function private.roll_call_json(uuid) from public;
grant execute on function private.roll_call_json(uuid) to camp_api;

-- -----------------------------------------------------------------------------
-- The doors
-- -----------------------------------------------------------------------------

-- Refuses (CA403) a caller who may not record movements and roll calls.
create function private.attendance_gate() returns void
  language plpgsql
  stable
  security definer
  set search_path = ''
as $$
begin
  if private.attendance_access() <> 'write' then
    raise exception 'roll calls need a key with the write or attendance scope' using errcode = 'CA403';
  end if;
end
$$;
revoke all on function private.attendance_gate() from public;

-- Opens a roll call p = {instance_id, super_group_id? | sub_group_id? |
-- block_id? | room_id?, name?}: its expected are the live participants of
-- the scope whose presence is `in` now. Answers the roll call.
create function private.roll_call_open(p jsonb) returns jsonb
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_tenant uuid := private.request_tenant_id();
  v_instance uuid := (p ->> 'instance_id')::uuid;
  v_super uuid := (p ->> 'super_group_id')::uuid;
  v_sub uuid := (p ->> 'sub_group_id')::uuid;
  v_block uuid := (p ->> 'block_id')::uuid;
  v_room uuid := (p ->> 'room_id')::uuid;
  v_id uuid;
begin
  perform private.attendance_gate();
  if not exists (select from public.instances i where i.id = v_instance and i.tenant_id = v_tenant and i.deleted_at is null) then
    raise exception 'does not exist' using errcode = 'CA400', column = 'instance_id';
  end if;
  perform private.lock_writable_instance(v_instance);
  if v_super is not null and not exists (
    select from public.supergroups s where s.id = v_super and s.instance_id = v_instance and s.deleted_at is null) then
    raise exception 'is not a supergroup of instance_id' using errcode = 'CA400', column = 'super_group_id';
  end if;
  if v_sub is not null and not exists (
    select from public.subgroups s where s.id = v_sub and s.instance_id = v_instance and s.deleted_at is null) then
    raise exception 'is not a subgroup of instance_id' using errcode = 'CA400', column = 'sub_group_id';
  end if;
  if v_block is not null and not exists (
    select from public.blocks b where b.id = v_block and b.instance_id = v_instance and b.deleted_at is null) then
    raise exception 'is not a block of instance_id' using errcode = 'CA400', column = 'block_id';
  end if;
  if v_room is not null and not exists (
    select from public.rooms r where r.id = v_room and r.instance_id = v_instance and r.deleted_at is null) then
    raise exception 'is not a room of instance_id' using errcode = 'CA400', column = 'room_id';
  end if;
  insert into public.roll_calls (instance_id, super_group_id, sub_group_id, block_id, room_id, name, created_by)
  values (v_instance, v_super, v_sub, v_block, v_room, p ->> 'name', (private.audit_actor() ->> 'sub')::uuid)
  returning id into v_id;
  insert into public.roll_call_expected (roll_call_id, participant_id)
  select v_id, pt.id
  from public.participants pt
  where pt.tenant_id = v_tenant and pt.instance_id = v_instance and pt.deleted_at is null and pt.presence = 'in'
    and (v_super is null or pt.super_group_id = v_super)
    and (v_sub is null or pt.sub_group_id = v_sub)
    and (v_block is null or pt.block_id = v_block)
    and (v_room is null or pt.room_id = v_room);
  return private.roll_call_json(v_id);
end
$$;

-- The roll call, locked, open: CA404 when it is not the tenant's, CA409 when closed.
create function private.open_roll_call(p_id uuid) returns public.roll_calls
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_call public.roll_calls;
begin
  select * into v_call from public.roll_calls r where r.id = p_id and r.tenant_id = private.request_tenant_id() for update;
  if not found then
    raise exception 'roll call not found' using errcode = 'CA404';
  end if;
  if v_call.status <> 'open' then
    raise exception 'the roll call is closed' using errcode = 'CA409', column = 'status';
  end if;
  perform private.lock_writable_instance(v_call.instance_id);
  return v_call;
end
$$;
revoke all on function private.open_roll_call(uuid) from public;

-- Records marks p_marks = [{participant_id, mark}], in order: a later mark of
-- a participant (in this request or a later one) wins. A participant must be
-- a live participant of the roll call's instance (expected or not: a child
-- found who was not expected is marked too).
create function private.roll_call_mark(p_id uuid, p_marks jsonb) returns jsonb
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_call public.roll_calls;
  v_stray int;
begin
  perform private.attendance_gate();
  v_call := private.open_roll_call(p_id);
  select min(m.n) into v_stray
  from jsonb_array_elements(p_marks) with ordinality as m(value, n)
  where not exists (
    select from public.participants pt
    where pt.id = (m.value ->> 'participant_id')::uuid and pt.tenant_id = v_call.tenant_id
      and pt.instance_id = v_call.instance_id and pt.deleted_at is null);
  if v_stray is not null then
    raise exception 'is not a participant of the roll call''s instance' using errcode = 'CA400',
      column = format('marks[%s].participant_id', v_stray - 1);
  end if;
  insert into public.roll_call_marks as rm (roll_call_id, participant_id, mark, marked_by)
  select distinct on ((m.value ->> 'participant_id')::uuid)
         p_id, (m.value ->> 'participant_id')::uuid, m.value ->> 'mark', (private.audit_actor() ->> 'sub')::uuid
  from jsonb_array_elements(p_marks) with ordinality as m(value, n)
  order by (m.value ->> 'participant_id')::uuid, m.n desc
  on conflict (roll_call_id, participant_id) do update
  set mark = excluded.mark, marked_by = excluded.marked_by, marked_at = now();
  return private.roll_call_json(p_id);
end
$$;

-- Closes the roll call: who is missing is frozen (missing_count); answers it.
create function private.roll_call_close(p_id uuid) returns jsonb
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_call public.roll_calls;
  v_json jsonb;
begin
  perform private.attendance_gate();
  v_call := private.open_roll_call(p_id);
  v_json := private.roll_call_json(p_id);
  update public.roll_calls
  set status = 'closed', closed_at = now(), closed_by = (private.audit_actor() ->> 'sub')::uuid,
      missing_count = (v_json -> 'counts' ->> 'missing')::int
  where id = v_call.id;
  return private.roll_call_json(p_id);
end
$$;

do $$
declare
  f text;
begin
  foreach f in array array['private.roll_call_open(jsonb)', 'private.roll_call_mark(uuid, jsonb)', 'private.roll_call_close(uuid)']
  loop
    execute format('revoke all on function %s from public', f);
    execute format('grant execute on function %s to camp_api', f);
  end loop;
end
$$;

-- -----------------------------------------------------------------------------
-- Erasure
-- -----------------------------------------------------------------------------

-- Erasing a participant removes its marks and its places in roll calls'
-- expected (the counts frozen at closing stay: they name nobody), and the
-- values of its marks' audit events.
create function private.erase_roll_calls_of_participant() returns trigger
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_ids uuid[];
begin
  v_ids := array(select m.id from public.roll_call_marks m where m.participant_id = new.id);
  delete from public.roll_call_marks where participant_id = new.id;
  delete from public.roll_call_expected where participant_id = new.id;
  perform set_config('camp.audit_rewrite', 'on', true);
  update public.audit_events e
  set changes = (
    select coalesce(jsonb_object_agg(f.key, case when e.action = 'create' then '"erased"'::jsonb else '["erased", "erased"]'::jsonb end), '{}')
    from jsonb_each(e.changes) f)
  where e.tenant_id = new.tenant_id
    and e.resource_type = 'roll_call_mark'
    and e.resource_id = any (v_ids)
    and e.changes <> '{}'::jsonb;
  perform set_config('camp.audit_rewrite', 'off', true);
  return null;
end
$$;
revoke all on function private.erase_roll_calls_of_participant() from public;

create trigger participants_erase_roll_calls after update of erased_at on public.participants
  for each row when (old.erased_at is null and new.erased_at is not null)
  execute function private.erase_roll_calls_of_participant();
