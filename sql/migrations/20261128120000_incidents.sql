-- =============================================================================
-- Health centre, part 4: incidents, safeguarding leads, alerts only for those
-- who may see them
--
-- An incident (an injury, an illness, a safeguarding concern...) is reported
-- once and never rewritten: public.incidents holds what was first reported,
-- public.incident_amendments every later change ({field: new value} and a
-- reason; closing is one), public.incident_participants the children it
-- names. Readers see the current values (the report with its amendments
-- applied in order) beside the original and the amendments.
--
-- Held like the medication administration record (*_medication_administrations.sql):
--   * camp_api holds no privilege on these tables; the doors below
--     (private.incident*) pass the care gate (care access; write to report or
--     amend), record every read in the audit trail, and run as camp_care,
--     which holds SELECT and INSERT only, under policies that still require
--     the tenant and care access;
--   * a trigger refuses every UPDATE, DELETE and TRUNCATE, the owner's
--     included, except erasure's (private.health_records_rewrite());
--   * incidents of category safeguarding are visible only to safeguarding
--     leads (users.safeguarding_lead, set by admins), by the tables' policies
--     themselves, so no door (and no mistake in one) shows them to anyone else.
--     Anyone with care write access may report one: the door then answers
--     what was reported without reading it back.
--
-- Needing attention: an open incident that is serious, or whose guardians
-- were not recorded as notified within the tenant's deadline
-- (tenants.incident_notice_hours, default 24) after it occurred. Each such
-- incident raises one thin event, incident.needs_attention (ids only): a
-- serious one when reported (or amended to serious), a late notification by
-- the sweep (private.raise_incident_alerts, beside the overdue doses').
--
-- The feed shows incident.* events only to callers with care access, and
-- webhooks send them only to endpoints naming them (*_care_events.sql); a
-- safeguarding incident's only to leads, and to no webhook (below).
-- =============================================================================

-- -----------------------------------------------------------------------------
-- Settings: the tenant's guardian-notification deadline
-- -----------------------------------------------------------------------------

-- Tenant-wide settings are columns of public.tenants, each not null with a
-- default; admins change them (PATCH /api/v1/tenant/settings), audited.
alter table public.tenants add column incident_notice_hours int not null default 24
  constraint tenants_incident_notice_hours_check check (incident_notice_hours between 1 and 720);
comment on column public.tenants.incident_notice_hours is
  'Hours after an incident occurred within which its guardians are to be recorded as notified (default 24); later, the incident needs attention.';

create policy "Admins change their tenant's settings" on public.tenants
  for update to camp_api
  using (id = (select private.request_tenant_id()) and (select private.request_app_role()) = 'admin')
  with check (id = (select private.request_tenant_id()) and (select private.request_app_role()) = 'admin');
grant update (incident_notice_hours) on public.tenants to camp_api;

-- Settings changes in the audit trail (resource tenant); tenants has no
-- tenant_id column, so not through private.audit_changes.
create function private.audit_tenant_settings() returns trigger
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_actor jsonb := private.audit_actor();
begin
  insert into public.audit_events
    (tenant_id, actor_user_id, actor_email, actor_via, actor_key_id, request_id, action, resource_type, resource_id, changes)
  select n.id, (v_actor ->> 'sub')::uuid, v_actor ->> 'email', coalesce(v_actor ->> 'via', 'operator'),
         (v_actor ->> 'key_id')::uuid, v_actor ->> 'request_id', 'update', 'tenant', n.id,
         (select coalesce(jsonb_object_agg(f.key, jsonb_build_array(to_jsonb(o) -> f.key, f.value)), '{}'::jsonb)
          from jsonb_each(to_jsonb(n) - array['created_at', 'updated_at']) f
          where f.value is distinct from to_jsonb(o) -> f.key)
  from new_rows n join old_rows o on o.id = n.id
  where to_jsonb(n) - array['created_at', 'updated_at'] is distinct from to_jsonb(o) - array['created_at', 'updated_at'];
  return null;
end
$$;
create trigger tenants_audit_update after update on public.tenants
  referencing old table as old_rows new table as new_rows for each statement execute function private.audit_tenant_settings();

-- The claims' tenant's deadline. security definer: camp_care reads no tenants.
create function private.incident_notice_hours() returns int
  language sql
  stable
  security definer
  set search_path = ''
as $$
  select coalesce((select t.incident_notice_hours from public.tenants t where t.id = private.request_tenant_id()), 24)
$$;
revoke all on function private.incident_notice_hours() from public;
grant execute on function private.incident_notice_hours() to camp_care;

-- -----------------------------------------------------------------------------
-- Safeguarding leads
-- -----------------------------------------------------------------------------

alter table public.users add column safeguarding_lead boolean not null default false;
comment on column public.users.safeguarding_lead is
  'Reads incidents of category safeguarding (with care access); set by admins only.';

-- As care_access (*_care_access.sql): only an active admin of the tenant or
-- an operator changes it.
create function private.guard_safeguarding_lead_change() returns trigger
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_claims jsonb := private.audit_actor();
begin
  if v_claims ? 'sub' and not exists (
    select from public.users u
    where u.id = (v_claims ->> 'sub')::uuid and u.tenant_id = new.tenant_id and u.role = 'admin' and u.active
  ) then
    raise exception 'only an admin can mark safeguarding leads' using errcode = 'CA403', column = 'safeguarding_lead';
  end if;
  return new;
end
$$;
create trigger users_guard_safeguarding_lead before update of safeguarding_lead on public.users
  for each row when (old.safeguarding_lead is distinct from new.safeguarding_lead)
  execute function private.guard_safeguarding_lead_change();
grant update (safeguarding_lead) on public.users to camp_api;

-- Whether the caller reads safeguarding incidents: a lead (the user the
-- claims name, active) whose credential reaches care data at all.
create function private.is_safeguarding_lead() returns boolean
  language plpgsql
  stable
  security definer
  set search_path = ''
as $$
declare
  v_claims jsonb := nullif(current_setting('request.jwt.claims', true), '')::jsonb;
begin
  if v_claims is null or not v_claims ? 'sub' or not v_claims ? 'tenant_id' or private.care_access() = 'none' then
    return false;
  end if;
  return coalesce((
    select u.safeguarding_lead from public.users u
    where u.id = (v_claims ->> 'sub')::uuid and u.tenant_id = (v_claims ->> 'tenant_id')::uuid and u.active), false);
end
$$;
revoke all on function private.is_safeguarding_lead() from public;
grant execute on function private.is_safeguarding_lead() to camp_api, camp_care;

-- For the audit trail's filter: safeguarding incidents' events asked for by
-- name are refused (CA403) to anyone but a lead, never an empty page.
create function private.require_safeguarding_lead() returns boolean
  language plpgsql
  stable
  set search_path = ''
as $$
begin
  if not private.is_safeguarding_lead() then
    raise exception 'only safeguarding leads read safeguarding incidents' using errcode = 'CA403';
  end if;
  return true;
end
$$;
revoke all on function private.require_safeguarding_lead() from public;
grant execute on function private.require_safeguarding_lead() to camp_api;

-- -----------------------------------------------------------------------------
-- The tables
-- -----------------------------------------------------------------------------

create table public.incidents (
  id                   uuid primary key default gen_random_uuid(),
  tenant_id            uuid not null default private.request_tenant_id(),
  instance_id          uuid not null,
  occurred_at          timestamptz not null,
  location             text not null constraint incidents_location_check check (char_length(btrim(location)) between 1 and 200),
  -- Fixed at reporting: an amendment cannot move an incident into or out of safeguarding (its readers would change).
  category             text not null constraint incidents_category_check
                       check (category in ('injury', 'illness', 'behaviour', 'safeguarding', 'near_miss', 'other')),
  severity             text not null constraint incidents_severity_check check (severity in ('minor', 'moderate', 'serious')),
  description          text not null constraint incidents_description_check check (char_length(btrim(description)) between 1 and 10000),
  actions_taken        text not null constraint incidents_actions_taken_check check (char_length(actions_taken) <= 10000),
  guardian_notified_at timestamptz,
  guardian_notified_by text constraint incidents_guardian_notified_by_check check (char_length(guardian_notified_by) <= 200),
  reported_by          uuid,
  reported_by_email    text,
  recorded_at          timestamptz not null default clock_timestamp(),
  -- Until when an incident left with no participant by erasure is kept, under a tenant's retention period; null otherwise.
  retained_until       timestamptz,
  constraint incidents_instance_id_fkey foreign key (tenant_id, instance_id) references public.instances (tenant_id, id),
  constraint incidents_tenant_id_id_key unique (tenant_id, id)
);
create index incidents_by_tenant on public.incidents (tenant_id, recorded_at desc, id desc);
create index incidents_by_instance on public.incidents (instance_id, recorded_at desc);
create index incidents_recent on public.incidents (recorded_at);
comment on table public.incidents is
  'Incidents as first reported (injury, illness, behaviour, safeguarding, near miss, other), append-only: changes are incident_amendments. Care data, safeguarding ones for leads only: reached only through private.incident*.';

create table public.incident_participants (
  tenant_id      uuid not null default private.request_tenant_id(),
  incident_id    uuid not null,
  participant_id uuid not null,
  primary key (incident_id, participant_id),
  constraint incident_participants_incident_id_fkey foreign key (tenant_id, incident_id) references public.incidents (tenant_id, id),
  constraint incident_participants_participant_id_fkey foreign key (tenant_id, participant_id)
    references public.participants (tenant_id, id)
);
create index incident_participants_by_participant on public.incident_participants (participant_id);
comment on table public.incident_participants is
  'The participants an incident names, fixed at reporting; erasure removes a participant''s links.';

create table public.incident_amendments (
  id                uuid primary key default gen_random_uuid(),
  tenant_id         uuid not null default private.request_tenant_id(),
  incident_id       uuid not null,
  -- {field: new value}, of the amendable fields (private.incident_amend checks them).
  changes           jsonb not null constraint incident_amendments_changes_check
                    check (jsonb_typeof(changes) = 'object' and changes <> '{}'::jsonb),
  reason            text not null constraint incident_amendments_reason_check check (char_length(btrim(reason)) between 1 and 2000),
  recorded_by       uuid,
  recorded_by_email text,
  recorded_at       timestamptz not null default clock_timestamp(),
  constraint incident_amendments_incident_id_fkey foreign key (tenant_id, incident_id) references public.incidents (tenant_id, id)
);
create index incident_amendments_by_incident on public.incident_amendments (incident_id, recorded_at, id);
comment on table public.incident_amendments is
  'Amendments of incidents, append-only: {field: new value} with a reason; closing (status closed) is one.';

do $$
declare
  t text;
begin
  foreach t in array array['incidents', 'incident_participants', 'incident_amendments']
  loop
    execute format('create trigger %I before update or delete on public.%I for each row execute function private.guard_append_only()',
                   t || '_append_only', t);
    execute format('create trigger %I before truncate on public.%I for each statement execute function private.guard_append_only()',
                   t || '_no_truncate', t);
    execute format('alter table public.%I enable row level security', t);
    execute format('revoke all on public.%I from anon, authenticated', t);
  end loop;
end
$$;
create trigger incident_participants_hold_live_participant before insert on public.incident_participants
  for each row execute function private.hold_live_participant();

-- Visibility, held by the policies: care access, and for safeguarding a lead.
-- The other two tables follow their incident's visibility (a policy's
-- subquery is itself under the incidents' policy).
create policy "Care access reads incidents, leads safeguarding ones" on public.incidents
  for select to camp_care
  using (tenant_id = (select private.request_tenant_id()) and (select private.care_access()) in ('read', 'write')
         and (category <> 'safeguarding' or (select private.is_safeguarding_lead())));
create policy "Care write access reports incidents" on public.incidents
  for insert to camp_care
  with check (tenant_id = (select private.request_tenant_id()) and (select private.care_access()) = 'write');
create policy "Care access reads the participants of incidents it reads" on public.incident_participants
  for select to camp_care
  using (tenant_id = (select private.request_tenant_id())
         and exists (select from public.incidents i where i.id = incident_id));
-- Written with the report, when the incident cannot be read back (a safeguarding one by a non-lead): care write access suffices.
create policy "Care write access names an incident's participants" on public.incident_participants
  for insert to camp_care
  with check (tenant_id = (select private.request_tenant_id()) and (select private.care_access()) = 'write');
create policy "Care access reads the amendments of incidents it reads" on public.incident_amendments
  for select to camp_care
  using (tenant_id = (select private.request_tenant_id())
         and exists (select from public.incidents i where i.id = incident_id));
create policy "Care write access amends incidents it reads" on public.incident_amendments
  for insert to camp_care
  with check (tenant_id = (select private.request_tenant_id()) and (select private.care_access()) = 'write'
              and exists (select from public.incidents i where i.id = incident_id));

grant select, insert (id, instance_id, occurred_at, location, category, severity, description, actions_taken, guardian_notified_at,
  guardian_notified_by, reported_by, reported_by_email, recorded_at) on public.incidents to camp_care;
grant select, insert (incident_id, participant_id) on public.incident_participants to camp_care;
grant select, insert (incident_id, changes, reason, recorded_by, recorded_by_email) on public.incident_amendments to camp_care;

-- Audit trail types: an incident's writes and reads are care data; a
-- safeguarding incident's are recorded under their own type, which only
-- leads see (the policy below).
create or replace function private.is_care_resource(p_type text) returns boolean
  language sql
  immutable
  set search_path = ''
as $$
  select p_type in ('contact', 'care_record', 'consent', 'contacts', 'consents', 'care_flag', 'medication', 'medications',
                    'medication_administration', 'medication_administrations', 'incident', 'safeguarding_incident')
$$;

drop policy "API callers read the audit trail of their tenant" on public.audit_events;
create policy "API callers read the audit trail of their tenant" on public.audit_events
  for select to camp_api
  using (
    tenant_id = (select private.request_tenant_id())
    and (not private.is_care_resource(resource_type) or (select private.care_access()) in ('read', 'write'))
    and (resource_type <> 'safeguarding_incident' or (select private.is_safeguarding_lead()))
  );
-- Reporting roles never read safeguarding incidents (not in reporting.incidents either): no lead stands behind a role.
drop policy "Reporting roles read their tenant's audit trail" on public.audit_events;
create policy "Reporting roles read their tenant's audit trail" on public.audit_events
  for select to camp_reporting
  using (
    tenant_id = (select private.reporting_tenant_id())
    and (not private.is_care_resource(resource_type) or (select private.reporting_care_granted()))
    and resource_type <> 'safeguarding_incident'
  );

create function private.incident_audit_type(p_category text) returns text
  language sql
  immutable
  set search_path = ''
as $$
  select case when p_category = 'safeguarding' then 'safeguarding_incident' else 'incident' end
$$;
grant execute on function private.incident_audit_type(text) to camp_care;

-- One audit event of an incident (create, update, read) by the claims'
-- actor. security definer: camp_care writes no audit_events itself.
create function private.audit_incident(p_action text, p_type text, p_incident uuid, p_changes jsonb) returns void
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_actor jsonb := private.audit_actor();
begin
  insert into public.audit_events
    (tenant_id, actor_user_id, actor_email, actor_via, actor_key_id, request_id, action, resource_type, resource_id, changes)
  values (private.request_tenant_id(), (v_actor ->> 'sub')::uuid, v_actor ->> 'email', coalesce(v_actor ->> 'via', 'operator'),
          (v_actor ->> 'key_id')::uuid, v_actor ->> 'request_id', p_action, p_type, p_incident, coalesce(p_changes, '{}'::jsonb));
end
$$;
revoke all on function private.audit_incident(text, text, uuid, jsonb) from public;
grant execute on function private.audit_incident(text, text, uuid, jsonb) to camp_care;

-- -----------------------------------------------------------------------------
-- Events: a safeguarding incident's alert for leads only
-- -----------------------------------------------------------------------------

-- Care events (incident.*, medication.*) are shown only to callers with care
-- access and sent only to webhook endpoints naming them
-- (private.is_care_event, *_care_events.sql). A safeguarding incident's
-- alert is narrower still: marked audience safeguarding, the feed shows it
-- only to leads, by a restrictive policy (it holds beside whatever permissive
-- policy a migration gives the table), and no webhook gets it (a receiver is
-- nobody's lead).
alter table public.events add column audience text
  constraint events_audience_check check (audience in ('safeguarding'));
comment on column public.events.audience is
  'null: the tenant''s callers (care events: those with care access); safeguarding: safeguarding leads only (a safeguarding incident''s alert), never sent to a webhook.';

create policy "Only safeguarding leads read safeguarding events" on public.events
  as restrictive
  for select to camp_api
  using (audience is null or (select private.is_safeguarding_lead()));

-- An event of a safeguarding incident is never queued for a webhook.
create function private.skip_safeguarding_deliveries() returns trigger
  language plpgsql
  security definer
  set search_path = ''
as $$
begin
  if new.event_type like 'incident.%'
     and exists (select from public.incidents i where i.id = new.resource_id and i.category = 'safeguarding') then
    return null;
  end if;
  return new;
end
$$;
revoke all on function private.skip_safeguarding_deliveries() from public;
create trigger webhook_deliveries_no_safeguarding before insert on public.webhook_deliveries
  for each row execute function private.skip_safeguarding_deliveries();

-- -----------------------------------------------------------------------------
-- Current values and attention
-- -----------------------------------------------------------------------------

-- The report's amendable fields as first reported.
create function private.incident_original(i public.incidents) returns jsonb
  language sql
  stable
  set search_path = ''
as $$
  select jsonb_build_object(
    'occurred_at', private.iso_time(i.occurred_at), 'location', i.location, 'category', i.category, 'severity', i.severity,
    'description', i.description, 'actions_taken', i.actions_taken,
    'guardian_notified_at', private.iso_time(i.guardian_notified_at), 'guardian_notified_by', i.guardian_notified_by,
    'status', 'open')
$$;

-- The current values: the original with every amendment's changes applied
-- in order (a later value of a field wins).
create function private.incident_current(i public.incidents) returns jsonb
  language sql
  stable
  set search_path = ''
as $$
  select private.incident_original(i) || coalesce((
    select jsonb_object_agg(c.key, c.value order by a.recorded_at, a.id)
    from public.incident_amendments a cross join lateral jsonb_each(a.changes) c
    where a.incident_id = i.id), '{}'::jsonb)
$$;

-- Why an incident needs attention (none: it does not): open and serious,
-- or open with its guardians not recorded as notified within p_hours of
-- when it occurred (none recorded and the time is up, or recorded late).
create function private.incident_attention(p_current jsonb, p_hours int, p_now timestamptz) returns text[]
  language sql
  stable
  set search_path = ''
as $$
  select case when p_current ->> 'status' = 'closed' then '{}'::text[] else array_remove(array[
    case when p_current ->> 'severity' = 'serious' then 'serious' end,
    case when p_current ->> 'guardian_notified_at' is null
              and p_now > (p_current ->> 'occurred_at')::timestamptz + make_interval(hours => p_hours)
           then 'guardians_not_notified'
         when (p_current ->> 'guardian_notified_at')::timestamptz
              > (p_current ->> 'occurred_at')::timestamptz + make_interval(hours => p_hours)
           then 'guardians_notified_late' end
  ], null) end
$$;

create function private.incident_json_of(i public.incidents, p_current jsonb, p_hours int, p_now timestamptz) returns jsonb
  language sql
  stable
  set search_path = ''
as $$
  select jsonb_build_object(
      'id', i.id, 'instance_id', i.instance_id,
      'participant_ids', coalesce((select jsonb_agg(p.participant_id order by p.participant_id)
                                   from public.incident_participants p where p.incident_id = i.id), '[]'::jsonb))
    || p_current
    || jsonb_build_object(
      'needs_attention', cardinality(private.incident_attention(p_current, p_hours, p_now)) > 0,
      'attention_reasons', to_jsonb(private.incident_attention(p_current, p_hours, p_now)),
      'guardians_notify_by', private.iso_time((p_current ->> 'occurred_at')::timestamptz + make_interval(hours => p_hours)),
      'original', private.incident_original(i),
      'amendments', coalesce((
        select jsonb_agg(jsonb_build_object('id', a.id, 'changes', a.changes, 'reason', a.reason, 'recorded_by', a.recorded_by,
                                            'recorded_by_email', a.recorded_by_email, 'recorded_at', private.iso_time(a.recorded_at))
                         order by a.recorded_at, a.id)
        from public.incident_amendments a where a.incident_id = i.id), '[]'::jsonb),
      'reported_by', i.reported_by, 'reported_by_email', i.reported_by_email,
      'recorded_at', private.iso_time(i.recorded_at))
$$;

create function private.incident_json(i public.incidents, p_hours int, p_now timestamptz) returns jsonb
  language sql
  stable
  set search_path = ''
as $$
  select private.incident_json_of(i, private.incident_current(i), p_hours, p_now)
$$;

do $$
declare
  f text;
begin
  foreach f in array array[
    'private.incident_original(public.incidents)', 'private.incident_current(public.incidents)',
    'private.incident_attention(jsonb, int, timestamptz)', 'private.incident_json(public.incidents, int, timestamptz)',
    'private.incident_json_of(public.incidents, jsonb, int, timestamptz)'
  ]
  loop
    execute format('revoke all on function %s from public', f);
    execute format('grant execute on function %s to camp_care, camp_reporting', f);
  end loop;
end
$$;

-- -----------------------------------------------------------------------------
-- Alerts: incident.needs_attention, once per incident
-- -----------------------------------------------------------------------------

create table private.incident_alerts (
  incident_id uuid primary key,
  tenant_id   uuid not null references public.tenants (id) on delete cascade,
  raised_at   timestamptz not null default now()
);
comment on table private.incident_alerts is
  'Incidents raised as incident.needs_attention: each once, whoever raises it (the reporting door or the sweep).';

-- Raises the incident's one alert unless raised before; the event's audience
-- is the incident's readers. security definer: camp_care writes no events.
create function private.raise_incident_alert(p_tenant uuid, p_incident uuid, p_category text, p_now timestamptz) returns boolean
  language plpgsql
  security definer
  set search_path = ''
as $$
begin
  insert into private.incident_alerts (incident_id, tenant_id, raised_at) values (p_incident, p_tenant, p_now)
  on conflict do nothing;
  if not found then
    return false;
  end if;
  insert into public.events (tenant_id, xact_id, id, type, resource_id, occurred_at, audience)
  values (p_tenant, pg_current_xact_id(), nextval(pg_get_serial_sequence('public.audit_events', 'id')),
          'incident.needs_attention', p_incident, p_now,
          case when p_category = 'safeguarding' then 'safeguarding' end);
  return true;
end
$$;
revoke all on function private.raise_incident_alert(uuid, uuid, text, timestamptz) from public;
grant execute on function private.raise_incident_alert(uuid, uuid, text, timestamptz) to camp_care;

-- The sweep: every open incident recorded in the last 30 days (of any
-- tenant) that needs attention and was not raised. Run with the overdue
-- doses' sweep (every webhook worker, about once a minute; camp health sweep).
create function private.raise_incident_alerts(p_now timestamptz default now()) returns int
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_count int := 0;
  v_incident record;
begin
  for v_incident in
    select i.tenant_id, i.id, i.category
    from public.incidents i
    join public.tenants t on t.id = i.tenant_id
    where i.recorded_at > p_now - interval '30 days'
      and i.retained_until is null
      and not exists (select from private.incident_alerts a where a.incident_id = i.id)
      and cardinality(private.incident_attention(private.incident_current(i), t.incident_notice_hours, p_now)) > 0
    order by i.recorded_at, i.id
  loop
    if private.raise_incident_alert(v_incident.tenant_id, v_incident.id, v_incident.category, p_now) then
      v_count := v_count + 1;
    end if;
  end loop;
  return v_count;
end
$$;
revoke all on function private.raise_incident_alerts(timestamptz) from public;
comment on function private.raise_incident_alerts(timestamptz) is
  'The incidents sweep: one incident.needs_attention event per open incident (recorded in the last 30 days) that is serious or whose guardians were not recorded as notified within the tenant''s incident_notice_hours, raised once.';

-- -----------------------------------------------------------------------------
-- The doors
-- -----------------------------------------------------------------------------

-- Care access first (CA403), so a caller without it learns nothing.
create function private.incident_access(p_need text) returns void
  language plpgsql
  stable
  set search_path = ''
as $$
declare
  v_level text := private.care_access();
begin
  if v_level = 'none' then
    raise exception 'no access to care data (needs the user''s care_access, and for an API key its care scope)'
      using errcode = 'CA403';
  end if;
  if p_need = 'write' and v_level <> 'write' then
    raise exception 'read-only access to care data (needs care_access write, and for an API key its write scope)'
      using errcode = 'CA403';
  end if;
end
$$;
grant execute on function private.incident_access(text) to camp_care;

-- For a report: the instance live and writable in the claims' tenant (locked
-- against archiving), and each participant live in it, locked against
-- erasure first (the lock order of *_erasure_holds.sql). security definer:
-- camp_care reads neither instances nor participants.
create function private.incident_report_gate(p_instance uuid, p_participants uuid[]) returns void
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_missing uuid;
begin
  if not exists (select from public.instances i
                 where i.id = p_instance and i.tenant_id = private.request_tenant_id() and i.deleted_at is null) then
    raise exception 'is not an instance of this tenant' using errcode = 'CA400', column = 'instance_id';
  end if;
  perform private.lock_writable_instance(p_instance);
  perform from public.participants p
  where p.id = any (p_participants) and p.tenant_id = private.request_tenant_id()
  order by p.id
  for share;
  select x.id into v_missing
  from unnest(p_participants) as x(id)
  where not exists (select from public.participants p
                    where p.id = x.id and p.tenant_id = private.request_tenant_id() and p.instance_id = p_instance
                      and p.deleted_at is null and p.erased_at is null)
  limit 1;
  if v_missing is not null then
    raise exception 'participant % is not a live participant of the instance', v_missing
      using errcode = 'CA400', column = 'participant_ids';
  end if;
end
$$;
revoke all on function private.incident_report_gate(uuid, uuid[]) from public;
grant execute on function private.incident_report_gate(uuid, uuid[]) to camp_care;

-- The instance of an incident writable (an amendment): archived camps are read-only.
create function private.incident_amend_gate(p_instance uuid) returns void
  language plpgsql
  security definer
  set search_path = ''
as $$
begin
  perform private.lock_writable_instance(p_instance);
end
$$;
revoke all on function private.incident_amend_gate(uuid) from public;
grant execute on function private.incident_amend_gate(uuid) to camp_care;

-- Reports an incident from p ({instance_id, occurred_at, location, category,
-- severity, participant_ids, description, actions_taken,
-- guardian_notified_at?, guardian_notified_by?}) by the claims' user. The
-- answer is built from what was written, not read back: a reporter who is
-- not a safeguarding lead cannot read a safeguarding incident, even their own.
create function private.incident_create(p jsonb) returns jsonb
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_actor jsonb := private.audit_actor();
  v_now timestamptz := clock_timestamp();
  v_hours int;
  v_participants uuid[];
  v_row public.incidents;
  v_current jsonb;
begin
  perform private.incident_access('write');
  v_participants := array(select distinct x::uuid from jsonb_array_elements_text(p -> 'participant_ids') x order by 1);
  if cardinality(v_participants) = 0 or cardinality(v_participants) > 100 then
    raise exception 'must name 1 to 100 participants' using errcode = 'CA400', column = 'participant_ids';
  end if;
  perform private.incident_report_gate((p ->> 'instance_id')::uuid, v_participants);
  v_row.id := gen_random_uuid();
  v_row.tenant_id := private.request_tenant_id();
  v_row.instance_id := (p ->> 'instance_id')::uuid;
  v_row.occurred_at := (p ->> 'occurred_at')::timestamptz;
  v_row.location := p ->> 'location';
  v_row.category := p ->> 'category';
  v_row.severity := p ->> 'severity';
  v_row.description := p ->> 'description';
  v_row.actions_taken := coalesce(p ->> 'actions_taken', '');
  v_row.guardian_notified_at := (p ->> 'guardian_notified_at')::timestamptz;
  v_row.guardian_notified_by := p ->> 'guardian_notified_by';
  v_row.reported_by := (v_actor ->> 'sub')::uuid;
  v_row.reported_by_email := v_actor ->> 'email';
  v_row.recorded_at := v_now;
  if v_row.occurred_at > v_now + interval '5 minutes' then
    raise exception 'must not be in the future' using errcode = 'CA400', column = 'occurred_at';
  end if;
  if v_row.guardian_notified_at > v_now + interval '5 minutes' then
    raise exception 'must not be in the future' using errcode = 'CA400', column = 'guardian_notified_at';
  end if;
  insert into public.incidents (id, instance_id, occurred_at, location, category, severity, description, actions_taken,
                                guardian_notified_at, guardian_notified_by, reported_by, reported_by_email, recorded_at)
  values (v_row.id, v_row.instance_id, v_row.occurred_at, v_row.location, v_row.category, v_row.severity, v_row.description,
          v_row.actions_taken, v_row.guardian_notified_at, v_row.guardian_notified_by, v_row.reported_by, v_row.reported_by_email,
          v_row.recorded_at);
  insert into public.incident_participants (incident_id, participant_id)
  select v_row.id, x from unnest(v_participants) x;
  perform private.audit_incident('create', private.incident_audit_type(v_row.category), v_row.id,
    jsonb_strip_nulls(private.incident_original(v_row) - 'status'));
  v_hours := private.incident_notice_hours();
  if v_row.severity = 'serious' then
    perform private.raise_incident_alert(v_row.tenant_id, v_row.id, v_row.category, v_now);
  end if;
  v_current := private.incident_original(v_row);
  return jsonb_build_object('id', v_row.id, 'instance_id', v_row.instance_id, 'participant_ids', to_jsonb(v_participants))
    || v_current
    || jsonb_build_object(
      'needs_attention', cardinality(private.incident_attention(v_current, v_hours, v_now)) > 0,
      'attention_reasons', to_jsonb(private.incident_attention(v_current, v_hours, v_now)),
      'guardians_notify_by', private.iso_time(v_row.occurred_at + make_interval(hours => v_hours)),
      'original', v_current, 'amendments', '[]'::jsonb,
      'reported_by', v_row.reported_by, 'reported_by_email', v_row.reported_by_email,
      'recorded_at', private.iso_time(v_row.recorded_at));
end
$$;

-- One incident the caller may read (CA404 otherwise), its read audited.
create function private.incident(p_incident uuid) returns jsonb
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_row public.incidents;
begin
  perform private.incident_access('read');
  select * into v_row from public.incidents i where i.id = p_incident;
  if not found then
    raise exception 'incident not found' using errcode = 'CA404';
  end if;
  perform private.audit_incident('read', private.incident_audit_type(v_row.category), v_row.id, null);
  return private.incident_json(v_row, private.incident_notice_hours(), clock_timestamp());
end
$$;

-- The incidents the caller may read, newest report first, filtered by p
-- ({instance_id?, participant_id?, category?, severity?, status?,
-- occurred_from?, occurred_to?, needs_attention?}; category, severity,
-- status and occurred_at by their current values), one page and the total.
-- Every incident on the page is recorded as a read.
create function private.incidents(p jsonb, p_limit int, p_offset int) returns jsonb
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_hours int := private.incident_notice_hours();
  v_now timestamptz := clock_timestamp();
  v_found jsonb;
begin
  perform private.incident_access('read');
  with matching as (
    select i as row, cur.value as current, i.recorded_at, i.id, i.category
    from public.incidents i
    cross join lateral (select private.incident_current(i) as value) cur
    where (p ->> 'instance_id' is null or i.instance_id = (p ->> 'instance_id')::uuid)
      and (p ->> 'participant_id' is null or exists (
            select from public.incident_participants ip
            where ip.incident_id = i.id and ip.participant_id = (p ->> 'participant_id')::uuid))
      and (p ->> 'category' is null or i.category = p ->> 'category')
      and (p ->> 'severity' is null or cur.value ->> 'severity' = p ->> 'severity')
      and (p ->> 'status' is null or cur.value ->> 'status' = p ->> 'status')
      and (p ->> 'occurred_from' is null or (cur.value ->> 'occurred_at')::timestamptz >= (p ->> 'occurred_from')::timestamptz)
      and (p ->> 'occurred_to' is null or (cur.value ->> 'occurred_at')::timestamptz < (p ->> 'occurred_to')::timestamptz)
      and (p ->> 'needs_attention' is null
           or (cardinality(private.incident_attention(cur.value, v_hours, v_now)) > 0) = (p ->> 'needs_attention')::boolean)
  ), page as (
    select m.* from matching m order by m.recorded_at desc, m.id desc limit p_limit offset p_offset
  ), audited as (
    select private.audit_incident('read', private.incident_audit_type(pg.category), pg.id, null) from page pg
  )
  select jsonb_build_object(
    'total', (select count(*) from matching),
    'rows', coalesce((select jsonb_agg(private.incident_json_of(pg.row, pg.current, v_hours, v_now)
                                       order by pg.recorded_at desc, pg.id desc) from page pg), '[]'::jsonb),
    'audited', (select count(*) from audited))
  into v_found;
  return v_found - 'audited';
end
$$;

-- Adds an amendment ({field: new value}, reason) to an incident the caller
-- may read, with care write access. Fields: occurred_at, location, severity,
-- description, actions_taken, guardian_notified_at, guardian_notified_by,
-- status (open or closed); category only between non-safeguarding ones.
-- CA400 names the field; CA409 for an amendment that changes nothing (a
-- close of a closed incident).
create function private.incident_amend(p_incident uuid, p_changes jsonb, p_reason text) returns jsonb
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_actor jsonb := private.audit_actor();
  v_now timestamptz := clock_timestamp();
  v_row public.incidents;
  v_before jsonb;
  v_changes jsonb := '{}'::jsonb;
  v_field record;
  v_value jsonb;
begin
  perform private.incident_access('write');
  select * into v_row from public.incidents i where i.id = p_incident;
  if not found then
    raise exception 'incident not found' using errcode = 'CA404';
  end if;
  perform private.incident_amend_gate(v_row.instance_id);
  -- Amendments of one incident one after the other: each is judged against the values the last one left.
  perform pg_advisory_xact_lock(hashtextextended('incident ' || p_incident::text, 0));
  v_before := private.incident_current(v_row);
  if jsonb_typeof(p_changes) is distinct from 'object' or p_changes = '{}'::jsonb then
    raise exception 'must name at least one field and its new value' using errcode = 'CA400', column = 'changes';
  end if;
  for v_field in select c.key, c.value from jsonb_each(p_changes) c loop
    v_value := v_field.value;
    case v_field.key
      when 'occurred_at', 'guardian_notified_at' then
        if jsonb_typeof(v_value) = 'null' and v_field.key = 'guardian_notified_at' then
          null;
        elsif jsonb_typeof(v_value) <> 'string' then
          raise exception 'must be a timestamp' using errcode = 'CA400', column = 'changes.' || v_field.key;
        else
          if (v_value #>> '{}')::timestamptz > v_now + interval '5 minutes' then
            raise exception 'must not be in the future' using errcode = 'CA400', column = 'changes.' || v_field.key;
          end if;
          v_value := to_jsonb(private.iso_time((v_value #>> '{}')::timestamptz));
        end if;
      when 'location', 'description' then
        if jsonb_typeof(v_value) <> 'string' or char_length(btrim(v_value #>> '{}')) not between 1
           and (case when v_field.key = 'location' then 200 else 10000 end) then
          raise exception 'must be a non-empty text' using errcode = 'CA400', column = 'changes.' || v_field.key;
        end if;
      when 'actions_taken', 'guardian_notified_by' then
        if jsonb_typeof(v_value) = 'null' and v_field.key = 'guardian_notified_by' then
          null;
        elsif jsonb_typeof(v_value) <> 'string' or char_length(v_value #>> '{}')
              > (case when v_field.key = 'guardian_notified_by' then 200 else 10000 end) then
          raise exception 'must be a text' using errcode = 'CA400', column = 'changes.' || v_field.key;
        end if;
      when 'severity' then
        if not coalesce(v_value #>> '{}' in ('minor', 'moderate', 'serious'), false) then
          raise exception 'must be minor, moderate or serious' using errcode = 'CA400', column = 'changes.severity';
        end if;
      when 'status' then
        if not coalesce(v_value #>> '{}' in ('open', 'closed'), false) then
          raise exception 'must be open or closed' using errcode = 'CA400', column = 'changes.status';
        end if;
      when 'category' then
        if not coalesce(v_value #>> '{}' in ('injury', 'illness', 'behaviour', 'safeguarding', 'near_miss', 'other'), false) then
          raise exception 'must be injury, illness, behaviour, safeguarding, near_miss or other'
            using errcode = 'CA400', column = 'changes.category';
        end if;
        if (v_value #>> '{}' = 'safeguarding') <> (v_row.category = 'safeguarding') then
          raise exception 'cannot move an incident into or out of safeguarding (its readers would change): report it anew'
            using errcode = 'CA400', column = 'changes.category';
        end if;
      else
        raise exception 'is not an amendable field (participant_ids and instance_id are fixed)'
          using errcode = 'CA400', column = 'changes.' || v_field.key;
    end case;
    if v_value is distinct from v_before -> v_field.key then
      v_changes := v_changes || jsonb_build_object(v_field.key, v_value);
    end if;
  end loop;
  if v_changes = '{}'::jsonb then
    raise exception 'the incident already has these values' using errcode = 'CA409', column = 'changes';
  end if;
  insert into public.incident_amendments (incident_id, changes, reason, recorded_by, recorded_by_email)
  values (p_incident, v_changes, p_reason, (v_actor ->> 'sub')::uuid, v_actor ->> 'email');
  perform private.audit_incident('update', private.incident_audit_type(v_row.category), v_row.id,
    (select jsonb_object_agg(c.key, jsonb_build_array(v_before -> c.key, c.value)) from jsonb_each(v_changes) c)
    || jsonb_build_object('reason', jsonb_build_array(null, p_reason)));
  -- Amended to serious (and open): raised now, unless raised before.
  if v_changes ? 'severity' and v_changes ->> 'severity' = 'serious'
     and coalesce(v_changes ->> 'status', v_before ->> 'status') = 'open' then
    perform private.raise_incident_alert(v_row.tenant_id, v_row.id, v_row.category, v_now);
  end if;
  return private.incident_json(v_row, private.incident_notice_hours(), v_now);
end
$$;

do $$
declare
  f text;
begin
  foreach f in array array[
    'private.incident_create(jsonb)', 'private.incident(uuid)', 'private.incidents(jsonb, int, int)',
    'private.incident_amend(uuid, jsonb, text)'
  ]
  loop
    execute format('alter function %s owner to camp_care', f);
    execute format('revoke all on function %s from public', f);
    execute format('grant execute on function %s to camp_api', f);
  end loop;
end
$$;

-- -----------------------------------------------------------------------------
-- Erasure
-- -----------------------------------------------------------------------------

-- Erasing a child removes its links to incidents; an incident left with no
-- participant goes (its amendments, alert and audit values with it). A
-- shared incident stays for the others it names. The one function erasure
-- calls for incidents: a tenant retention period (when it exists) changes
-- only what happens to the incidents left with no participant.
create function private.erase_incidents_of_participant(p_tenant uuid, p_participant uuid) returns void
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_linked uuid[];
  v_orphans uuid[];
begin
  v_linked := array(select l.incident_id from public.incident_participants l where l.participant_id = p_participant);
  if cardinality(v_linked) = 0 then
    return;
  end if;
  perform set_config('camp.health_rewrite', 'on', true);
  delete from public.incident_participants where participant_id = p_participant;
  v_orphans := array(select x from unnest(v_linked) x
                     where not exists (select from public.incident_participants l where l.incident_id = x));
  delete from public.incident_amendments where incident_id = any (v_orphans);
  delete from public.incidents where id = any (v_orphans);
  perform set_config('camp.health_rewrite', 'off', true);
  delete from private.incident_alerts where incident_id = any (v_orphans);
  perform set_config('camp.audit_rewrite', 'on', true);
  update public.audit_events e
  set changes = (
    select coalesce(jsonb_object_agg(f.key, case when e.action = 'create' then '"erased"'::jsonb else '["erased", "erased"]'::jsonb end), '{}')
    from jsonb_each(e.changes) f)
  where e.tenant_id = p_tenant
    and e.resource_type in ('incident', 'safeguarding_incident')
    and e.resource_id = any (v_orphans)
    and e.changes <> '{}'::jsonb;
  perform set_config('camp.audit_rewrite', 'off', true);
end
$$;
revoke all on function private.erase_incidents_of_participant(uuid, uuid) from public;

create function private.erase_incidents_on_erasure() returns trigger
  language plpgsql
  security definer
  set search_path = ''
as $$
begin
  perform private.erase_incidents_of_participant(new.tenant_id, new.id);
  return null;
end
$$;

create trigger participants_erase_incidents after update of erased_at on public.participants
  for each row when (old.erased_at is null and new.erased_at is not null)
  execute function private.erase_incidents_on_erasure();

-- -----------------------------------------------------------------------------
-- Reporting: roles granted --care; never safeguarding incidents
-- -----------------------------------------------------------------------------

create policy "Reporting roles granted care read incidents" on public.incidents
  for select to camp_reporting
  using (tenant_id = (select private.reporting_tenant_id()) and (select private.reporting_care()) and category <> 'safeguarding');
create policy "Reporting roles granted care read incident participants" on public.incident_participants
  for select to camp_reporting
  using (tenant_id = (select private.reporting_tenant_id()) and (select private.reporting_care())
         and exists (select from public.incidents i where i.id = incident_id));
create policy "Reporting roles granted care read incident amendments" on public.incident_amendments
  for select to camp_reporting
  using (tenant_id = (select private.reporting_tenant_id()) and (select private.reporting_care())
         and exists (select from public.incidents i where i.id = incident_id));
grant select (id, instance_id, occurred_at, location, category, severity, description, actions_taken, guardian_notified_at,
  guardian_notified_by, reported_by, reported_by_email, recorded_at) on public.incidents to camp_reporting_care;
grant select (incident_id, participant_id) on public.incident_participants to camp_reporting_care;
grant select (id, incident_id, changes, reason, recorded_by, recorded_by_email, recorded_at) on public.incident_amendments
  to camp_reporting_care;

create view reporting.incidents with (security_invoker = true) as
select i.id, i.instance_id,
       array(select l.participant_id from public.incident_participants l where l.incident_id = i.id order by l.participant_id)
         as participant_ids,
       (c.v ->> 'occurred_at')::timestamptz as occurred_at, c.v ->> 'location' as location, c.v ->> 'category' as category,
       c.v ->> 'severity' as severity, c.v ->> 'description' as description, c.v ->> 'actions_taken' as actions_taken,
       (c.v ->> 'guardian_notified_at')::timestamptz as guardian_notified_at, c.v ->> 'guardian_notified_by' as guardian_notified_by,
       c.v ->> 'status' as status,
       (select count(*)::int from public.incident_amendments a where a.incident_id = i.id) as amendments,
       i.reported_by_email, i.recorded_at
from public.incidents i
cross join lateral (select private.incident_current(i) as v) c
where i.category <> 'safeguarding';
comment on view reporting.incidents is
  'Care data (roles granted --care only; others get permission denied): incidents with their current values (amendments applied), the participants they name and how many amendments they have. Safeguarding incidents are never here: only safeguarding leads read them, through the API.';
revoke all on reporting.incidents from public, anon, authenticated;
grant select on reporting.incidents to camp_reporting_care;
