-- Admin self-service and an audit trail: users that can be deactivated, keys
-- with a name and scopes, and a record of every change written by the
-- database itself, so the API, bulk work, the CLI and direct SQL are all
-- covered.

-- -----------------------------------------------------------------------------
-- users: active, managed by admins over HTTP
-- -----------------------------------------------------------------------------

alter table public.users add column active boolean not null default true;
comment on column public.users.active is
  'A deactivated user keeps their history but cannot authenticate: their keys are revoked and their Bearer tokens refused.';

create policy "API callers add users to their tenant" on public.users
  for insert to camp_api
  with check (tenant_id = (select private.request_tenant_id()));
create policy "API callers change the users of their tenant" on public.users
  for update to camp_api
  using (tenant_id = (select private.request_tenant_id()))
  with check (tenant_id = (select private.request_tenant_id()));
grant insert (tenant_id, email, role) on public.users to camp_api;
grant update (role, active) on public.users to camp_api;

-- Deactivating a user revokes their keys in the same transaction; and the
-- last active admin of a tenant can be neither demoted nor deactivated. The
-- tenant row is locked first, so two admins demoting each other at once are
-- taken one after the other and the second sees the first.
create function private.guard_user_change() returns trigger
  language plpgsql
  security definer
  set search_path = ''
as $$
begin
  if old.role = 'admin' and old.active and (new.role <> 'admin' or not new.active) then
    perform from public.tenants where id = old.tenant_id for update;
    if not exists (
      select from public.users u
      where u.tenant_id = old.tenant_id and u.id <> old.id and u.role = 'admin' and u.active
    ) then
      raise exception 'the last active admin of a tenant cannot be demoted or deactivated'
        using errcode = 'CA409', column = case when not new.active then 'active' else 'role' end;
    end if;
  end if;
  if old.active and not new.active then
    update public.api_keys set revoked_at = now() where user_id = old.id and revoked_at is null;
  end if;
  return new;
end
$$;

create trigger users_guard_change before update of role, active on public.users
  for each row execute function private.guard_user_change();

-- -----------------------------------------------------------------------------
-- api_keys: a name and scopes
-- -----------------------------------------------------------------------------

alter table public.api_keys
  add column name text constraint api_keys_name_check check (char_length(name) between 1 and 100),
  add column scopes text[] not null default '{read,write}'
    constraint api_keys_scopes_check check (scopes in ('{read}', '{read,write}'));
comment on column public.api_keys.scopes is
  'What the key may do: {read} (GET and HEAD only) or {read,write} (everything its user''s role allows).';
grant select (name, scopes) on public.api_keys to camp_api;
grant insert (name, scopes) on public.api_keys to camp_api;

-- The key lookup now also returns the key's scopes, and only for an active user.
drop function private.authenticate_api_key(bytea);
create function private.authenticate_api_key(p_key_hash bytea)
  returns table (key_id uuid, tenant_id uuid, user_id uuid, email text, role text, scopes text[])
  language plpgsql
  security definer
  set search_path = ''
as $$
begin
  return query
    with live as (
      select k.id, k.tenant_id, k.user_id, k.last_used_at, k.scopes
      from public.api_keys k
      where k.key_hash = p_key_hash
        and k.revoked_at is null
        and (k.expires_at is null or k.expires_at > now())
    ), touched as (
      update public.api_keys k
      set last_used_at = now()
      from live
      where k.id = live.id
        and (live.last_used_at is null or live.last_used_at < now() - interval '1 minute')
    )
    select live.id, live.tenant_id, live.user_id, u.email, u.role, live.scopes
    from live
    join public.users u on u.id = live.user_id
    where u.active;
end
$$;
revoke all on function private.authenticate_api_key(bytea) from public;

-- Bearer identity: which user a verified token is.
--
-- A token proves an identity provider's subject (`sub`) and, perhaps, an
-- e-mail. The subject is the identity: once a user is linked to one, only that
-- subject is that user. The e-mail is a way to find a user the first time
-- only, and only when it is worth something:
--   * the token says the provider verified it (the caller passes that in);
--   * the user is not linked to any subject yet, so an e-mail cannot take
--     over an account another identity already holds;
--   * exactly one such user matches (a `tenant_id` claim may choose among
--     tenants sharing the e-mail; otherwise several matches are refused).
-- That first use links the subject to the user, so later tokens match by
-- subject alone, whatever e-mail they carry. Only an active user is found.
create function private.resolve_token_user(p_subject text, p_email text, p_email_verified boolean, p_tenant_id uuid)
  returns table (tenant_id uuid, user_id uuid, email text, role text)
  language plpgsql
  volatile
  security definer
  set search_path = ''
as $$
declare
  v_matches int;
  v_user public.users;
begin
  if exists (select from public.users u where u.auth_subject = p_subject) then
    return query
      select u.tenant_id, u.id, u.email, u.role
      from public.users u
      where u.auth_subject = p_subject
        and u.active
        and (p_tenant_id is null or u.tenant_id = p_tenant_id);
    return;
  end if;
  if p_email is null or not p_email_verified then
    return;
  end if;

  select count(*) into v_matches
  from public.users u
  where lower(u.email) = lower(p_email)
    and u.auth_subject is null
    and u.active
    and (p_tenant_id is null or u.tenant_id = p_tenant_id);
  if v_matches <> 1 then
    return;
  end if;

  update public.users u
  set auth_subject = p_subject
  where lower(u.email) = lower(p_email)
    and u.auth_subject is null
    and u.active
    and (p_tenant_id is null or u.tenant_id = p_tenant_id)
  returning u.* into v_user;
  if v_user.id is not null then
    return query select v_user.tenant_id, v_user.id, v_user.email, v_user.role;
  end if;
exception
  -- The same subject was linked to another user by a concurrent first use.
  when unique_violation then
    return;
end
$$;

comment on function private.resolve_token_user(text, text, boolean, uuid) is
  'The user a verified Bearer token is: by subject; the first time only, by a verified e-mail of a user no subject holds yet, which it then links.';

-- -----------------------------------------------------------------------------
-- participants: erasure
-- -----------------------------------------------------------------------------

alter table public.participants add column erased_at timestamptz;
comment on column public.participants.erased_at is
  'When the participant''s personal data was erased (POST /participants/{id}/erase): the row keeps its id and instance, nothing else of the person.';

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
