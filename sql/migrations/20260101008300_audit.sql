-- The audit trail: a record of every change, written by the database itself,
-- so the API, bulk work, the CLI and direct SQL are all covered; and erasure.
-- (Users' active flag, keys' name and scopes and the Bearer identity are in
-- *_tenancy.sql; participants.erased_at in *_participants.sql.)

-- -----------------------------------------------------------------------------
-- audit_events: append-only, written by triggers in the same transaction
-- -----------------------------------------------------------------------------

create table public.audit_events (
  id            bigint generated always as identity primary key,
  tenant_id     uuid not null references public.tenants (id) on delete cascade,
  occurred_at   timestamptz not null default now(),
  actor_user_id uuid,
  actor_email   text,
  -- api_key, bearer, or operator (the CLI, a migration, SQL by hand).
  actor_via     text not null constraint audit_events_actor_via_check check (actor_via in ('api_key', 'bearer', 'operator')),
  actor_key_id  uuid,
  request_id    text,
  action        text not null constraint audit_events_action_check check (action in ('create', 'update', 'delete', 'erase')),
  resource_type text not null,
  resource_id   uuid not null,
  -- {field: [before, after]} for the fields that changed. A create stores its fields as
  -- {field: value}, the cheapest form to write in a bulk insert; private.audit_changes_of
  -- gives every reader the [null, value] form.
  changes       jsonb not null default '{}'
);

comment on table public.audit_events is
  'Who changed what, when: one event per created, updated, deleted or erased record, written by triggers in the writing transaction. Append-only: only private.prune_audit_events and private.erase_participant may change it.';

create index audit_events_tenant_time on public.audit_events (tenant_id, occurred_at desc, id desc);
create index audit_events_resource on public.audit_events (tenant_id, resource_type, resource_id, occurred_at desc);

alter table public.audit_events enable row level security;
create policy "API callers read the audit trail of their tenant" on public.audit_events
  for select to camp_api
  using (tenant_id = (select private.request_tenant_id()));
grant select on public.audit_events to camp_api;

-- An event's changes as {field: [before, after]}, whatever its action.
create function private.audit_changes_of(p_action text, p_changes jsonb) returns jsonb
  language sql immutable
  set search_path = ''
as $$
  select case when p_action <> 'create' then p_changes
    else (select coalesce(jsonb_object_agg(f.key, jsonb_build_array(null, f.value)), '{}') from jsonb_each(p_changes) f) end
$$;
grant execute on function private.audit_changes_of(text, jsonb) to camp_api, camp_reporting;

-- Append-only, for every role, the owner included: only the two functions
-- below, which set camp.audit_rewrite for their own transaction, may update
-- or delete events.
create function private.guard_audit_events() returns trigger
  language plpgsql
  set search_path = ''
as $$
begin
  if coalesce(current_setting('camp.audit_rewrite', true), '') <> 'on' then
    raise exception 'audit events are append-only' using errcode = '42501';
  end if;
  return case when tg_op = 'DELETE' then old else new end;
end
$$;

create trigger audit_events_append_only before update or delete on public.audit_events
  for each row execute function private.guard_audit_events();
create trigger audit_events_no_truncate before truncate on public.audit_events
  for each statement execute function private.guard_audit_events();

-- The actor of the writing transaction, from the request's claims; none (the
-- CLI, a migration, SQL by hand) is the operator.
create function private.audit_actor() returns jsonb
  language sql stable
  set search_path = ''
as $$
  select coalesce(nullif(current_setting('request.jwt.claims', true), '')::jsonb, '{}'::jsonb)
$$;

-- One statement-level trigger per table: a bulk create of a thousand rows is
-- one insert of a thousand events, not a thousand trigger calls.
create function private.audit_changes() returns trigger
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_actor jsonb := private.audit_actor();
  v_erasing boolean := coalesce(current_setting('camp.erasing', true), '') = 'on';
  v_type text := tg_argv[0];
  -- Never written into an event: secrets, generated and bookkeeping columns.
  v_hidden text[] := array['tenant_id', 'key_hash', 'search_key', 'created_at', 'updated_at', 'auth_subject'];
begin
  if tg_op = 'INSERT' then
    insert into public.audit_events
      (tenant_id, actor_user_id, actor_email, actor_via, actor_key_id, request_id, action, resource_type, resource_id, changes)
    select n.tenant_id, (v_actor ->> 'sub')::uuid, v_actor ->> 'email', coalesce(v_actor ->> 'via', 'operator'),
           (v_actor ->> 'key_id')::uuid, v_actor ->> 'request_id', 'create', v_type, n.id,
           -- A create's fields are stored as values; readers see them as [null, value] (audit_changes_of).
           jsonb_strip_nulls(to_jsonb(n) - v_hidden)
    from new_rows n;
  else
    insert into public.audit_events
      (tenant_id, actor_user_id, actor_email, actor_via, actor_key_id, request_id, action, resource_type, resource_id, changes)
    select n.tenant_id, (v_actor ->> 'sub')::uuid, v_actor ->> 'email', coalesce(v_actor ->> 'via', 'operator'),
           (v_actor ->> 'key_id')::uuid, v_actor ->> 'request_id',
           case when v_erasing then 'erase'
                when (to_jsonb(o) ->> 'deleted_at') is null and (to_jsonb(n) ->> 'deleted_at') is not null then 'delete'
                else 'update' end,
           v_type, n.id,
           case when v_erasing then '{}'::jsonb else (
             select coalesce(jsonb_object_agg(f.key, jsonb_build_array(to_jsonb(o) -> f.key, f.value)), '{}')
             from jsonb_each(to_jsonb(n) - v_hidden) f
             where f.value is distinct from to_jsonb(o) -> f.key) end
    from new_rows n join old_rows o on o.id = n.id
    -- An update that changed nothing worth recording (last_used_at of a key) is not an event.
    where v_erasing or exists (
      select from jsonb_each(to_jsonb(n) - v_hidden - 'last_used_at') f
      where f.value is distinct from to_jsonb(o) -> f.key);
  end if;
  return null;
end
$$;

do $$
declare
  t record;
begin
  for t in select * from (values
    ('instances', 'instance'), ('supergroups', 'supergroup'), ('subgroups', 'subgroup'), ('blocks', 'block'),
    ('rooms', 'room'), ('participants', 'participant'), ('users', 'user'), ('api_keys', 'api_key')
  ) as v(tbl, kind)
  loop
    execute format(
      'create trigger %I after insert on public.%I referencing new table as new_rows for each statement execute function private.audit_changes(%L)',
      t.tbl || '_audit_insert', t.tbl, t.kind);
    execute format(
      'create trigger %I after update on public.%I referencing old table as old_rows new table as new_rows for each statement execute function private.audit_changes(%L)',
      t.tbl || '_audit_update', t.tbl, t.kind);
  end loop;
end
$$;

-- Retention (camp audit prune): the one way events leave.
create function private.prune_audit_events(p_before timestamptz) returns bigint
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_count bigint;
begin
  perform set_config('camp.audit_rewrite', 'on', true);
  delete from public.audit_events where occurred_at < p_before;
  get diagnostics v_count = row_count;
  perform set_config('camp.audit_rewrite', 'off', true);
  return v_count;
end
$$;
revoke all on function private.prune_audit_events(timestamptz) from public;

-- Erasure: the participant's personal data goes from the row and from every
-- earlier event's changes (which keep the field names, not the values); the
-- row keeps its id and instance, and is deleted. The caller deletes the
-- photo object once this has committed.
create function private.erase_participant(p_id uuid) returns text
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_tenant uuid := private.request_tenant_id();
  v_photo text;
begin
  select photo_key into v_photo from public.participants
  where id = p_id and tenant_id = v_tenant and erased_at is null
  for update;
  if not found then
    raise exception 'participant not found' using errcode = 'CA404';
  end if;
  perform set_config('camp.erasing', 'on', true);
  update public.participants set
    user_id = 'erased-' || id::text, first_name = 'Erased', surname = 'Erased', full_name = 'Erased',
    gender = null, pronouns = null, date_of_birth = null, school_year = null, rank = null, unit_name = null,
    school_institute = null, arrival_date = null, departure_date = null, room_number = null,
    photo_link = null, photo_key = null, photo_content_type = null, photo_size = null, photo_sha256 = null,
    erased_at = now(), deleted_at = coalesce(deleted_at, now())
  where id = p_id;
  perform set_config('camp.erasing', 'off', true);
  perform set_config('camp.audit_rewrite', 'on', true);
  update public.audit_events e
  set changes = (
    select coalesce(jsonb_object_agg(f.key, case when e.action = 'create' then '"erased"'::jsonb else '["erased", "erased"]'::jsonb end), '{}')
    from jsonb_each(e.changes) f)
  where e.tenant_id = v_tenant and e.resource_type = 'participant' and e.resource_id = p_id and e.action <> 'erase';
  perform set_config('camp.audit_rewrite', 'off', true);
  return v_photo;
end
$$;
revoke all on function private.erase_participant(uuid) from public;
grant execute on function private.erase_participant(uuid) to camp_api;

-- The reporting schema's view of the trail, for reporting roles and Supabase users.
create policy "Reporting roles read their tenant's audit trail" on public.audit_events
  for select to camp_reporting
  using (tenant_id = (select private.reporting_tenant_id()));
grant select (id, occurred_at, actor_user_id, actor_email, actor_via, actor_key_id, request_id, action, resource_type,
  resource_id, changes) on public.audit_events to camp_reporting;

create view reporting.audit_events with (security_invoker = true) as
  select id, occurred_at, actor_user_id, actor_email, actor_via, actor_key_id, request_id, action, resource_type, resource_id,
         private.audit_changes_of(action, changes) as changes
  from public.audit_events;
comment on view reporting.audit_events is
  'Who changed what and when in the tenant: one row per created, updated, deleted or erased record; changes as {field: [before, after]}.';
grant select on reporting.audit_events to camp_reporting;
