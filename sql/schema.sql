-- The schema of a migrated database, generated from the catalog by `npm run db:schema`:
-- do not edit (tests/schema-file.test.ts fails when it differs from what the migrations build).
-- For reading: sql/migrations/ builds a database. Owners are named only where they are not
-- the migrating role; every list is in name order.
-- Through migration 20261128180000 (67 migrations).

-- Schemas and extensions

create schema auth;
create schema extensions;
grant usage on schema extensions to camp_api;
create schema private;
grant usage on schema private to camp_api;
grant usage on schema private to camp_care;
comment on schema private is 'Camp service internals: policy helpers and trigger functions. Not exposed through PostgREST.';
create schema reporting;
grant usage on schema reporting to authenticated;
grant usage on schema reporting to camp_reporting;
grant usage on schema reporting to camp_reporting_care;
comment on schema reporting is 'Read-only reports over the caller''s own tenant (camp reporting roles, Supabase users). Soft-deleted rows are left out everywhere.';
create extension if not exists pg_trgm with schema extensions;
create extension if not exists unaccent with schema extensions;

-- ==================== schema auth ====================

CREATE OR REPLACE FUNCTION auth.jwt()
 RETURNS jsonb
 LANGUAGE sql
 STABLE
 SET search_path TO ''
AS $function$
      select coalesce(
        nullif(current_setting('request.jwt.claim', true), ''),
        nullif(current_setting('request.jwt.claims', true), '')
      )::jsonb
    $function$;

CREATE OR REPLACE FUNCTION auth.uid()
 RETURNS uuid
 LANGUAGE sql
 STABLE
 SET search_path TO ''
AS $function$
      select coalesce(
        nullif(current_setting('request.jwt.claim.sub', true), ''),
        nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'sub'
      )::uuid
    $function$;

-- ==================== schema private ====================

create table private.event_horizon (
  only_row boolean default true not null,
  xact_id xid8 not null,
  constraint event_horizon_pkey PRIMARY KEY (only_row),
  constraint event_horizon_one_row CHECK (only_row)
);
grant select on table private.event_horizon to camp_api;

create table private.incident_alerts (
  incident_id uuid not null,
  tenant_id uuid not null,
  raised_at timestamp with time zone default now() not null,
  constraint incident_alerts_pkey PRIMARY KEY (incident_id),
  constraint incident_alerts_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id) ON DELETE CASCADE
);
comment on table private.incident_alerts is 'Incidents raised as incident.needs_attention: each once, whoever raises it (the reporting door or the sweep).';

create table private.list_counts (
  id bigint generated always as identity not null,
  tenant_id uuid not null,
  list text not null,
  scope_id uuid not null,
  status text not null,
  deleted boolean not null,
  n bigint not null,
  constraint list_counts_pkey PRIMARY KEY (id),
  constraint list_counts_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id) ON DELETE CASCADE,
  constraint list_counts_list_check CHECK (list = ANY (ARRAY['participants'::text, 'instances'::text, 'supergroups'::text, 'subgroups'::text, 'blocks'::text, 'rooms'::text]))
);
alter table private.list_counts enable row level security;
CREATE INDEX list_counts_key ON private.list_counts USING btree (tenant_id, list, scope_id, status, deleted) INCLUDE (n);
comment on table private.list_counts is 'Changes to how many rows each list holds per tenant, instance, status and deleted-or-not, appended by triggers in the writing transaction and folded as they accumulate; meta.total of the unfiltered lists is their sum (private.kept_total).';

create table private.overdue_doses (
  tenant_id uuid not null,
  medication_id uuid not null,
  due_at timestamp with time zone not null,
  raised_at timestamp with time zone default now() not null,
  constraint overdue_doses_pkey PRIMARY KEY (medication_id, due_at),
  constraint overdue_doses_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id) ON DELETE CASCADE
);
comment on table private.overdue_doses is 'Scheduled doses raised as medication.overdue (one event each); kept 7 days (private.raise_overdue_doses prunes).';

create unlogged table private.rate_counters (
  subject text not null,
  window_start timestamp with time zone not null,
  hits integer not null,
  constraint rate_counters_pkey PRIMARY KEY (subject, window_start)
);
comment on table private.rate_counters is 'Hits leased per caller (user:<user id>) per rate-limit window. Old windows are deleted by private.rate_lease now and then.';

create table private.reporting_roles (
  role_name text not null,
  tenant_id uuid not null,
  created_at timestamp with time zone default now() not null,
  connection_limit integer default 3 not null,
  statement_timeout interval default '00:00:30'::interval not null,
  idle_timeout interval default '00:01:00'::interval not null,
  care boolean default false not null,
  constraint reporting_roles_pkey PRIMARY KEY (role_name),
  constraint reporting_roles_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id),
  constraint reporting_roles_connection_limit_check CHECK (connection_limit >= 1 AND connection_limit <= 100),
  constraint reporting_roles_idle_timeout_check CHECK (idle_timeout >= '00:00:00.1'::interval AND idle_timeout <= '01:00:00'::interval),
  constraint reporting_roles_role_name_check CHECK (role_name ~ '^[a-z][a-z0-9_]{2,62}$'::text),
  constraint reporting_roles_statement_timeout_check CHECK (statement_timeout >= '00:00:00.1'::interval AND statement_timeout <= '01:00:00'::interval)
);
CREATE INDEX reporting_roles_tenant_id ON private.reporting_roles USING btree (tenant_id);
comment on column private.reporting_roles.statement_timeout is 'Longest statement the role may run; the role starts with it as statement_timeout, and the guard cancels past it even when the role has lifted its own setting.';
comment on column private.reporting_roles.idle_timeout is 'Longest a session of the role may sit idle inside a transaction (holding locks and a snapshot) before the guard ends it.';
comment on column private.reporting_roles.care is 'Whether the role reads care data (contacts, care records, consents and their audit events): camp reporting grant --care.';
comment on table private.reporting_roles is 'Reporting login roles and the one tenant each may read. Keyed on the role name, which only operators can change.';

create table private.room_occupancy (
  room_id uuid not null,
  capacity integer,
  occupancy integer default 0 not null,
  constraint room_occupancy_pkey PRIMARY KEY (room_id),
  constraint room_occupancy_room_id_fkey FOREIGN KEY (room_id) REFERENCES public.rooms(id) ON DELETE CASCADE,
  constraint room_occupancy_not_negative CHECK (occupancy >= 0)
);
alter table private.room_occupancy enable row level security;
CREATE CONSTRAINT TRIGGER room_occupancy_within_capacity AFTER UPDATE ON private.room_occupancy DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (new.occupancy > new.capacity AND (new.occupancy > old.occupancy OR old.capacity IS NULL OR new.capacity < old.capacity)) EXECUTE FUNCTION private.check_room_occupancy();
comment on table private.room_occupancy is 'One row per room: its live participants and capacity, kept by triggers on participants and rooms; the capacity rule is judged on it.';

create table private.webhook_dispatch (
  endpoint_id uuid not null,
  tenant_id uuid not null,
  xact_id xid8 not null,
  event_id bigint not null,
  failing_since timestamp with time zone,
  last_delivered_at timestamp with time zone,
  last_claimed_at timestamp with time zone,
  slow_failures integer default 0 not null,
  paused_until timestamp with time zone,
  constraint webhook_dispatch_pkey PRIMARY KEY (endpoint_id),
  constraint webhook_dispatch_endpoint_id_fkey FOREIGN KEY (endpoint_id) REFERENCES public.webhook_endpoints(id) ON DELETE CASCADE
);
comment on table private.webhook_dispatch is 'Per webhook endpoint: the feed cursor up to which its deliveries are enqueued, and since when it has been failing.';

create table private.webhook_housekeeping (
  only_row boolean default true not null,
  last_run timestamp with time zone not null,
  constraint webhook_housekeeping_pkey PRIMARY KEY (only_row),
  constraint webhook_housekeeping_one_row CHECK (only_row)
);

create table private.webhook_secrets (
  endpoint_id uuid not null,
  secret text not null,
  created_at timestamp with time zone default now() not null,
  expires_at timestamp with time zone,
  constraint webhook_secrets_endpoint_id_fkey FOREIGN KEY (endpoint_id) REFERENCES public.webhook_endpoints(id) ON DELETE CASCADE,
  constraint webhook_secrets_secret_check CHECK (secret ~ '^whsec_[A-Za-z0-9+/]{40,100}={0,2}$'::text)
);
CREATE UNIQUE INDEX webhook_secrets_one_current ON private.webhook_secrets USING btree (endpoint_id) WHERE (expires_at IS NULL);
comment on table private.webhook_secrets is 'Webhook signing secrets (whsec_...). Plain, as HMAC signing needs them; no role but the owner reads them. Deleted with their endpoint.';

create view private.live_api_keys as
 SELECT k.id AS key_id,
    k.tenant_id,
    k.user_id,
    u.email,
    u.role,
    k.scopes,
    k.key_hash,
    k.last_used_at
   FROM public.api_keys k
     JOIN public.users u ON u.id = k.user_id
  WHERE k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now()) AND u.active;
comment on view private.live_api_keys is 'API keys that authenticate: not revoked, not expired, their user active; with the owner''s e-mail and role.';

CREATE OR REPLACE FUNCTION private.administration_json(a public.medication_administrations)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
 SET search_path TO ''
AS $function$
  select jsonb_build_object(
    'id', a.id, 'participant_id', a.participant_id, 'medication_id', a.medication_id, 'medication_name', a.medication_name,
    'outcome', a.outcome, 'administered_at', private.iso_time(a.administered_at), 'due_at', private.iso_time(a.due_at),
    'dose_given', a.dose_given, 'notes', a.notes, 'nonce', a.nonce, 'amends', a.amends, 'reason', a.reason,
    'override_reason', a.override_reason, 'recorded_by', a.recorded_by, 'recorded_by_email', a.recorded_by_email,
    'recorded_at', private.iso_time(a.recorded_at),
    'amended_by', coalesce((
      select jsonb_agg(c.id order by c.recorded_at, c.id)
      from public.medication_administrations c where c.amends = a.id), '[]'::jsonb),
    'current', not exists (select from public.medication_administrations c where c.amends = a.id))
$function$;
grant execute on function private.administration_json(a public.medication_administrations) to public;
grant execute on function private.administration_json(a public.medication_administrations) to camp_care;

CREATE OR REPLACE FUNCTION private.administration_root(p_entry uuid)
 RETURNS uuid
 LANGUAGE sql
 STABLE
 SET search_path TO ''
AS $function$
  with recursive chain(id, amends, depth) as (
    select a.id, a.amends, 0 from public.medication_administrations a where a.id = p_entry
    union all
    select a.id, a.amends, c.depth + 1 from public.medication_administrations a join chain c on a.id = c.amends
    where c.depth < 100
  )
  select id from chain order by depth desc limit 1
$function$;
grant execute on function private.administration_root(p_entry uuid) to public;
grant execute on function private.administration_root(p_entry uuid) to camp_care;

CREATE OR REPLACE FUNCTION private.api_key_caller(p_key_hash bytea)
 RETURNS TABLE(key_id uuid, tenant_id uuid, user_id uuid, email text, role text, scopes text[])
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_last_used timestamptz;
begin
  select l.key_id, l.tenant_id, l.user_id, l.email, l.role, l.scopes, l.last_used_at
  into key_id, tenant_id, user_id, email, role, scopes, v_last_used
  from private.live_api_keys l
  where l.key_hash = p_key_hash;
  if not found then
    raise exception 'no live API key with this hash' using errcode = 'CA401';
  end if;
  if v_last_used is null or v_last_used < now() - interval '1 minute' then
    update public.api_keys k set last_used_at = now() where k.id = api_key_caller.key_id;
  end if;
  return next;
end
$function$;
revoke all on function private.api_key_caller(p_key_hash bytea) from public;

CREATE OR REPLACE FUNCTION private.assert_room_capacity(p_rooms uuid[], p_field text DEFAULT 'room_id'::text)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_over jsonb;
begin
  if private.room_capacity_overridden() then
    return;
  end if;
  select jsonb_agg(jsonb_build_object('room_id', o.room_id, 'room_number', o.room_number,
                                      'capacity', o.capacity, 'occupancy', o.occupancy) order by o.room_id)
  into v_over
  from private.rooms_over_capacity(p_rooms) o;
  if v_over is null then
    return;
  end if;
  raise exception 'room % is over capacity: % places, % participants',
      v_over -> 0 ->> 'room_number', v_over -> 0 ->> 'capacity', v_over -> 0 ->> 'occupancy'
    using errcode = 'CA409', column = p_field, constraint = 'room_capacity', detail = v_over::text;
end
$function$;
revoke all on function private.assert_room_capacity(p_rooms uuid[], p_field text) from public;
grant execute on function private.assert_room_capacity(p_rooms uuid[], p_field text) to camp_api;
comment on function private.assert_room_capacity(p_rooms uuid[], p_field text) is 'Refuses (CA409, constraint room_capacity, every offending room as JSON in DETAIL) when a room of the list holds more live participants than its capacity, unless this transaction overrides capacity.';

CREATE OR REPLACE FUNCTION private.attendance_access()
 RETURNS text
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_claims jsonb := nullif(current_setting('request.jwt.claims', true), '')::jsonb;
  v_scopes text[];
begin
  if v_claims is null or not v_claims ? 'sub' or not v_claims ? 'tenant_id' then
    return 'none';
  end if;
  if not exists (
    select from public.users u
    where u.id = (v_claims ->> 'sub')::uuid and u.tenant_id = (v_claims ->> 'tenant_id')::uuid and u.active
  ) then
    return 'none';
  end if;
  if v_claims ->> 'key_id' is not null then
    select k.scopes into v_scopes
    from public.api_keys k
    where k.id = (v_claims ->> 'key_id')::uuid
      and k.user_id = (v_claims ->> 'sub')::uuid
      and k.revoked_at is null
      and (k.expires_at is null or k.expires_at > now());
    if v_scopes is null then
      return 'none';
    end if;
    if 'write' = any (v_scopes) or 'attendance' = any (v_scopes) then
      return 'write';
    end if;
    return case when 'read' = any (v_scopes) then 'read' else 'none' end;
  end if;
  return case when v_claims ->> 'via' = 'bearer' then 'write' else 'none' end;
end
$function$;
revoke all on function private.attendance_access() from public;
grant execute on function private.attendance_access() to camp_api;
comment on function private.attendance_access() is 'The caller''s access to movements and roll calls (none, read, write): a Bearer token of an active user, or a live key with the write or attendance scope, records; a read key reads.';

CREATE OR REPLACE FUNCTION private.attendance_gate()
 RETURNS void
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO ''
AS $function$
begin
  if private.attendance_access() <> 'write' then
    raise exception 'roll calls need a key with the write or attendance scope' using errcode = 'CA403';
  end if;
end
$function$;
revoke all on function private.attendance_gate() from public;

CREATE OR REPLACE FUNCTION private.attendance_record(p jsonb, p_sync boolean)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_tenant uuid := private.request_tenant_id();
  v_actor jsonb := private.audit_actor();
  v_participant uuid := (p ->> 'participant_id')::uuid;
  v_direction text := p ->> 'direction';
  v_recorded timestamptz := coalesce((p ->> 'recorded_at')::timestamptz, now());
  v_nonce uuid := coalesce((p ->> 'nonce')::uuid, gen_random_uuid());
  v_pickup uuid := (p ->> 'pickup_contact_id')::uuid;
  v_code text := upper(p ->> 'security_code');
  v_override text := nullif(btrim(p ->> 'override_reason'), '');
  v_instance uuid;
  v_status text;
  v_presence text;
  v_since timestamptz;
  v_issue text;
  v_field text;
  v_errcode text;
  v_issued text;
  v_id uuid;
  v_movement jsonb;
begin
  if private.attendance_access() <> 'write' then
    raise exception 'recording movements needs a key with the write or attendance scope' using errcode = 'CA403';
  end if;
  if v_override is not null and not private.caller_is_admin() then
    if not p_sync then
      raise exception 'only an admin may override the pickup rule' using errcode = 'CA403', column = 'override_reason';
    end if;
    return jsonb_build_object('outcome', 'invalid', 'reason', 'only an admin may override the pickup rule', 'field', 'override_reason');
  end if;

  -- One writer per participant at a time: two check-outs of one child take turns, and the second sees the first.
  select pt.instance_id, pt.presence, pt.presence_since into v_instance, v_presence, v_since
  from public.participants pt
  where pt.id = v_participant and pt.tenant_id = v_tenant and pt.deleted_at is null and pt.erased_at is null
  for no key update;
  if not found then
    if not p_sync then
      raise exception 'does not exist' using errcode = 'CA400', column = 'participant_id';
    end if;
    return jsonb_build_object('outcome', 'invalid', 'reason', 'participant not found', 'field', 'participant_id');
  end if;

  if p_sync and exists (select from public.attendance_movements m where m.tenant_id = v_tenant and m.nonce = v_nonce) then
    return jsonb_build_object('outcome', 'duplicate', 'movement', (
      select private.movement_json(m) from public.attendance_movements m where m.tenant_id = v_tenant and m.nonce = v_nonce));
  end if;

  select i.status into v_status from public.instances i where i.id = v_instance for share;
  if v_status = 'archived' then
    v_issue := 'the participant''s instance is archived and read-only';
    v_field := 'participant_id';
    v_errcode := 'CA409';
  elsif v_direction = 'out' and v_override is null then
    -- The pickup rule.
    if v_pickup is null then
      v_issue := 'a check-out names an authorised pickup (pickup_contact_id) or an admin''s override_reason';
      v_field := 'pickup_contact_id';
    elsif not exists (
      select from public.participant_contacts c
      where c.id = v_pickup and c.tenant_id = v_tenant and c.participant_id = v_participant
        and c.deleted_at is null and c.authorised_pickup
    ) then
      v_issue := 'is not a live contact of this participant authorised to collect them';
      v_field := 'pickup_contact_id';
    end if;
    v_errcode := 'CA409';
  end if;

  if v_issue is null and not p_sync then
    if v_recorded < v_since then
      v_issue := 'is before the participant''s last movement (record offline movements with POST /attendance/sync)';
      v_field := 'recorded_at';
    elsif v_direction = coalesce(v_presence, 'out') then
      v_issue := case v_direction when 'in' then 'the participant is already checked in' else 'the participant is not checked in' end;
      v_field := 'direction';
    elsif v_direction = 'out' and v_override is null and v_code is not null
          and v_code is distinct from (select pc.code from public.attendance_present_codes pc where pc.participant_id = v_participant) then
      v_issue := 'does not match the check-in''s security code';
      v_field := 'security_code';
    end if;
    v_errcode := 'CA409';
  end if;

  if v_issue is not null then
    if not p_sync then
      raise exception '%', v_issue using errcode = v_errcode, column = v_field;
    end if;
    return jsonb_build_object('outcome', 'invalid', 'reason', v_issue, 'field', v_field);
  end if;

  insert into public.attendance_movements
    (instance_id, participant_id, direction, recorded_at, recorded_by, location, pickup_contact_id, override_reason, nonce)
  values (v_instance, v_participant, v_direction, v_recorded, (v_actor ->> 'sub')::uuid, p ->> 'location',
          case when v_direction = 'out' then v_pickup end, v_override, v_nonce)
  on conflict (tenant_id, nonce) do nothing
  returning id into v_id;
  if v_id is null then
    -- The nonce was stored by a transaction that committed meanwhile.
    if not p_sync then
      raise exception 'a movement with this nonce is already recorded' using errcode = 'CA409', column = 'nonce';
    end if;
    return jsonb_build_object('outcome', 'duplicate');
  end if;
  if v_direction = 'out' and v_code is not null then
    insert into public.attendance_codes (movement_id, code) values (v_id, v_code);
  end if;
  if v_direction = 'in' and not p_sync then
    -- Unique among the instance's present participants (attendance_present_codes_code_key): check-ins of
    -- one instance draw one after the other, and a clash draws again.
    perform pg_advisory_xact_lock(hashtextextended('attendance codes ' || v_instance::text, 0));
    v_issued := private.new_security_code();
    while exists (
      select from public.attendance_present_codes pc where pc.instance_id = v_instance and pc.code = v_issued
    ) loop
      v_issued := private.new_security_code();
    end loop;
    insert into public.attendance_codes (movement_id, code) values (v_id, v_issued);
  end if;

  perform private.attendance_settle(v_participant);

  select private.movement_json(m) into v_movement from public.attendance_movements m where m.id = v_id;
  return jsonb_build_object(
    'outcome', case when (v_movement ->> 'conflict')::boolean then 'conflict' else 'accepted' end,
    'reason', v_movement ->> 'conflict_reason',
    'movement', v_movement,
    'security_code', v_issued);
end
$function$;
revoke all on function private.attendance_record(p jsonb, p_sync boolean) from public;
grant execute on function private.attendance_record(p jsonb, p_sync boolean) to camp_api;

CREATE OR REPLACE FUNCTION private.attendance_settle(p_participant uuid)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_last record;
  v_instance uuid;
  v_ids uuid[];
  v_reasons text[];
begin
  with ordered as (
    select m.id, m.direction, m.override_reason, m.conflict_reason, c.code,
           lag(m.direction) over w as prev_direction,
           lag(c.code) over w as prev_code
    from public.attendance_movements m
    left join public.attendance_codes c on c.movement_id = m.id
    where m.participant_id = p_participant
    window w as (order by m.recorded_at, m.nonce)
  ), judged as (
    select o.id, o.conflict_reason as was, case
      when o.direction = o.prev_direction then
        case o.direction when 'in' then 'already checked in' else 'already checked out' end
      when o.direction = 'out' and o.prev_direction is null then 'not checked in'
      when o.direction = 'out' and o.override_reason is null and o.code is not null and o.code is distinct from o.prev_code
        then 'security code does not match the check-in''s'
    end as reason
    from ordered o
  )
  select array_agg(j.id), array_agg(j.reason) into v_ids, v_reasons
  from judged j
  where j.reason is distinct from j.was;
  if v_ids is not null then
    update public.attendance_movements m set conflict_reason = c.reason
    from unnest(v_ids, v_reasons) as c(id, reason)
    where m.id = c.id;
  end if;

  select m.id, m.direction, m.recorded_at, c.code into v_last
  from public.attendance_movements m
  left join public.attendance_codes c on c.movement_id = m.id
  where m.participant_id = p_participant
  order by m.recorded_at desc, m.nonce desc
  limit 1;
  update public.participants p set presence = v_last.direction, presence_since = v_last.recorded_at
  where p.id = p_participant
    and (p.presence is distinct from v_last.direction or p.presence_since is distinct from v_last.recorded_at)
  returning p.instance_id into v_instance;
  if v_instance is null then
    select p.instance_id into v_instance from public.participants p where p.id = p_participant;
  end if;
  if v_last.direction = 'in' and v_last.code is not null then
    insert into public.attendance_present_codes as pc (participant_id, tenant_id, instance_id, movement_id, code)
    select p_participant, p.tenant_id, v_instance, v_last.id, v_last.code from public.participants p where p.id = p_participant
    on conflict (participant_id) do update
    set instance_id = excluded.instance_id, movement_id = excluded.movement_id, code = excluded.code
    where pc.movement_id is distinct from excluded.movement_id;
  else
    delete from public.attendance_present_codes where participant_id = p_participant;
  end if;
end
$function$;
revoke all on function private.attendance_settle(p_participant uuid) from public;

CREATE OR REPLACE FUNCTION private.attendance_sync(p_records jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_record record;
  v_answer jsonb;
  v_answers jsonb := '[]'::jsonb;
begin
  if private.attendance_access() <> 'write' then
    raise exception 'recording movements needs a key with the write or attendance scope' using errcode = 'CA403';
  end if;
  for v_record in
    select r.value, r.n - 1 as index
    from jsonb_array_elements(p_records) with ordinality as r(value, n)
    order by r.value ->> 'participant_id', r.n
  loop
    v_answer := private.attendance_record(v_record.value, true);
    v_answers := v_answers || jsonb_build_array(jsonb_strip_nulls(jsonb_build_object(
      'index', v_record.index,
      'nonce', v_record.value ->> 'nonce',
      'outcome', v_answer ->> 'outcome',
      'reason', v_answer ->> 'reason',
      'field', v_answer ->> 'field',
      'movement_id', v_answer -> 'movement' ->> 'id')));
  end loop;
  return (select coalesce(jsonb_agg(a.value order by (a.value ->> 'index')::int), '[]'::jsonb)
          from jsonb_array_elements(v_answers) a);
end
$function$;
revoke all on function private.attendance_sync(p_records jsonb) from public;
grant execute on function private.attendance_sync(p_records jsonb) to camp_api;

CREATE OR REPLACE FUNCTION private.audit_actor()
 RETURNS jsonb
 LANGUAGE sql
 STABLE
 SET search_path TO ''
AS $function$
  select coalesce(nullif(current_setting('request.jwt.claims', true), '')::jsonb, '{}'::jsonb)
$function$;

CREATE OR REPLACE FUNCTION private.audit_care_flag_reads(p_participants uuid[])
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_actor jsonb := private.audit_actor();
begin
  if private.care_access() = 'none' then
    raise exception 'no access to care data' using errcode = 'CA403';
  end if;
  insert into public.audit_events
    (tenant_id, actor_user_id, actor_email, actor_via, actor_key_id, request_id, action, resource_type, resource_id)
  select private.request_tenant_id(), (v_actor ->> 'sub')::uuid, v_actor ->> 'email', coalesce(v_actor ->> 'via', 'operator'),
         (v_actor ->> 'key_id')::uuid, v_actor ->> 'request_id', 'read', 'care_flag', p.id
  from unnest(p_participants) as p(id);
end
$function$;
revoke all on function private.audit_care_flag_reads(p_participants uuid[]) from public;
grant execute on function private.audit_care_flag_reads(p_participants uuid[]) to camp_api;

CREATE OR REPLACE FUNCTION private.audit_care_read(p_type text, p_participant uuid)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_actor jsonb := private.audit_actor();
begin
  insert into public.audit_events
    (tenant_id, actor_user_id, actor_email, actor_via, actor_key_id, request_id, action, resource_type, resource_id)
  values (private.request_tenant_id(), (v_actor ->> 'sub')::uuid, v_actor ->> 'email', coalesce(v_actor ->> 'via', 'operator'),
          (v_actor ->> 'key_id')::uuid, v_actor ->> 'request_id', 'read', p_type, p_participant);
end
$function$;
revoke all on function private.audit_care_read(p_type text, p_participant uuid) from public;
grant execute on function private.audit_care_read(p_type text, p_participant uuid) to camp_care;

CREATE OR REPLACE FUNCTION private.audit_changes()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
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
$function$;

CREATE OR REPLACE FUNCTION private.audit_changes_of(p_action text, p_changes jsonb)
 RETURNS jsonb
 LANGUAGE sql
 IMMUTABLE
 SET search_path TO ''
AS $function$
  select case when p_action <> 'create' then p_changes
    else (select coalesce(jsonb_object_agg(f.key, jsonb_build_array(null, f.value)), '{}') from jsonb_each(p_changes) f) end
$function$;
grant execute on function private.audit_changes_of(p_action text, p_changes jsonb) to public;
grant execute on function private.audit_changes_of(p_action text, p_changes jsonb) to camp_api;
grant execute on function private.audit_changes_of(p_action text, p_changes jsonb) to camp_reporting;

CREATE OR REPLACE FUNCTION private.audit_incident(p_action text, p_type text, p_incident uuid, p_changes jsonb)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_actor jsonb := private.audit_actor();
begin
  insert into public.audit_events
    (tenant_id, actor_user_id, actor_email, actor_via, actor_key_id, request_id, action, resource_type, resource_id, changes)
  values (private.request_tenant_id(), (v_actor ->> 'sub')::uuid, v_actor ->> 'email', coalesce(v_actor ->> 'via', 'operator'),
          (v_actor ->> 'key_id')::uuid, v_actor ->> 'request_id', p_action, p_type, p_incident, coalesce(p_changes, '{}'::jsonb));
end
$function$;
revoke all on function private.audit_incident(p_action text, p_type text, p_incident uuid, p_changes jsonb) from public;
grant execute on function private.audit_incident(p_action text, p_type text, p_incident uuid, p_changes jsonb) to camp_care;

CREATE OR REPLACE FUNCTION private.audit_incident_reads(p_reads jsonb)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_actor jsonb := private.audit_actor();
begin
  insert into public.audit_events
    (tenant_id, actor_user_id, actor_email, actor_via, actor_key_id, request_id, action, resource_type, resource_id)
  select private.request_tenant_id(), (v_actor ->> 'sub')::uuid, v_actor ->> 'email', coalesce(v_actor ->> 'via', 'operator'),
         (v_actor ->> 'key_id')::uuid, v_actor ->> 'request_id', 'read', r ->> 1, (r ->> 0)::uuid
  from jsonb_array_elements(p_reads) r;
end
$function$;
revoke all on function private.audit_incident_reads(p_reads jsonb) from public;
grant execute on function private.audit_incident_reads(p_reads jsonb) to camp_care;

CREATE OR REPLACE FUNCTION private.audit_tenant_settings()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
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
$function$;

CREATE OR REPLACE FUNCTION private.authenticate_api_key(p_key_hash bytea)
 RETURNS TABLE(key_id uuid, tenant_id uuid, user_id uuid, email text, role text, scopes text[])
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_last_used timestamptz;
begin
  select l.key_id, l.tenant_id, l.user_id, l.email, l.role, l.scopes, l.last_used_at
  into key_id, tenant_id, user_id, email, role, scopes, v_last_used
  from private.live_api_keys l
  where l.key_hash = p_key_hash;
  if not found then
    return;
  end if;
  if v_last_used is null or v_last_used < now() - interval '1 minute' then
    update public.api_keys k set last_used_at = now() where k.id = authenticate_api_key.key_id;
  end if;
  return next;
end
$function$;
revoke all on function private.authenticate_api_key(p_key_hash bytea) from public;

CREATE OR REPLACE FUNCTION private.caller_is_admin()
 RETURNS boolean
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO ''
AS $function$
  select exists (
    select from public.users u
    where u.id = (private.audit_actor() ->> 'sub')::uuid
      and u.tenant_id = private.request_tenant_id() and u.role = 'admin' and u.active)
$function$;
revoke all on function private.caller_is_admin() from public;
grant execute on function private.caller_is_admin() to camp_api;

CREATE OR REPLACE FUNCTION private.caller_is_live()
 RETURNS boolean
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_claims jsonb := nullif(current_setting('request.jwt.claims', true), '')::jsonb;
begin
  if v_claims is null or not v_claims ? 'sub' or not v_claims ? 'tenant_id' then
    return false;
  end if;
  if v_claims ->> 'key_id' is not null then
    return exists (
      select from private.live_api_keys k
      where k.key_id = (v_claims ->> 'key_id')::uuid
        and k.user_id = (v_claims ->> 'sub')::uuid
        and k.tenant_id = (v_claims ->> 'tenant_id')::uuid);
  end if;
  return exists (
    select from public.users u
    where u.id = (v_claims ->> 'sub')::uuid and u.tenant_id = (v_claims ->> 'tenant_id')::uuid and u.active);
end
$function$;
revoke all on function private.caller_is_live() from public;
grant execute on function private.caller_is_live() to camp_api;
comment on function private.caller_is_live() is 'Whether the user (and, for a key, the key) the request''s claims name may still call: active, not revoked, not expired.';

CREATE OR REPLACE FUNCTION private.can_administer(p_user_id uuid)
 RETURNS boolean
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO ''
AS $function$
  select exists (
    select from public.users u
    where u.id = p_user_id and u.active and u.role = 'admin'
      and (u.auth_subject is not null
           or exists (select from public.api_keys k
                      where k.user_id = u.id and k.revoked_at is null
                        and (k.expires_at is null or k.expires_at > now())
                        and 'write' = any (k.scopes)))
  )
$function$;
revoke all on function private.can_administer(p_user_id uuid) from public;
comment on function private.can_administer(p_user_id uuid) is 'Whether the user is an active admin who can make changes: a live read-write key, or a linked Bearer identity.';

CREATE OR REPLACE FUNCTION private.care_access()
 RETURNS text
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_claims jsonb := nullif(current_setting('request.jwt.claims', true), '')::jsonb;
  v_level text;
  v_scopes text[];
begin
  if v_claims is null or not v_claims ? 'sub' or not v_claims ? 'tenant_id' then
    return 'none';
  end if;
  select u.care_access into v_level
  from public.users u
  where u.id = (v_claims ->> 'sub')::uuid and u.tenant_id = (v_claims ->> 'tenant_id')::uuid and u.active;
  if v_level is null or v_level = 'none' then
    return 'none';
  end if;
  if v_claims ->> 'key_id' is not null then
    select k.scopes into v_scopes
    from public.api_keys k
    where k.id = (v_claims ->> 'key_id')::uuid
      and k.user_id = (v_claims ->> 'sub')::uuid
      and k.revoked_at is null
      and (k.expires_at is null or k.expires_at > now());
    if v_scopes is null or not 'care' = any (v_scopes) then
      return 'none';
    end if;
    -- A read-only key reads, whatever its user may do.
    if v_level = 'write' and not 'write' = any (v_scopes) then
      return 'read';
    end if;
    return v_level;
  end if;
  -- No key: a verified Bearer token of the user. Anything else (an operator's
  -- scope from the CLI, claims without `via`) reaches no care data.
  if v_claims ->> 'via' = 'bearer' then
    return v_level;
  end if;
  return 'none';
end
$function$;
grant execute on function private.care_access() to public;
grant execute on function private.care_access() to camp_api;
grant execute on function private.care_access() to camp_care;
comment on function private.care_access() is 'The caller''s care access (none, read, write), from the user the claims name (users.care_access) and, for a key, the key''s care and write scopes (api_keys.scopes by the claims'' key_id).';

CREATE OR REPLACE FUNCTION private.care_consents(p_participant uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
begin
  perform private.care_gate(p_participant, 'read');
  perform private.audit_care_read('consents', p_participant);
  return private.consents_json(p_participant);
end
$function$;
alter function private.care_consents(p_participant uuid) owner to camp_care;
revoke all on function private.care_consents(p_participant uuid) from public;
grant execute on function private.care_consents(p_participant uuid) to camp_api;

CREATE OR REPLACE FUNCTION private.care_consents_record(p_participant uuid, p jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_actor jsonb := private.audit_actor();
begin
  -- A caller without care write access is refused (by the gate) before it waits for any turn.
  if private.care_access() <> 'write' then
    perform private.care_gate(p_participant, 'write');
  end if;
  -- Answers of one participant are recorded one request after the other, so seq follows commit order.
  perform pg_advisory_xact_lock(hashtextextended('care consents ' || p_participant::text, 0));
  perform private.care_gate(p_participant, 'write');
  if (select count(*) from public.participant_consents c where c.participant_id = p_participant) >= 999 then
    raise exception 'a participant has at most 1,000 consent answers' using errcode = 'CA409';
  end if;
  perform set_config('camp.withdrawn_photo', '', true);
  insert into public.participant_consents (participant_id, kind, status, note, recorded_by, recorded_by_email)
  select p_participant, k.kind, p ->> k.kind, p ->> 'note', (v_actor ->> 'sub')::uuid, v_actor ->> 'email'
  from (values ('photo', 1), ('emergency_medical_treatment', 2)) as k(kind, position)
  where p ? k.kind
  order by k.position;
  return private.consents_json(p_participant)
    || jsonb_build_object('removed_photo_key', nullif(current_setting('camp.withdrawn_photo', true), ''));
end
$function$;
alter function private.care_consents_record(p_participant uuid, p jsonb) owner to camp_care;
revoke all on function private.care_consents_record(p_participant uuid, p jsonb) from public;
grant execute on function private.care_consents_record(p_participant uuid, p jsonb) to camp_api;

CREATE OR REPLACE FUNCTION private.care_contact(p_participant uuid, p_contact uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_found jsonb;
begin
  perform private.care_gate(p_participant, 'read');
  perform private.audit_care_read('contacts', p_participant);
  select jsonb_build_object('record', private.contact_json(c), 'version', c.xmin::text) into v_found
  from public.participant_contacts c
  where c.id = p_contact and c.participant_id = p_participant and c.deleted_at is null;
  if v_found is null then
    raise exception 'contact not found' using errcode = 'CA404';
  end if;
  return v_found;
end
$function$;
alter function private.care_contact(p_participant uuid, p_contact uuid) owner to camp_care;
revoke all on function private.care_contact(p_participant uuid, p_contact uuid) from public;
grant execute on function private.care_contact(p_participant uuid, p_contact uuid) to camp_api;

CREATE OR REPLACE FUNCTION private.care_contact_create(p_participant uuid, p jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_created jsonb;
begin
  perform private.care_gate(p_participant, 'write');
  -- Creates for one participant take turns, so the count below holds.
  perform pg_advisory_xact_lock(hashtextextended('care contacts ' || p_participant::text, 0));
  if (select count(*) from public.participant_contacts c where c.participant_id = p_participant) >= 100 then
    raise exception 'a participant has at most 100 contacts, deleted ones included' using errcode = 'CA409';
  end if;
  insert into public.participant_contacts as c
    (participant_id, name, relationship, phone, phone_alt, email, emergency, emergency_order, authorised_pickup, notes)
  values (p_participant, p ->> 'name', p ->> 'relationship', p ->> 'phone', p ->> 'phone_alt', p ->> 'email',
          coalesce((p ->> 'emergency')::boolean, false), (p ->> 'emergency_order')::int,
          coalesce((p ->> 'authorised_pickup')::boolean, false), p ->> 'notes')
  returning jsonb_build_object('record', private.contact_json(c), 'version', c.xmin::text) into v_created;
  return v_created;
end
$function$;
alter function private.care_contact_create(p_participant uuid, p jsonb) owner to camp_care;
revoke all on function private.care_contact_create(p_participant uuid, p jsonb) from public;
grant execute on function private.care_contact_create(p_participant uuid, p jsonb) to camp_api;

CREATE OR REPLACE FUNCTION private.care_contact_delete(p_participant uuid, p_contact uuid, p_versions text[])
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_version text;
begin
  perform private.care_gate(p_participant, 'write');
  select c.xmin::text into v_version
  from public.participant_contacts c
  where c.id = p_contact and c.participant_id = p_participant and c.deleted_at is null
  for update;
  if v_version is null then
    raise exception 'contact not found' using errcode = 'CA404';
  end if;
  if not private.version_matches(p_versions, v_version) then
    raise exception 'the record has changed since you read it' using errcode = 'CA412';
  end if;
  update public.participant_contacts set deleted_at = now() where id = p_contact;
end
$function$;
alter function private.care_contact_delete(p_participant uuid, p_contact uuid, p_versions text[]) owner to camp_care;
revoke all on function private.care_contact_delete(p_participant uuid, p_contact uuid, p_versions text[]) from public;
grant execute on function private.care_contact_delete(p_participant uuid, p_contact uuid, p_versions text[]) to camp_api;

CREATE OR REPLACE FUNCTION private.care_contact_update(p_participant uuid, p_contact uuid, p jsonb, p_versions text[])
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_version text;
  v_changed jsonb;
begin
  perform private.care_gate(p_participant, 'write');
  select c.xmin::text into v_version
  from public.participant_contacts c
  where c.id = p_contact and c.participant_id = p_participant and c.deleted_at is null
  for update;
  if v_version is null then
    raise exception 'contact not found' using errcode = 'CA404';
  end if;
  if not private.version_matches(p_versions, v_version) then
    raise exception 'the record has changed since you read it' using errcode = 'CA412';
  end if;
  update public.participant_contacts as c set
    name = case when p ? 'name' then p ->> 'name' else c.name end,
    relationship = case when p ? 'relationship' then p ->> 'relationship' else c.relationship end,
    phone = case when p ? 'phone' then p ->> 'phone' else c.phone end,
    phone_alt = case when p ? 'phone_alt' then p ->> 'phone_alt' else c.phone_alt end,
    email = case when p ? 'email' then p ->> 'email' else c.email end,
    emergency = case when p ? 'emergency' then (p ->> 'emergency')::boolean else c.emergency end,
    emergency_order = case when p ? 'emergency_order' then (p ->> 'emergency_order')::int
                           when p ? 'emergency' and not (p ->> 'emergency')::boolean then null
                           else c.emergency_order end,
    authorised_pickup = case when p ? 'authorised_pickup' then (p ->> 'authorised_pickup')::boolean else c.authorised_pickup end,
    notes = case when p ? 'notes' then p ->> 'notes' else c.notes end
  where c.id = p_contact
  returning jsonb_build_object('record', private.contact_json(c), 'version', c.xmin::text) into v_changed;
  return v_changed;
end
$function$;
alter function private.care_contact_update(p_participant uuid, p_contact uuid, p jsonb, p_versions text[]) owner to camp_care;
revoke all on function private.care_contact_update(p_participant uuid, p_contact uuid, p jsonb, p_versions text[]) from public;
grant execute on function private.care_contact_update(p_participant uuid, p_contact uuid, p jsonb, p_versions text[]) to camp_api;

CREATE OR REPLACE FUNCTION private.care_contacts(p_participant uuid, p_include_deleted boolean)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
begin
  perform private.care_gate(p_participant, 'read');
  perform private.audit_care_read('contacts', p_participant);
  return (
    select coalesce(jsonb_agg(private.contact_json(c) order by c.emergency_order, c.created_at, c.id), '[]'::jsonb)
    from public.participant_contacts c
    where c.participant_id = p_participant and (p_include_deleted or c.deleted_at is null)
  );
end
$function$;
alter function private.care_contacts(p_participant uuid, p_include_deleted boolean) owner to camp_care;
revoke all on function private.care_contacts(p_participant uuid, p_include_deleted boolean) from public;
grant execute on function private.care_contacts(p_participant uuid, p_include_deleted boolean) to camp_api;

CREATE OR REPLACE FUNCTION private.care_export_cells(p_participant uuid)
 RETURNS text[]
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_cells text[] := '{}'::text[];
  v_contact public.participant_contacts;
  v_care public.participant_care;
  v_n int := 0;
begin
  if private.care_access() = 'none' then
    raise exception 'no access to care data (needs the user''s care_access, and for an API key its care scope)'
      using errcode = 'CA403';
  end if;
  -- What the export reads, as the care routes record their reads of the same records.
  perform private.audit_care_read('contacts', p_participant);
  perform private.audit_care_read('care_record', p_participant);
  perform private.audit_care_read('consents', p_participant);
  for v_contact in
    select c.* from public.participant_contacts c
    where c.participant_id = p_participant and c.deleted_at is null
    order by c.emergency_order, c.created_at, c.id
    limit 3
  loop
    v_n := v_n + 1;
    v_cells := v_cells || array[v_contact.name, v_contact.relationship, v_contact.phone, v_contact.email,
      case when v_contact.emergency then 'yes' else 'no' end, case when v_contact.authorised_pickup then 'yes' else 'no' end];
  end loop;
  while v_n < 3 loop
    v_n := v_n + 1;
    v_cells := v_cells || array[null, null, null, null, null, null]::text[];
  end loop;
  select r.* into v_care from public.participant_care r where r.id = p_participant;
  v_cells := v_cells || array[
    (select string_agg((a ->> 'name') || ':' || (a ->> 'severity'), '; ' order by n)
       from jsonb_array_elements(coalesce(v_care.allergies, '[]'::jsonb)) with ordinality as x(a, n)),
    v_care.dietary_requirements,
    v_care.medical_conditions];
  v_cells := v_cells || array(
    select coalesce((select c.status from public.participant_consents c
                     where c.participant_id = p_participant and c.kind = k.kind
                     order by c.seq desc limit 1), 'unknown')
    from unnest(array['photo', 'emergency_medical_treatment']) with ordinality as k(kind, n)
    order by k.n);
  return v_cells;
end
$function$;
alter function private.care_export_cells(p_participant uuid) owner to camp_care;
revoke all on function private.care_export_cells(p_participant uuid) from public;
grant execute on function private.care_export_cells(p_participant uuid) to camp_api;

CREATE OR REPLACE FUNCTION private.care_gate(p_participant uuid, p_need text)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_level text := private.care_access();
  v_instance uuid;
begin
  if v_level = 'none' then
    raise exception 'no access to care data (needs the user''s care_access, and for an API key its care scope)'
      using errcode = 'CA403';
  end if;
  if p_need = 'write' and v_level <> 'write' then
    raise exception 'read-only access to care data (needs care_access write, and for an API key its write scope)'
      using errcode = 'CA403';
  end if;
  if p_need = 'write' then
    select p.instance_id into v_instance
    from public.participants p
    where p.id = p_participant and p.tenant_id = private.request_tenant_id() and p.deleted_at is null
    for share;
  else
    select p.instance_id into v_instance
    from public.participants p
    where p.id = p_participant and p.tenant_id = private.request_tenant_id() and p.deleted_at is null;
  end if;
  if not found then
    raise exception 'participant not found' using errcode = 'CA404';
  end if;
  if p_need = 'write' then
    perform private.lock_writable_instance(v_instance);
  end if;
end
$function$;
revoke all on function private.care_gate(p_participant uuid, p_need text) from public;
grant execute on function private.care_gate(p_participant uuid, p_need text) to camp_care;

CREATE OR REPLACE FUNCTION private.care_import(p_rows jsonb, p_write boolean)
 RETURNS uuid[]
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_row jsonb;
  v_participant uuid;
  v_contact jsonb;
  v_existing public.participant_contacts;
  v_care public.participant_care;
  v_diff jsonb;
  v_differs boolean;
  v_changed uuid[] := '{}'::uuid[];
begin
  if private.care_access() <> 'write' then
    raise exception 'no write access to care data (needs care_access write, and for an API key its care and write scopes)'
      using errcode = 'CA403';
  end if;
  for v_row in select value from jsonb_array_elements(p_rows) loop
    v_participant := (v_row ->> 'participant_id')::uuid;
    v_differs := false;

    for v_contact in select value from jsonb_array_elements(coalesce(v_row -> 'contacts', '[]'::jsonb)) loop
      select c.* into v_existing
      from public.participant_contacts c
      where c.participant_id = v_participant and c.deleted_at is null
        and lower(btrim(c.name)) = lower(btrim(v_contact ->> 'name'))
      order by c.created_at, c.id
      limit 1;
      if not found then
        v_differs := true;
        if p_write then
          perform private.care_contact_create(v_participant, v_contact);
        end if;
      else
        select coalesce(jsonb_object_agg(f.key, f.value), '{}'::jsonb) into v_diff
        from jsonb_each(v_contact) f
        where f.key <> 'name' and f.value is distinct from to_jsonb(v_existing) -> f.key;
        if v_diff <> '{}'::jsonb then
          v_differs := true;
          if p_write then
            perform private.care_contact_update(v_participant, v_existing.id, v_diff, null);
          end if;
        end if;
      end if;
    end loop;

    if v_row ? 'care' then
      select r.* into v_care from public.participant_care r where r.id = v_participant;
      select coalesce(jsonb_object_agg(f.key, f.value), '{}'::jsonb) into v_diff
      from jsonb_each(v_row -> 'care') f
      where f.value is distinct from coalesce(to_jsonb(v_care) -> f.key,
                                              case when f.key in ('allergies', 'medications') then '[]'::jsonb else 'null'::jsonb end);
      if v_diff <> '{}'::jsonb then
        v_differs := true;
        if p_write then
          perform private.care_record_write(v_participant, v_diff, false, null);
        end if;
      end if;
    end if;

    if v_row ? 'consents' then
      select coalesce(jsonb_object_agg(k.key, k.value), '{}'::jsonb) into v_diff
      from jsonb_each(v_row -> 'consents') k
      where k.key in ('photo', 'emergency_medical_treatment')
        and (k.value #>> '{}') is distinct from coalesce((
          select c.status from public.participant_consents c
          where c.participant_id = v_participant and c.kind = k.key
          order by c.seq desc limit 1), 'unknown');
      if v_diff <> '{}'::jsonb then
        v_differs := true;
        if p_write then
          perform private.care_consents_record(v_participant, v_diff);
        end if;
      end if;
    end if;

    if v_differs then
      v_changed := v_changed || v_participant;
    end if;
  end loop;
  return v_changed;
end
$function$;
alter function private.care_import(p_rows jsonb, p_write boolean) owner to camp_care;
revoke all on function private.care_import(p_rows jsonb, p_write boolean) from public;
grant execute on function private.care_import(p_rows jsonb, p_write boolean) to camp_api;

CREATE OR REPLACE FUNCTION private.care_record(p_participant uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_found jsonb;
begin
  perform private.care_gate(p_participant, 'read');
  perform private.audit_care_read('care_record', p_participant);
  select jsonb_build_object('record', private.care_record_json(p_participant, r), 'version', r.xmin::text) into v_found
  from public.participant_care r where r.id = p_participant;
  return coalesce(v_found, jsonb_build_object('record', private.care_record_json(p_participant, null), 'version', null));
end
$function$;
alter function private.care_record(p_participant uuid) owner to camp_care;
revoke all on function private.care_record(p_participant uuid) from public;
grant execute on function private.care_record(p_participant uuid) to camp_api;

CREATE OR REPLACE FUNCTION private.care_record_json(p_participant uuid, r public.participant_care)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
 SET search_path TO ''
AS $function$
  select jsonb_build_object(
    'participant_id', p_participant,
    'allergies', coalesce(r.allergies, '[]'::jsonb),
    'dietary_requirements', r.dietary_requirements,
    'medical_conditions', r.medical_conditions,
    'medications', coalesce((
      select jsonb_agg(jsonb_build_object('id', m.id, 'name', m.name, 'dose', m.dose,
                                          'schedule', private.medication_schedule_text(m)) order by m.created_at, m.id)
      from public.participant_medications m
      where m.participant_id = p_participant and m.deleted_at is null), '[]'::jsonb),
    'care_notes', r.care_notes,
    'created_at', private.iso_time(r.created_at),
    'updated_at', private.iso_time(r.updated_at))
$function$;
grant execute on function private.care_record_json(p_participant uuid, r public.participant_care) to public;
grant execute on function private.care_record_json(p_participant uuid, r public.participant_care) to camp_care;

CREATE OR REPLACE FUNCTION private.care_record_write(p_participant uuid, p jsonb, p_replace boolean, p_versions text[])
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_version text;
  v_written jsonb;
begin
  perform private.care_gate(p_participant, 'write');
  perform pg_advisory_xact_lock(hashtextextended('care record ' || p_participant::text, 0));
  select r.xmin::text into v_version from public.participant_care r where r.id = p_participant for update;
  if not private.version_matches(p_versions, v_version) then
    raise exception 'the record has changed since you read it' using errcode = 'CA412';
  end if;
  if v_version is null then
    insert into public.participant_care as r (id, allergies, dietary_requirements, medical_conditions, care_notes)
    values (p_participant, coalesce(p -> 'allergies', '[]'::jsonb), p ->> 'dietary_requirements', p ->> 'medical_conditions',
            p ->> 'care_notes')
    returning jsonb_build_object('record', private.care_record_json(p_participant, r), 'version', r.xmin::text) into v_written;
  else
    update public.participant_care as r set
      allergies = case when p_replace or p ? 'allergies' then coalesce(p -> 'allergies', '[]'::jsonb) else r.allergies end,
      dietary_requirements = case when p_replace or p ? 'dietary_requirements' then p ->> 'dietary_requirements' else r.dietary_requirements end,
      medical_conditions = case when p_replace or p ? 'medical_conditions' then p ->> 'medical_conditions' else r.medical_conditions end,
      care_notes = case when p_replace or p ? 'care_notes' then p ->> 'care_notes' else r.care_notes end
    where r.id = p_participant
    returning jsonb_build_object('record', private.care_record_json(p_participant, r), 'version', r.xmin::text) into v_written;
  end if;
  return v_written;
end
$function$;
alter function private.care_record_write(p_participant uuid, p jsonb, p_replace boolean, p_versions text[]) owner to camp_care;
revoke all on function private.care_record_write(p_participant uuid, p jsonb, p_replace boolean, p_versions text[]) from public;
grant execute on function private.care_record_write(p_participant uuid, p jsonb, p_replace boolean, p_versions text[]) to camp_api;

CREATE OR REPLACE FUNCTION private.care_replay(p_participant uuid, p_type text)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
begin
  if not private.is_care_resource(p_type) then
    raise exception 'not a care resource: %', p_type using errcode = 'CA400';
  end if;
  perform private.care_gate(p_participant, 'read');
  perform private.audit_care_read(p_type, p_participant);
end
$function$;
alter function private.care_replay(p_participant uuid, p_type text) owner to camp_care;
revoke all on function private.care_replay(p_participant uuid, p_type text) from public;
grant execute on function private.care_replay(p_participant uuid, p_type text) to camp_api;

CREATE OR REPLACE FUNCTION private.check_room_occupancy()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
begin
  perform private.assert_room_capacity(array[new.room_id],
    case when new.capacity is distinct from old.capacity then 'capacity' else 'room_id' end);
  return null;
end
$function$;

CREATE OR REPLACE FUNCTION private.claim_webhook_deliveries(p_limit integer, p_lease interval, p_per_endpoint integer, p_per_tenant integer)
 RETURNS TABLE(id uuid, tenant_id uuid, endpoint_id uuid, url text, event_id bigint, event_type text, resource_id uuid, occurred_at timestamp with time zone, tries integer, cycle_started_at timestamp with time zone, lease_token uuid, secrets text[], data jsonb)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
begin
  perform pg_advisory_xact_lock(hashtextextended('webhook claims', 0));
  return query
  with busy as (
    select f.tenant_id, f.endpoint_id, count(*)::int as n
    from public.webhook_deliveries f
    where f.status = 'pending' and f.lease_token is not null and f.next_attempt_at > now()
    group by f.tenant_id, f.endpoint_id
  ), tenants as (
    select x.tenant_id, max(x.last_claimed_at) as last_claimed_at,
           p_per_tenant - coalesce((select sum(b.n) from busy b where b.tenant_id = x.tenant_id), 0)::int as free
    from private.webhook_dispatch x
    group by x.tenant_id
  ), ready as (
    select w.id, w.tenant_id, x.last_claimed_at, t.last_claimed_at as tenant_last, t.free as tenant_free,
           (case when x.slow_failures > 0 then 1 else p_per_endpoint end) - coalesce(b.n, 0) as free
    from public.webhook_endpoints w
    join private.webhook_dispatch x on x.endpoint_id = w.id
    join tenants t on t.tenant_id = w.tenant_id
    left join busy b on b.endpoint_id = w.id
    where w.enabled and w.deleted_at is null and t.free > 0 and (x.paused_until is null or x.paused_until <= now())
  ), candidates as (
    select c.id, c.next_attempt_at, r.tenant_last, r.tenant_free,
           row_number() over (partition by r.tenant_id
                              order by c.nth, r.last_claimed_at nulls first, c.next_attempt_at) as turn
    from ready r
    cross join lateral (
      select d.id, d.next_attempt_at, row_number() over (order by d.next_attempt_at) as nth
      from public.webhook_deliveries d
      where d.endpoint_id = r.id and d.status = 'pending' and d.next_attempt_at <= now()
      order by d.next_attempt_at
      limit greatest(r.free, 0)) c
  ), picked as (
    select d.id, d.lease_token as old_lease, d.leased_at as old_leased_at
    from public.webhook_deliveries d
    join candidates c on c.id = d.id
    where c.turn <= c.tenant_free and d.status = 'pending' and d.next_attempt_at <= now()
    order by c.turn, c.tenant_last nulls first, c.next_attempt_at
    limit p_limit
    for update of d skip locked
  ), interrupted as (
    insert into public.webhook_attempts (tenant_id, delivery_id, started_at, error)
    select d.tenant_id, d.id, p.old_leased_at, 'interrupted: the worker stopped before an answer; sent again'
    from picked p join public.webhook_deliveries d on d.id = p.id
    where p.old_lease is not null
  ), leased as (
    update public.webhook_deliveries d
    set lease_token = gen_random_uuid(), leased_at = now(), next_attempt_at = now() + p_lease,
        tries = d.tries + 1, cycle_started_at = coalesce(d.cycle_started_at, now())
    from picked p where d.id = p.id
    returning d.*
  ), turns as (
    update private.webhook_dispatch x set last_claimed_at = clock_timestamp()
    where x.endpoint_id in (select l.endpoint_id from leased l)
  )
  select l.id, l.tenant_id, l.endpoint_id, w.url, l.event_id, l.event_type, l.resource_id, l.occurred_at, l.tries,
         l.cycle_started_at, l.lease_token,
         array(select s.secret from private.webhook_secrets s
               where s.endpoint_id = l.endpoint_id and (s.expires_at is null or s.expires_at > now())
               order by s.created_at desc),
         l.data
  from leased l join public.webhook_endpoints w on w.id = l.endpoint_id;
end
$function$;
revoke all on function private.claim_webhook_deliveries(p_limit integer, p_lease interval, p_per_endpoint integer, p_per_tenant integer) from public;

CREATE OR REPLACE FUNCTION private.clear_presence_of_erased()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO ''
AS $function$
begin
  new.presence := null;
  new.presence_since := null;
  return new;
end
$function$;

CREATE OR REPLACE FUNCTION private.consents_json(p_participant uuid)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
 SET search_path TO ''
AS $function$
  with answers as (
    select c.* from public.participant_consents c where c.participant_id = p_participant
  ), answer_json as (
    select a.kind, a.seq, jsonb_build_object(
      'id', a.id, 'kind', a.kind, 'status', a.status, 'note', a.note, 'recorded_by', a.recorded_by,
      'recorded_by_email', a.recorded_by_email, 'recorded_at', private.iso_time(a.recorded_at)) as answer
    from answers a
  )
  select jsonb_build_object(
    'participant_id', p_participant,
    'photo', coalesce(
      (select j.answer - 'id' - 'kind' from answer_json j where j.kind = 'photo' order by j.seq desc limit 1),
      '{"status": "unknown", "note": null, "recorded_by": null, "recorded_by_email": null, "recorded_at": null}'::jsonb),
    'emergency_medical_treatment', coalesce(
      (select j.answer - 'id' - 'kind' from answer_json j where j.kind = 'emergency_medical_treatment' order by j.seq desc limit 1),
      '{"status": "unknown", "note": null, "recorded_by": null, "recorded_by_email": null, "recorded_at": null}'::jsonb),
    'history', coalesce((select jsonb_agg(j.answer order by j.seq desc) from answer_json j), '[]'::jsonb))
$function$;
grant execute on function private.consents_json(p_participant uuid) to public;
grant execute on function private.consents_json(p_participant uuid) to camp_care;

CREATE OR REPLACE FUNCTION private.contact_json(c public.participant_contacts)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
 SET search_path TO ''
AS $function$
  select jsonb_build_object(
    'id', c.id, 'participant_id', c.participant_id, 'name', c.name, 'relationship', c.relationship,
    'phone', c.phone, 'phone_alt', c.phone_alt, 'email', c.email, 'emergency', c.emergency,
    'emergency_order', c.emergency_order, 'authorised_pickup', c.authorised_pickup, 'notes', c.notes,
    'created_at', private.iso_time(c.created_at), 'updated_at', private.iso_time(c.updated_at),
    'deleted_at', private.iso_time(c.deleted_at))
$function$;
grant execute on function private.contact_json(c public.participant_contacts) to public;
grant execute on function private.contact_json(c public.participant_contacts) to camp_care;

CREATE OR REPLACE FUNCTION private.count_participant_moved()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
begin
  insert into private.list_counts (tenant_id, list, scope_id, status, deleted, n)
  values (old.tenant_id, 'participants', old.instance_id, old.status, old.deleted_at is not null, -1),
         (new.tenant_id, 'participants', new.instance_id, new.status, new.deleted_at is not null, 1);
  perform private.fold_list_counts(new.tenant_id, 'participants', new.instance_id);
  if new.instance_id <> old.instance_id then
    perform private.fold_list_counts(old.tenant_id, 'participants', old.instance_id);
  end if;
  return null;
end
$function$;

CREATE OR REPLACE FUNCTION private.count_participants_deleted()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
begin
  insert into private.list_counts (tenant_id, list, scope_id, status, deleted, n)
  select r.tenant_id, 'participants', r.instance_id, r.status, r.deleted_at is not null, -count(*)
  from old_rows r
  group by 1, 3, 4, 5;
  perform private.fold_list_counts(k.tenant_id, 'participants', k.instance_id)
  from (select distinct r.tenant_id, r.instance_id from old_rows r) k;
  return null;
end
$function$;

CREATE OR REPLACE FUNCTION private.count_participants_inserted()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
begin
  insert into private.list_counts (tenant_id, list, scope_id, status, deleted, n)
  select r.tenant_id, 'participants', r.instance_id, r.status, r.deleted_at is not null, count(*)
  from new_rows r
  group by 1, 3, 4, 5;
  perform private.fold_list_counts(k.tenant_id, 'participants', k.instance_id)
  from (select distinct r.tenant_id, r.instance_id from new_rows r) k;
  return null;
end
$function$;

CREATE OR REPLACE FUNCTION private.count_room_placement()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_left uuid;
  v_entered uuid;
begin
  if tg_op <> 'INSERT' and old.deleted_at is null then
    v_left := old.room_id;
  end if;
  if tg_op <> 'DELETE' and new.deleted_at is null then
    v_entered := new.room_id;
  end if;
  if v_left is not distinct from v_entered then
    return null;
  end if;
  update private.room_occupancy o
  set occupancy = o.occupancy + case when o.room_id = v_entered then 1 else -1 end
  where o.room_id in (v_left, v_entered);
  return null;
end
$function$;

CREATE OR REPLACE FUNCTION private.count_structure_rows()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_list text := tg_argv[0];
  v_scope text := tg_argv[1];
  v_status text := tg_argv[2];
  v_old record;
  v_new record;
begin
  if tg_level = 'ROW' then
    execute format('select ($1).tenant_id, %s as scope_id, %s as status, ($1).deleted_at is not null as deleted',
                   replace(v_scope, 'r.', '($1).'), replace(v_status, 'r.', '($1).'))
      into v_old using old;
    execute format('select ($1).tenant_id, %s as scope_id, %s as status, ($1).deleted_at is not null as deleted',
                   replace(v_scope, 'r.', '($1).'), replace(v_status, 'r.', '($1).'))
      into v_new using new;
    insert into private.list_counts (tenant_id, list, scope_id, status, deleted, n)
    values (v_old.tenant_id, v_list, v_old.scope_id, v_old.status, v_old.deleted, -1),
           (v_new.tenant_id, v_list, v_new.scope_id, v_new.status, v_new.deleted, 1);
    perform private.fold_list_counts(v_new.tenant_id, v_list, v_new.scope_id);
    return null;
  end if;
  -- A statement's inserted (+) or deleted (-) rows, counted per key.
  execute format(
    'insert into private.list_counts (tenant_id, list, scope_id, status, deleted, n)
     select r.tenant_id, %1$L, %2$s, %3$s, r.deleted_at is not null, %4$s count(*)
     from %5$I r
     group by 1, 3, 4, 5',
    v_list, v_scope, v_status, case when tg_op = 'INSERT' then '' else '-' end,
    case when tg_op = 'INSERT' then 'new_rows' else 'old_rows' end);
  execute format(
    'select private.fold_list_counts(k.tenant_id, %1$L, k.scope_id)
     from (select distinct r.tenant_id, %2$s as scope_id from %3$I r) k',
    v_list, v_scope, case when tg_op = 'INSERT' then 'new_rows' else 'old_rows' end);
  return null;
end
$function$;

CREATE OR REPLACE FUNCTION private.derive_events()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
begin
  insert into public.events (tenant_id, xact_id, id, type, resource_id, occurred_at, data)
  select n.tenant_id, pg_current_xact_id(), n.id, t.type, n.resource_id, n.occurred_at,
         case when t.type = 'roll_call.closed' then private.event_data_of(t.type, n.changes) end
  from new_rows n
  cross join lateral (select private.event_type_of(n.resource_type, n.action, n.changes) as type offset 0) t
  where t.type is not null;
  return null;
end
$function$;

CREATE OR REPLACE FUNCTION private.dispatch_webhook_events(p_limit integer)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_xmin xid8 := pg_snapshot_xmin(pg_current_snapshot());
  v_endpoint record;
  v_queued int;
  v_total int := 0;
begin
  for v_endpoint in
    select d.endpoint_id, d.tenant_id, d.xact_id, d.event_id, w.types
    from private.webhook_dispatch d
    join public.webhook_endpoints w on w.id = d.endpoint_id and w.enabled and w.deleted_at is null
    where exists (
      select from public.events e
      where e.tenant_id = d.tenant_id and (e.xact_id, e.id) > (d.xact_id, d.event_id) and e.xact_id < v_xmin)
    for update of d skip locked
  loop
    with batch as (
      select e.xact_id, e.id, e.type, e.resource_id, e.occurred_at, e.data from public.events e
      where e.tenant_id = v_endpoint.tenant_id
        and (e.xact_id, e.id) > (v_endpoint.xact_id, v_endpoint.event_id)
        and e.xact_id < v_xmin
      order by e.xact_id, e.id
      limit p_limit
    ), queued as (
      insert into public.webhook_deliveries (tenant_id, endpoint_id, event_id, event_type, resource_id, occurred_at, data)
      select v_endpoint.tenant_id, v_endpoint.endpoint_id, b.id, b.type, b.resource_id, b.occurred_at, b.data
      from batch b
      where v_endpoint.types is null or b.type = any (v_endpoint.types)
      on conflict (endpoint_id, event_id) do nothing
      returning 1
    ), moved as (
      update private.webhook_dispatch d set xact_id = l.xact_id, event_id = l.id
      from (select b.xact_id, b.id from batch b order by b.xact_id desc, b.id desc limit 1) l
      where d.endpoint_id = v_endpoint.endpoint_id
      returning 1
    )
    select count(*) into v_queued from queued;
    v_total := v_total + v_queued;
  end loop;
  return v_total;
end
$function$;
revoke all on function private.dispatch_webhook_events(p_limit integer) from public;

CREATE OR REPLACE FUNCTION private.enforce_reporting_limits()
 RETURNS TABLE(pid integer, role_name text, action text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  s record;
begin
  for s in
    select a.pid, m.role_name,
           case when a.state = 'active' and clock_timestamp() - a.query_start > m.statement_timeout then 'cancel'
                else 'terminate' end as action
    from pg_catalog.pg_stat_activity a
    join private.reporting_roles m on m.role_name = a.usename::text
    where a.pid <> pg_catalog.pg_backend_pid()
      and ((a.state = 'active' and clock_timestamp() - a.query_start > m.statement_timeout)
        or (a.state in ('idle in transaction', 'idle in transaction (aborted)')
            and clock_timestamp() - a.state_change > m.idle_timeout))
  loop
    if s.action = 'cancel' then
      perform pg_catalog.pg_cancel_backend(s.pid);
    else
      perform pg_catalog.pg_terminate_backend(s.pid);
    end if;
    pid := s.pid;
    role_name := s.role_name;
    action := s.action;
    return next;
  end loop;
end
$function$;
revoke all on function private.enforce_reporting_limits() from public;
comment on function private.enforce_reporting_limits() is 'Cancels reporting-role statements past their granted statement_timeout and ends sessions idle in a transaction past their idle_timeout. Run by the server every REPORTING_GUARD_INTERVAL_MS and, on Supabase, by pg_cron.';

CREATE OR REPLACE FUNCTION private.erase_attendance_of_participant()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_ids uuid[];
begin
  v_ids := array(select m.id from public.attendance_movements m where m.participant_id = new.id);
  delete from public.attendance_present_codes where participant_id = new.id;
  delete from public.attendance_movements where participant_id = new.id;
  perform set_config('camp.audit_rewrite', 'on', true);
  update public.audit_events e
  set changes = (
    select coalesce(jsonb_object_agg(f.key, case when e.action = 'create' then '"erased"'::jsonb else '["erased", "erased"]'::jsonb end), '{}')
    from jsonb_each(e.changes) f)
  where e.tenant_id = new.tenant_id
    and e.resource_type = 'movement'
    and e.resource_id = any (v_ids)
    and e.changes <> '{}'::jsonb;
  perform set_config('camp.audit_rewrite', 'off', true);
  return null;
end
$function$;
revoke all on function private.erase_attendance_of_participant() from public;

CREATE OR REPLACE FUNCTION private.erase_care_of_participant()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_ids uuid[];
begin
  v_ids := array(select c.id from public.participant_contacts c where c.participant_id = new.id)
        || array(select c.id from public.participant_consents c where c.participant_id = new.id)
        || new.id;
  delete from public.participant_contacts where participant_id = new.id;
  delete from public.participant_consents where participant_id = new.id;
  delete from public.participant_care where id = new.id;
  perform set_config('camp.audit_rewrite', 'on', true);
  update public.audit_events e
  set changes = (
    select coalesce(jsonb_object_agg(f.key, case when e.action = 'create' then '"erased"'::jsonb else '["erased", "erased"]'::jsonb end), '{}')
    from jsonb_each(e.changes) f)
  where e.tenant_id = new.tenant_id
    and e.resource_type in ('contact', 'consent', 'care_record')
    and e.resource_id = any (v_ids)
    and e.changes <> '{}'::jsonb;
  perform set_config('camp.audit_rewrite', 'off', true);
  return null;
end
$function$;

CREATE OR REPLACE FUNCTION private.erase_incidents_of_participant(p_tenant uuid, p_participant uuid)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
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
$function$;
revoke all on function private.erase_incidents_of_participant(p_tenant uuid, p_participant uuid) from public;

CREATE OR REPLACE FUNCTION private.erase_incidents_on_erasure()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_linked uuid[];
begin
  v_linked := array(select l.incident_id from public.incident_participants l where l.participant_id = new.id);
  perform private.scrub_incident_names(new.tenant_id, v_linked, array[old.first_name, old.surname, old.full_name]);
  perform private.erase_incidents_of_participant(new.tenant_id, new.id);
  return null;
end
$function$;

CREATE OR REPLACE FUNCTION private.erase_medications_of_participant()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_ids uuid[];
begin
  v_ids := array(select m.id from public.participant_medications m where m.participant_id = new.id)
        || array(select a.id from public.medication_administrations a where a.participant_id = new.id);
  perform set_config('camp.health_rewrite', 'on', true);
  delete from public.medication_administrations where participant_id = new.id;
  perform set_config('camp.health_rewrite', 'off', true);
  delete from public.participant_medications where participant_id = new.id;
  perform set_config('camp.audit_rewrite', 'on', true);
  update public.audit_events e
  set changes = (
    select coalesce(jsonb_object_agg(f.key, case when e.action = 'create' then '"erased"'::jsonb else '["erased", "erased"]'::jsonb end), '{}')
    from jsonb_each(e.changes) f)
  where e.tenant_id = new.tenant_id
    and e.resource_type in ('medication', 'medication_administration')
    and e.resource_id = any (v_ids)
    and e.changes <> '{}'::jsonb;
  perform set_config('camp.audit_rewrite', 'off', true);
  return null;
end
$function$;

CREATE OR REPLACE FUNCTION private.erase_participant(p_id uuid)
 RETURNS TABLE(photo_key text, retained jsonb)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_tenant uuid := private.request_tenant_id();
  v_photo text;
  v_until timestamptz;
  v_retained jsonb := '[]'::jsonb;
begin
  select p.photo_key into v_photo from public.participants p
  where p.id = p_id and p.tenant_id = v_tenant and p.erased_at is null
  for update;
  if not found then
    raise exception 'participant not found' using errcode = 'CA404';
  end if;
  v_until := private.health_retention_until(v_tenant);
  if v_until is not null then
    v_retained := private.retain_health_records(v_tenant, p_id, v_until);
  end if;
  perform set_config('camp.erasing', 'on', true);
  update public.participants p set
    user_id = 'erased-' || p.id::text, first_name = 'Erased', surname = 'Erased', full_name = 'Erased',
    gender = null, pronouns = null, date_of_birth = null, school_year = null, rank = null, unit_name = null,
    school_institute = null, arrival_date = null, departure_date = null, room_number = null,
    photo_link = null, photo_key = null, photo_content_type = null, photo_size = null, photo_sha256 = null,
    erased_at = now(), deleted_at = coalesce(p.deleted_at, now())
  where p.id = p_id;
  perform set_config('camp.erasing', 'off', true);
  perform set_config('camp.audit_rewrite', 'on', true);
  update public.audit_events e
  set changes = (
    select coalesce(jsonb_object_agg(f.key, case when e.action = 'create' then '"erased"'::jsonb else '["erased", "erased"]'::jsonb end), '{}')
    from jsonb_each(e.changes) f)
  where e.tenant_id = v_tenant and e.resource_type = 'participant' and e.resource_id = p_id and e.action <> 'erase';
  perform set_config('camp.audit_rewrite', 'off', true);
  return query select v_photo, v_retained;
end
$function$;
revoke all on function private.erase_participant(p_id uuid) from public;
grant execute on function private.erase_participant(p_id uuid) to camp_api;
comment on function private.erase_participant(p_id uuid) is 'The right to erasure (admins, POST /participants/{id}/erase): removes the person''s data from the row and its audit events; the triggers on participants.erased_at remove what hangs on it. Health records of a tenant with a retention period are first detached and kept (private.retain_health_records). Answers the photo key to delete and what was kept.';

CREATE OR REPLACE FUNCTION private.erase_photo_uploads_of_participant()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
begin
  delete from public.photo_uploads u
  where u.tenant_id = new.tenant_id and starts_with(u.key, new.tenant_id::text || '/' || new.id::text || '/');
  return null;
end
$function$;
revoke all on function private.erase_photo_uploads_of_participant() from public;

CREATE OR REPLACE FUNCTION private.erase_roll_calls_of_participant()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
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
$function$;
revoke all on function private.erase_roll_calls_of_participant() from public;

CREATE OR REPLACE FUNCTION private.event_data_of(p_type text, p_changes jsonb)
 RETURNS jsonb
 LANGUAGE sql
 IMMUTABLE
 SET search_path TO ''
AS $function$
  select case when p_type = 'roll_call.closed' then
    jsonb_build_object('counts', jsonb_build_object(
      'expected', (p_changes -> 'expected_count' ->> 1)::int,
      'present', (p_changes -> 'present_count' ->> 1)::int,
      'absent', (p_changes -> 'absent_count' ->> 1)::int,
      'excused', (p_changes -> 'excused_count' ->> 1)::int,
      'missing', (p_changes -> 'missing_count' ->> 1)::int))
  end
$function$;
revoke all on function private.event_data_of(p_type text, p_changes jsonb) from public;

CREATE OR REPLACE FUNCTION private.event_type_of(p_resource_type text, p_action text, p_changes jsonb)
 RETURNS text
 LANGUAGE plpgsql
 IMMUTABLE
 SET search_path TO ''
AS $function$
begin
  return case
      when p_resource_type = 'movement' then
        case when p_action = 'create' then
          case p_changes ->> 'direction' when 'in' then 'participant.checked_in' when 'out' then 'participant.checked_out' end
        end
      when p_resource_type = 'roll_call' then
        case when p_action = 'update' and p_changes -> 'status' ->> 1 = 'closed' then 'roll_call.closed' end
      when p_resource_type not in ('instance', 'supergroup', 'subgroup', 'block', 'room', 'participant')
        or p_action not in ('create', 'update', 'delete', 'erase') then null
      when p_action = 'erase' and p_resource_type <> 'participant' then null
      when p_resource_type = 'participant' and p_action = 'update' and p_changes ? 'photo_key'
        and not exists (select from jsonb_object_keys(p_changes) k where k not like 'photo\_%')
        then case when p_changes -> 'photo_key' ->> 1 is null then 'photo.removed' else 'photo.replaced' end
      else p_resource_type || '.' || case p_action
        when 'create' then 'created' when 'update' then 'updated' when 'delete' then 'deleted' else 'erased' end
    end;
end
$function$;

CREATE OR REPLACE FUNCTION private.fill_participant_full_name()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO ''
AS $function$
begin
  if new.full_name is null or btrim(new.full_name) = '' then
    new.full_name := private.participant_full_name(new.first_name, new.surname);
  end if;
  return new;
end
$function$;

CREATE OR REPLACE FUNCTION private.fill_user_care_access()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO ''
AS $function$
begin
  new.care_access := coalesce(new.care_access, case when new.role = 'admin' then 'write' else 'none' end);
  return new;
end
$function$;

CREATE OR REPLACE FUNCTION private.finish_webhook_attempt(p_delivery uuid, p_lease uuid, p_started timestamp with time zone, p_duration_ms integer, p_status_code integer, p_error text, p_response text, p_delivered boolean, p_retry_at timestamp with time zone, p_slow interval)
 RETURNS text
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_delivery public.webhook_deliveries;
  v_failing_since timestamptz;
  v_last_delivered timestamptz;
begin
  select * into v_delivery from public.webhook_deliveries where id = p_delivery and lease_token = p_lease for update;
  if not found then
    return 'lost_lease';
  end if;
  insert into public.webhook_attempts (tenant_id, delivery_id, started_at, duration_ms, status_code, error, response)
  values (v_delivery.tenant_id, p_delivery, p_started, p_duration_ms, p_status_code, left(p_error, 300), left(p_response, 256));
  if p_slow is null then
    update private.webhook_dispatch set slow_failures = 0, paused_until = null
    where endpoint_id = v_delivery.endpoint_id and slow_failures > 0;
  else
    update private.webhook_dispatch
    set slow_failures = slow_failures + 1,
        paused_until = greatest(paused_until, now() + p_slow * power(2, least(slow_failures, 6)))
    where endpoint_id = v_delivery.endpoint_id;
  end if;
  if p_delivered then
    update public.webhook_deliveries set status = 'delivered', lease_token = null, leased_at = null where id = p_delivery;
    update private.webhook_dispatch set failing_since = null, last_delivered_at = now() where endpoint_id = v_delivery.endpoint_id;
    return 'delivered';
  end if;
  update private.webhook_dispatch set failing_since = coalesce(failing_since, p_started)
  where endpoint_id = v_delivery.endpoint_id
  returning failing_since, last_delivered_at into v_failing_since, v_last_delivered;
  if p_retry_at is not null then
    update public.webhook_deliveries set next_attempt_at = p_retry_at, lease_token = null, leased_at = null where id = p_delivery;
    return 'retry';
  end if;
  update public.webhook_deliveries set status = 'failed', lease_token = null, leased_at = null where id = p_delivery;
  -- Nothing delivered to the endpoint since this delivery's first attempt: it is down, not unlucky.
  if v_last_delivered is null or v_last_delivered < v_delivery.cycle_started_at then
    -- The audit trail records this change as the operator's, with the worker as its request.
    perform set_config('request.jwt.claims', json_build_object('via', 'operator', 'request_id', 'webhook-worker')::text, true);
    update public.webhook_endpoints
    set enabled = false,
        disabled_reason = 'disabled after every delivery failed since ' || to_char(v_failing_since at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
    where id = v_delivery.endpoint_id and enabled;
    update public.webhook_deliveries set status = 'failed', lease_token = null, leased_at = null
    where endpoint_id = v_delivery.endpoint_id and status = 'pending';
    return 'disabled';
  end if;
  return 'failed';
end
$function$;
revoke all on function private.finish_webhook_attempt(p_delivery uuid, p_lease uuid, p_started timestamp with time zone, p_duration_ms integer, p_status_code integer, p_error text, p_response text, p_delivered boolean, p_retry_at timestamp with time zone, p_slow interval) from public;

CREATE OR REPLACE FUNCTION private.fold_list_counts(p_tenant uuid, p_list text, p_scope uuid)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
begin
  if (select count(*) from (select from private.list_counts c
                            where c.tenant_id = p_tenant and c.list = p_list and c.scope_id = p_scope
                            limit 33) x) <= 32 then
    return;
  end if;
  with taken as (
    delete from private.list_counts c
    where c.id in (select f.id from private.list_counts f
                   where f.tenant_id = p_tenant and f.list = p_list and f.scope_id = p_scope
                   for update skip locked)
    returning c.tenant_id, c.list, c.scope_id, c.status, c.deleted, c.n
  )
  insert into private.list_counts (tenant_id, list, scope_id, status, deleted, n)
  select t.tenant_id, t.list, t.scope_id, t.status, t.deleted, sum(t.n)
  from taken t
  group by 1, 2, 3, 4, 5
  having sum(t.n) <> 0;
end
$function$;
revoke all on function private.fold_list_counts(p_tenant uuid, p_list text, p_scope uuid) from public;

CREATE OR REPLACE FUNCTION private.forget_deleted_webhook_endpoints()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
begin
  delete from private.webhook_secrets s using new_rows n where s.endpoint_id = n.id and n.deleted_at is not null;
  update public.webhook_deliveries d set status = 'failed', lease_token = null, leased_at = null
  from new_rows n where d.endpoint_id = n.id and n.deleted_at is not null and d.status = 'pending';
  return null;
end
$function$;

CREATE OR REPLACE FUNCTION private.guard_append_only()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO ''
AS $function$
begin
  if not private.health_records_rewrite() then
    raise exception '% is append-only: a correction is a new entry that names what it amends', tg_table_name
      using errcode = '42501';
  end if;
  return case when tg_op = 'DELETE' then old else new end;
end
$function$;

CREATE OR REPLACE FUNCTION private.guard_audit_events()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO ''
AS $function$
begin
  if coalesce(current_setting('camp.audit_rewrite', true), '') <> 'on' then
    raise exception 'audit events are append-only' using errcode = '42501';
  end if;
  return case when tg_op = 'DELETE' then old else new end;
end
$function$;

CREATE OR REPLACE FUNCTION private.guard_block_write()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO ''
AS $function$
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
$function$;

CREATE OR REPLACE FUNCTION private.guard_care_access_change()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_claims jsonb := private.audit_actor();
begin
  if v_claims ? 'sub' and not exists (
    select from public.users u
    where u.id = (v_claims ->> 'sub')::uuid and u.tenant_id = new.tenant_id and u.role = 'admin' and u.active
  ) then
    raise exception 'only an admin can change care_access' using errcode = 'CA403', column = 'care_access';
  end if;
  return new;
end
$function$;

CREATE OR REPLACE FUNCTION private.guard_care_webhook_endpoint()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO ''
AS $function$
begin
  if new.deleted_at is null
     and exists (select from unnest(new.types) t where private.is_care_event(t))
     and (tg_op = 'INSERT' or new.url is distinct from old.url or new.types is distinct from old.types
          or (new.enabled and not old.enabled))
     and private.care_access() = 'none' then
    raise exception 'an endpoint that receives care events (%) needs care access: the user''s care_access and, with an API key, its care scope',
      (select string_agg(t, ', ') from unnest(new.types) t where private.is_care_event(t))
      using errcode = 'CA403', column = 'types';
  end if;
  return new;
end
$function$;
revoke all on function private.guard_care_webhook_endpoint() from public;

CREATE OR REPLACE FUNCTION private.guard_instance_time_zone()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO ''
AS $function$
begin
  if new.time_zone <> 'UTC' and (
    new.time_zone !~ '^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+){1,2}$'
    or not exists (select from pg_catalog.pg_timezone_names z where z.name = new.time_zone)
  ) then
    raise exception 'is not an IANA time zone (e.g. Europe/London)' using errcode = 'CA400', column = 'time_zone';
  end if;
  return new;
end
$function$;

CREATE OR REPLACE FUNCTION private.guard_instance_write()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO ''
AS $function$
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
$function$;

CREATE OR REPLACE FUNCTION private.guard_key_issue()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_live int;
begin
  if not exists (select from public.users u where u.id = new.user_id and u.active for no key update) then
    raise exception 'a key cannot be issued to a deactivated user'
      using errcode = 'CA409', column = 'email';
  end if;
  if new.revoked_at is not null then
    return new;
  end if;
  if new.name is not null and exists (
    select from public.api_keys k
    where k.user_id = new.user_id and k.revoked_at is null and (k.expires_at is null or k.expires_at > now())
      and lower(k.name) = lower(new.name)
  ) then
    raise exception 'the user already has a live key with this name'
      using errcode = 'CA409', column = 'name';
  end if;
  select count(*) into v_live from public.api_keys k
  where k.user_id = new.user_id and k.revoked_at is null and (k.expires_at is null or k.expires_at > now());
  if v_live >= 50 then
    raise exception 'the user already holds 50 live keys, the most one user may; revoke one first'
      using errcode = 'CA409', column = 'user_id';
  end if;
  return new;
end
$function$;

CREATE OR REPLACE FUNCTION private.guard_key_revocation()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO ''
AS $function$
begin
  if old.revoked_at is not null and new.revoked_at is distinct from old.revoked_at then
    raise exception 'a revoked key stays revoked' using errcode = 'CA409', column = 'revoked_at';
  end if;
  return new;
end
$function$;

CREATE OR REPLACE FUNCTION private.guard_participant_insert()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO ''
AS $function$
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
$function$;

CREATE OR REPLACE FUNCTION private.guard_participant_write()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO ''
AS $function$
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
$function$;

CREATE OR REPLACE FUNCTION private.guard_presence()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO ''
AS $function$
begin
  -- The doors run as the migrations' owner; a caller writing participants directly is refused.
  if current_user = 'camp_api' then
    raise exception 'presence is set by check-in and check-out only' using errcode = 'CA400', column = 'presence';
  end if;
  return new;
end
$function$;

CREATE OR REPLACE FUNCTION private.guard_refused_photo()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
begin
  if coalesce((
    select c.status = 'refused'
    from public.participant_consents c
    where c.participant_id = new.id and c.tenant_id = new.tenant_id and c.kind = 'photo'
    order by c.seq desc
    limit 1), false)
  then
    raise exception 'photo consent is refused for this participant' using errcode = 'CA409',
      column = case when new.photo_key is distinct from old.photo_key then 'photo' else 'photo_link' end;
  end if;
  return new;
end
$function$;

CREATE OR REPLACE FUNCTION private.guard_room_move()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO ''
AS $function$
begin
  if exists (select from public.participants where room_id = old.id) then
    raise exception 'room has participants (deleted ones included), so its block cannot be changed'
      using errcode = 'CA409', column = 'block_id';
  end if;
  return new;
end
$function$;

CREATE OR REPLACE FUNCTION private.guard_room_write()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO ''
AS $function$
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
$function$;

CREATE OR REPLACE FUNCTION private.guard_safeguarding_lead_change()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
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
$function$;

CREATE OR REPLACE FUNCTION private.guard_subgroup_move()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO ''
AS $function$
begin
  if exists (select from public.participants where sub_group_id = old.id) then
    raise exception 'subgroup has participants (deleted ones included), so its supergroup cannot be changed'
      using errcode = 'CA409', column = 'parent_supergroup_id';
  end if;
  return new;
end
$function$;

CREATE OR REPLACE FUNCTION private.guard_subgroup_write()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO ''
AS $function$
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
$function$;

CREATE OR REPLACE FUNCTION private.guard_supergroup_write()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO ''
AS $function$
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
$function$;

CREATE OR REPLACE FUNCTION private.guard_user_change()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
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
    if private.can_administer(old.id) and not exists (
      select from public.users u
      where u.tenant_id = old.tenant_id and u.id <> old.id and private.can_administer(u.id)
    ) then
      raise exception 'the last admin who can administer (with a read-write key or a sign-in) cannot be demoted or deactivated'
        using errcode = 'CA409', column = case when not new.active then 'active' else 'role' end;
    end if;
  end if;
  if old.active and not new.active then
    update public.api_keys set revoked_at = now() where user_id = old.id and revoked_at is null;
  end if;
  return new;
end
$function$;

CREATE OR REPLACE FUNCTION private.guard_webhook_endpoint_count()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
begin
  perform from public.tenants where id = new.tenant_id for update;
  if (select count(*) from public.webhook_endpoints where tenant_id = new.tenant_id and deleted_at is null) >= 20 then
    raise exception 'a tenant has at most 20 webhook endpoints' using errcode = 'CA409';
  end if;
  return new;
end
$function$;

CREATE OR REPLACE FUNCTION private.health_records_rewrite()
 RETURNS boolean
 LANGUAGE sql
 STABLE
 SET search_path TO ''
AS $function$
  select coalesce(current_setting('camp.health_rewrite', true), '') = 'on'
$function$;

CREATE OR REPLACE FUNCTION private.health_retention_until(p_tenant uuid)
 RETURNS timestamp with time zone
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO ''
AS $function$
  select now() + make_interval(days => t.health_retention_days)
  from public.tenants t where t.id = p_tenant and t.health_retention_days is not null
$function$;
revoke all on function private.health_retention_until(p_tenant uuid) from public;

CREATE OR REPLACE FUNCTION private.hold_live_participant()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_participant uuid;
  v_erased timestamptz;
begin
  -- No tenant (no claims): the row cannot be stored anyway (not null, row-level security), which say so.
  if new.tenant_id is null then
    return new;
  end if;
  if tg_nargs = 0 then
    v_participant := new.participant_id;
  else
    v_participant := (to_jsonb(new) ->> tg_argv[0])::uuid;
  end if;
  select p.erased_at into v_erased
  from public.participants p
  where p.id = v_participant and p.tenant_id = new.tenant_id
  for share;
  if not found or v_erased is not null then
    raise exception 'participant not found' using errcode = 'CA404', constraint = 'live_participant';
  end if;
  return new;
end
$function$;
revoke all on function private.hold_live_participant() from public;
comment on function private.hold_live_participant() is 'Trigger (BEFORE INSERT OR UPDATE FOR EACH ROW) for every table that hangs data on a participant: locks the participant row (NEW.participant_id, or the column named by the trigger argument) FOR SHARE and refuses (CA404, constraint live_participant) when it is erased or not of the row''s tenant, so no write outruns an erasure. See *_erasure_holds.sql.';

CREATE OR REPLACE FUNCTION private.incident(p_incident uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
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
$function$;
alter function private.incident(p_incident uuid) owner to camp_care;
revoke all on function private.incident(p_incident uuid) from public;
grant execute on function private.incident(p_incident uuid) to camp_api;

CREATE OR REPLACE FUNCTION private.incident_access(p_need text)
 RETURNS void
 LANGUAGE plpgsql
 STABLE
 SET search_path TO ''
AS $function$
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
$function$;
grant execute on function private.incident_access(p_need text) to public;
grant execute on function private.incident_access(p_need text) to camp_care;

CREATE OR REPLACE FUNCTION private.incident_amend(p_incident uuid, p_changes jsonb, p_reason text)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
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
$function$;
alter function private.incident_amend(p_incident uuid, p_changes jsonb, p_reason text) owner to camp_care;
revoke all on function private.incident_amend(p_incident uuid, p_changes jsonb, p_reason text) from public;
grant execute on function private.incident_amend(p_incident uuid, p_changes jsonb, p_reason text) to camp_api;

CREATE OR REPLACE FUNCTION private.incident_amend_gate(p_instance uuid)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
begin
  perform private.lock_writable_instance(p_instance);
end
$function$;
revoke all on function private.incident_amend_gate(p_instance uuid) from public;
grant execute on function private.incident_amend_gate(p_instance uuid) to camp_care;

CREATE OR REPLACE FUNCTION private.incident_amendment_json(a public.incident_amendments)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
 SET search_path TO ''
AS $function$
begin
  return jsonb_build_object('id', a.id, 'changes', a.changes, 'reason', a.reason, 'recorded_by', a.recorded_by,
                            'recorded_by_email', a.recorded_by_email, 'recorded_at', private.iso_time(a.recorded_at));
end
$function$;
revoke all on function private.incident_amendment_json(a public.incident_amendments) from public;
grant execute on function private.incident_amendment_json(a public.incident_amendments) to camp_care;
grant execute on function private.incident_amendment_json(a public.incident_amendments) to camp_reporting;

CREATE OR REPLACE FUNCTION private.incident_attention(p_current jsonb, p_hours integer, p_now timestamp with time zone)
 RETURNS text[]
 LANGUAGE sql
 STABLE
 SET search_path TO ''
AS $function$
  select case when p_current ->> 'status' = 'closed' then '{}'::text[] else array_remove(array[
    case when p_current ->> 'severity' = 'serious' then 'serious' end,
    case when p_current ->> 'guardian_notified_at' is null
              and p_now > (p_current ->> 'occurred_at')::timestamptz + make_interval(hours => p_hours)
           then 'guardians_not_notified'
         when (p_current ->> 'guardian_notified_at')::timestamptz
              > (p_current ->> 'occurred_at')::timestamptz + make_interval(hours => p_hours)
           then 'guardians_notified_late' end
  ], null) end
$function$;
revoke all on function private.incident_attention(p_current jsonb, p_hours integer, p_now timestamp with time zone) from public;
grant execute on function private.incident_attention(p_current jsonb, p_hours integer, p_now timestamp with time zone) to camp_care;
grant execute on function private.incident_attention(p_current jsonb, p_hours integer, p_now timestamp with time zone) to camp_reporting;

CREATE OR REPLACE FUNCTION private.incident_audit_type(p_category text)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE
 SET search_path TO ''
AS $function$
  select case when p_category = 'safeguarding' then 'safeguarding_incident' else 'incident' end
$function$;
grant execute on function private.incident_audit_type(p_category text) to public;
grant execute on function private.incident_audit_type(p_category text) to camp_care;

CREATE OR REPLACE FUNCTION private.incident_create(p jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
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
$function$;
alter function private.incident_create(p jsonb) owner to camp_care;
revoke all on function private.incident_create(p jsonb) from public;
grant execute on function private.incident_create(p jsonb) to camp_api;

CREATE OR REPLACE FUNCTION private.incident_current(i public.incidents)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
 SET search_path TO ''
AS $function$
  select private.incident_original(i) || coalesce((
    select jsonb_object_agg(c.key, c.value order by a.recorded_at, a.id)
    from public.incident_amendments a cross join lateral jsonb_each(a.changes) c
    where a.incident_id = i.id), '{}'::jsonb)
$function$;
revoke all on function private.incident_current(i public.incidents) from public;
grant execute on function private.incident_current(i public.incidents) to camp_care;
grant execute on function private.incident_current(i public.incidents) to camp_reporting;

CREATE OR REPLACE FUNCTION private.incident_json(i public.incidents, p_hours integer, p_now timestamp with time zone)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
 SET search_path TO ''
AS $function$
  select private.incident_json_of(i, private.incident_current(i), p_hours, p_now)
$function$;
revoke all on function private.incident_json(i public.incidents, p_hours integer, p_now timestamp with time zone) from public;
grant execute on function private.incident_json(i public.incidents, p_hours integer, p_now timestamp with time zone) to camp_care;
grant execute on function private.incident_json(i public.incidents, p_hours integer, p_now timestamp with time zone) to camp_reporting;

CREATE OR REPLACE FUNCTION private.incident_json_from(i public.incidents, p_current jsonb, p_participant_ids jsonb, p_amendments jsonb, p_hours integer, p_now timestamp with time zone)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
 SET search_path TO ''
AS $function$
begin
  return jsonb_build_object('id', i.id, 'instance_id', i.instance_id, 'participant_ids', coalesce(p_participant_ids, '[]'::jsonb))
    || p_current
    || jsonb_build_object(
      'needs_attention', cardinality(private.incident_attention(p_current, p_hours, p_now)) > 0,
      'attention_reasons', to_jsonb(private.incident_attention(p_current, p_hours, p_now)),
      'guardians_notify_by', private.iso_time((p_current ->> 'occurred_at')::timestamptz + make_interval(hours => p_hours)),
      'original', private.incident_original(i),
      'amendments', coalesce(p_amendments, '[]'::jsonb),
      'reported_by', i.reported_by, 'reported_by_email', i.reported_by_email,
      'recorded_at', private.iso_time(i.recorded_at));
end
$function$;
revoke all on function private.incident_json_from(i public.incidents, p_current jsonb, p_participant_ids jsonb, p_amendments jsonb, p_hours integer, p_now timestamp with time zone) from public;
grant execute on function private.incident_json_from(i public.incidents, p_current jsonb, p_participant_ids jsonb, p_amendments jsonb, p_hours integer, p_now timestamp with time zone) to camp_care;
grant execute on function private.incident_json_from(i public.incidents, p_current jsonb, p_participant_ids jsonb, p_amendments jsonb, p_hours integer, p_now timestamp with time zone) to camp_reporting;

CREATE OR REPLACE FUNCTION private.incident_json_of(i public.incidents, p_current jsonb, p_hours integer, p_now timestamp with time zone)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
 SET search_path TO ''
AS $function$
  select private.incident_json_from(
    i, p_current,
    (select jsonb_agg(p.participant_id order by p.participant_id) from public.incident_participants p where p.incident_id = i.id),
    (select jsonb_agg(private.incident_amendment_json(a) order by a.recorded_at, a.id)
     from public.incident_amendments a where a.incident_id = i.id),
    p_hours, p_now)
$function$;
revoke all on function private.incident_json_of(i public.incidents, p_current jsonb, p_hours integer, p_now timestamp with time zone) from public;
grant execute on function private.incident_json_of(i public.incidents, p_current jsonb, p_hours integer, p_now timestamp with time zone) to camp_care;
grant execute on function private.incident_json_of(i public.incidents, p_current jsonb, p_hours integer, p_now timestamp with time zone) to camp_reporting;

CREATE OR REPLACE FUNCTION private.incident_notice_hours()
 RETURNS integer
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO ''
AS $function$
  select coalesce((select t.incident_notice_hours from public.tenants t where t.id = private.request_tenant_id()), 24)
$function$;
revoke all on function private.incident_notice_hours() from public;
grant execute on function private.incident_notice_hours() to camp_care;

CREATE OR REPLACE FUNCTION private.incident_original(i public.incidents)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
 SET search_path TO ''
AS $function$
begin
  return jsonb_build_object(
    'occurred_at', private.iso_time(i.occurred_at), 'location', i.location, 'category', i.category, 'severity', i.severity,
    'description', i.description, 'actions_taken', i.actions_taken,
    'guardian_notified_at', private.iso_time(i.guardian_notified_at), 'guardian_notified_by', i.guardian_notified_by,
    'status', 'open');
end
$function$;
revoke all on function private.incident_original(i public.incidents) from public;
grant execute on function private.incident_original(i public.incidents) to camp_care;
grant execute on function private.incident_original(i public.incidents) to camp_reporting;

CREATE OR REPLACE FUNCTION private.incident_report_gate(p_instance uuid, p_participants uuid[])
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
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
$function$;
revoke all on function private.incident_report_gate(p_instance uuid, p_participants uuid[]) from public;
grant execute on function private.incident_report_gate(p_instance uuid, p_participants uuid[]) to camp_care;

CREATE OR REPLACE FUNCTION private.incidents(p jsonb, p_limit integer, p_offset integer)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
 SET jit TO 'off'
 SET plan_cache_mode TO 'force_custom_plan'
AS $function$
declare
  v_hours int := private.incident_notice_hours();
  v_now timestamptz := clock_timestamp();
  v_instance uuid := (p ->> 'instance_id')::uuid;
  v_participant uuid := (p ->> 'participant_id')::uuid;
  v_by_current boolean := coalesce(p ->> 'category', p ->> 'severity', p ->> 'status', p ->> 'occurred_from',
                                   p ->> 'occurred_to', p ->> 'needs_attention') is not null;
  v_total bigint;
  v_ids uuid[];
  v_found jsonb;
begin
  perform private.incident_access('read');
  if v_by_current then
    with matching as (
      select i.id, i.recorded_at
      from public.incidents i
      cross join lateral (
        select private.incident_original(i) || coalesce((
          select jsonb_object_agg(c.key, c.value order by a.recorded_at, a.id)
          from public.incident_amendments a cross join lateral jsonb_each(a.changes) c
          where a.incident_id = i.id), '{}'::jsonb) as value) cur
      where (v_instance is null or i.instance_id = v_instance)
        and (v_participant is null or i.id = any (array(
              select ip.incident_id from public.incident_participants ip where ip.participant_id = v_participant)))
        and (p ->> 'category' is null or cur.value ->> 'category' = p ->> 'category')
        and (p ->> 'severity' is null or cur.value ->> 'severity' = p ->> 'severity')
        and (p ->> 'status' is null or cur.value ->> 'status' = p ->> 'status')
        and (p ->> 'occurred_from' is null
             or (cur.value ->> 'occurred_at')::timestamptz >= (p ->> 'occurred_from')::timestamptz)
        and (p ->> 'occurred_to' is null or (cur.value ->> 'occurred_at')::timestamptz < (p ->> 'occurred_to')::timestamptz)
        and (p ->> 'needs_attention' is null
             or (cardinality(private.incident_attention(cur.value, v_hours, v_now)) > 0) = (p ->> 'needs_attention')::boolean)
    )
    select (select count(*) from matching),
           array(select m.id from matching m order by m.recorded_at desc, m.id desc limit p_limit offset p_offset)
    into v_total, v_ids;
  else
    select count(*) into v_total
    from public.incidents i
    where (v_instance is null or i.instance_id = v_instance)
      and (v_participant is null or i.id = any (array(
            select ip.incident_id from public.incident_participants ip where ip.participant_id = v_participant)));
    v_ids := array(
      select i.id from public.incidents i
      where (v_instance is null or i.instance_id = v_instance)
        and (v_participant is null or i.id = any (array(
              select ip.incident_id from public.incident_participants ip where ip.participant_id = v_participant)))
      order by i.recorded_at desc, i.id desc limit p_limit offset p_offset);
  end if;

  with page as (
    select i, i.id, i.recorded_at, i.category, cur.value as current, ps.ids as participant_ids, am.list as amendments
    from public.incidents i
    cross join lateral (
      select private.incident_original(i) || coalesce((
        select jsonb_object_agg(c.key, c.value order by a.recorded_at, a.id)
        from public.incident_amendments a cross join lateral jsonb_each(a.changes) c
        where a.incident_id = i.id), '{}'::jsonb) as value) cur
    cross join lateral (
      select jsonb_agg(ip.participant_id order by ip.participant_id) as ids
      from public.incident_participants ip where ip.incident_id = i.id) ps
    cross join lateral (
      select jsonb_agg(private.incident_amendment_json(a) order by a.recorded_at, a.id) as list
      from public.incident_amendments a where a.incident_id = i.id) am
    where i.id = any (v_ids)
  )
  select jsonb_build_object(
    'total', v_total,
    'rows', coalesce(jsonb_agg(private.incident_json_from(pg.i, pg.current, pg.participant_ids, pg.amendments, v_hours, v_now)
                               order by pg.recorded_at desc, pg.id desc), '[]'::jsonb),
    'read', coalesce(jsonb_agg(jsonb_build_array(pg.id, private.incident_audit_type(pg.category))), '[]'::jsonb))
  into v_found
  from page pg;
  perform private.audit_incident_reads(v_found -> 'read');
  return v_found - 'read';
end
$function$;
alter function private.incidents(p jsonb, p_limit integer, p_offset integer) owner to camp_care;
revoke all on function private.incidents(p jsonb, p_limit integer, p_offset integer) from public;
grant execute on function private.incidents(p jsonb, p_limit integer, p_offset integer) to camp_api;

CREATE OR REPLACE FUNCTION private.instance_pickups(p_instance uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO ''
AS $function$
begin
  if not private.pickup_names_visible() then
    return null;
  end if;
  return (
    select coalesce(jsonb_object_agg(x.participant_id, x.pickups), '{}'::jsonb)
    from (
      select c.participant_id, jsonb_agg(jsonb_build_object('id', c.id, 'name', c.name) order by c.name, c.id) as pickups
      from public.participant_contacts c
      join public.participants p on p.id = c.participant_id
      where c.tenant_id = private.request_tenant_id() and p.instance_id = p_instance and p.deleted_at is null
        and c.deleted_at is null and c.authorised_pickup
      group by c.participant_id
    ) x);
end
$function$;
revoke all on function private.instance_pickups(p_instance uuid) from public;
grant execute on function private.instance_pickups(p_instance uuid) to camp_api;
comment on function private.instance_pickups(p_instance uuid) is 'Names (and ids) of the authorised pickups of an instance''s live participants, for callers with the attendance scope, a Bearer token or care access; null for anyone else. Never phones, e-mails or notes.';

CREATE OR REPLACE FUNCTION private.is_care_event(p_type text)
 RETURNS boolean
 LANGUAGE sql
 IMMUTABLE
 SET search_path TO ''
AS $function$
  select split_part(p_type, '.', 1) in
    ('medication', 'medication_administration', 'incident', 'care_record', 'contact', 'consent', 'care_flag')
$function$;
revoke all on function private.is_care_event(p_type text) from public;
grant execute on function private.is_care_event(p_type text) to camp_api;
grant execute on function private.is_care_event(p_type text) to camp_care;
grant execute on function private.is_care_event(p_type text) to camp_reporting;
comment on function private.is_care_event(p_type text) is 'Whether an event type is about care data (medication.*, incident.*, ...): shown in the feed and webhook deliveries only to callers with care access, and sent only to webhook endpoints whose types name it.';

CREATE OR REPLACE FUNCTION private.is_care_resource(p_type text)
 RETURNS boolean
 LANGUAGE sql
 IMMUTABLE
 SET search_path TO ''
AS $function$
  select p_type in ('contact', 'care_record', 'consent', 'contacts', 'consents', 'care_flag', 'medication', 'medications',
                    'medication_administration', 'medication_administrations', 'incident', 'safeguarding_incident')
$function$;
grant execute on function private.is_care_resource(p_type text) to public;
grant execute on function private.is_care_resource(p_type text) to camp_api;
grant execute on function private.is_care_resource(p_type text) to camp_care;
grant execute on function private.is_care_resource(p_type text) to camp_reporting;

CREATE OR REPLACE FUNCTION private.is_safeguarding_lead()
 RETURNS boolean
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO ''
AS $function$
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
$function$;
revoke all on function private.is_safeguarding_lead() from public;
grant execute on function private.is_safeguarding_lead() to camp_api;
grant execute on function private.is_safeguarding_lead() to camp_care;

CREATE OR REPLACE FUNCTION private.iso_time(p_time timestamp with time zone)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE
 SET search_path TO ''
AS $function$
  select to_char(p_time at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$function$;
grant execute on function private.iso_time(p_time timestamp with time zone) to public;
grant execute on function private.iso_time(p_time timestamp with time zone) to camp_care;

CREATE OR REPLACE FUNCTION private.kept_total(p_list text, p_scope uuid, p_status text, p_include_deleted boolean)
 RETURNS bigint
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO ''
AS $function$
  select coalesce(sum(c.n), 0)::bigint
  from private.list_counts c
  where c.tenant_id = private.request_tenant_id()
    and c.list = p_list
    and (p_scope is null or c.scope_id = p_scope)
    and (p_status is null or c.status = p_status)
    and (p_include_deleted or not c.deleted)
$function$;
revoke all on function private.kept_total(p_list text, p_scope uuid, p_status text, p_include_deleted boolean) from public;
grant execute on function private.kept_total(p_list text, p_scope uuid, p_status text, p_include_deleted boolean) to camp_api;
comment on function private.kept_total(p_list text, p_scope uuid, p_status text, p_include_deleted boolean) is 'meta.total of a list filtered on instance, status and include_deleted only, from private.list_counts.';

CREATE OR REPLACE FUNCTION private.key_may_write()
 RETURNS boolean
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_key text := private.audit_actor() ->> 'key_id';
begin
  if v_key is null then
    return true;
  end if;
  return exists (
    select from public.api_keys k
    where k.id = v_key::uuid and k.revoked_at is null and (k.expires_at is null or k.expires_at > now())
      and 'write' = any (k.scopes));
end
$function$;
revoke all on function private.key_may_write() from public;
grant execute on function private.key_may_write() to camp_api;
comment on function private.key_may_write() is 'False for a request made with a key that lacks the write scope (a read or attendance key): it changes no participant, whatever the route.';

CREATE OR REPLACE FUNCTION private.lock_writable_instance(p_instance_id uuid)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO ''
AS $function$
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
$function$;
grant execute on function private.lock_writable_instance(p_instance_id uuid) to public;
grant execute on function private.lock_writable_instance(p_instance_id uuid) to camp_api;

CREATE OR REPLACE FUNCTION private.medication(p_participant uuid, p_medication uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_found jsonb;
begin
  perform private.care_gate(p_participant, 'read');
  perform private.audit_care_read('medications', p_participant);
  select jsonb_build_object('record', private.medication_json(m), 'version', m.xmin::text) into v_found
  from public.participant_medications m
  where m.id = p_medication and m.participant_id = p_participant and m.deleted_at is null;
  if v_found is null then
    raise exception 'medication not found' using errcode = 'CA404';
  end if;
  return v_found;
end
$function$;
alter function private.medication(p_participant uuid, p_medication uuid) owner to camp_care;
revoke all on function private.medication(p_participant uuid, p_medication uuid) from public;
grant execute on function private.medication(p_participant uuid, p_medication uuid) to camp_api;

CREATE OR REPLACE FUNCTION private.medication_administration(p_participant uuid, p_entry uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_found jsonb;
begin
  perform private.care_gate(p_participant, 'read');
  perform private.audit_care_read('medication_administrations', p_participant);
  select private.administration_json(a) into v_found
  from public.medication_administrations a where a.id = p_entry and a.participant_id = p_participant;
  if v_found is null then
    raise exception 'medication administration not found' using errcode = 'CA404';
  end if;
  return v_found;
end
$function$;
alter function private.medication_administration(p_participant uuid, p_entry uuid) owner to camp_care;
revoke all on function private.medication_administration(p_participant uuid, p_entry uuid) from public;
grant execute on function private.medication_administration(p_participant uuid, p_entry uuid) to camp_api;

CREATE OR REPLACE FUNCTION private.medication_administration_create(p_participant uuid, p jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_actor jsonb := private.audit_actor();
  v_med public.participant_medications;
  v_amended public.medication_administrations;
  v_existing public.medication_administrations;
  v_zone text;
  v_at timestamptz := coalesce((p ->> 'administered_at')::timestamptz, clock_timestamp());
  v_due timestamptz := (p ->> 'due_at')::timestamptz;
  v_medication uuid := (p ->> 'medication_id')::uuid;
  v_outcome text := p ->> 'outcome';
  v_dose text := p ->> 'dose_given';
  v_notes text := p ->> 'notes';
  v_too_soon jsonb;
  v_count int;
  v_entry public.medication_administrations;
begin
  perform private.care_gate(p_participant, 'write');
  -- A nonce seen before answers the entry stored then (an offline device uploading again).
  if p ? 'nonce' then
    select * into v_existing from public.medication_administrations a where a.nonce = p ->> 'nonce';
    if found then
      if v_existing.participant_id is distinct from p_participant then
        raise exception 'nonce was already used for another participant''s entry' using errcode = 'CA409', column = 'nonce';
      end if;
      return jsonb_build_object('record', private.administration_json(v_existing), 'created', false);
    end if;
  end if;
  if v_at > clock_timestamp() + interval '5 minutes' then
    raise exception 'must not be in the future' using errcode = 'CA400', column = 'administered_at';
  end if;
  if p ? 'amends' then
    select * into v_amended from public.medication_administrations a
    where a.id = (p ->> 'amends')::uuid and a.participant_id = p_participant;
    if not found then
      raise exception 'is not an entry of this participant' using errcode = 'CA400', column = 'amends';
    end if;
    if v_medication is not null and v_medication is distinct from v_amended.medication_id then
      raise exception 'must be the medication of the entry it amends' using errcode = 'CA400', column = 'medication_id';
    end if;
    v_medication := v_amended.medication_id;
    v_outcome := coalesce(v_outcome, v_amended.outcome);
    v_at := coalesce((p ->> 'administered_at')::timestamptz, v_amended.administered_at);
    v_due := coalesce(v_due, v_amended.due_at);
    v_dose := case when p ? 'dose_given' then v_dose else v_amended.dose_given end;
    v_notes := case when p ? 'notes' then v_notes else v_amended.notes end;
  end if;
  -- The medication's row, locked: two doses of one medication are charted one after the other, so the limits below hold.
  select * into v_med from public.participant_medications m
  where m.id = v_medication and m.participant_id = p_participant and (m.deleted_at is null or v_amended.id is not null)
  for update;
  if not found then
    raise exception 'is not a medication of this participant' using errcode = 'CA400', column = 'medication_id';
  end if;
  v_zone := private.participant_time_zone(p_participant);
  if v_med.times is not null then
    if v_due is null then
      v_due := private.nearest_due(v_med.times, v_zone, v_at);
    elsif not (to_char(v_due at time zone v_zone, 'HH24:MI') = any (v_med.times)) then
      raise exception 'is not a time of the medication''s schedule' using errcode = 'CA400', column = 'due_at';
    end if;
  elsif v_due is not null and v_amended.id is null then
    raise exception 'is only for a medication with times' using errcode = 'CA400', column = 'due_at';
  end if;

  -- As-needed limits, judged on the doses given that stand (not amended), other than the one amended.
  if v_med.prn and v_outcome = 'given' and coalesce(btrim(p ->> 'override_reason'), '') = '' then
    with given as (
      select a.id, a.administered_at, a.dose_given
      from public.medication_administrations a
      where a.medication_id = v_med.id and a.outcome = 'given'
        and a.id is distinct from v_amended.id
        and not exists (select from public.medication_administrations c where c.amends = a.id)
        and a.administered_at > v_at - interval '24 hours' and a.administered_at < v_at + interval '24 hours'
    )
    select
      (select jsonb_agg(jsonb_build_object('entry_id', g.id, 'administered_at', private.iso_time(g.administered_at),
                                           'dose_given', g.dose_given) order by g.administered_at desc)
       from given g
       where (v_med.min_interval_hours is not null
              and abs(extract(epoch from g.administered_at - v_at)) < v_med.min_interval_hours * 3600)
          or (v_med.max_doses_per_24h is not null and g.administered_at > v_at - interval '24 hours' and g.administered_at <= v_at)),
      (select count(*) from given g where g.administered_at > v_at - interval '24 hours' and g.administered_at <= v_at)
    into v_too_soon, v_count;
    if (v_med.min_interval_hours is not null and exists (
          select from jsonb_array_elements(coalesce(v_too_soon, '[]')) d
          where abs(extract(epoch from (d ->> 'administered_at')::timestamptz - v_at)) < v_med.min_interval_hours * 3600))
       or (v_med.max_doses_per_24h is not null and v_count >= v_med.max_doses_per_24h) then
      raise exception 'an as-needed dose within % hours of another or past % doses in 24 hours needs override_reason',
          coalesce(v_med.min_interval_hours::text, '-'), coalesce(v_med.max_doses_per_24h::text, '-')
        using errcode = 'CA409', constraint = 'prn_limit', column = 'medication_id',
              detail = jsonb_build_object('min_interval_hours', v_med.min_interval_hours::float8,
                                          'max_doses_per_24h', v_med.max_doses_per_24h,
                                          'doses_in_24h', v_count,
                                          'last_doses', coalesce(v_too_soon, '[]'))::text;
    end if;
  end if;

  insert into public.medication_administrations as a
    (participant_id, medication_id, medication_name, outcome, administered_at, due_at, dose_given, notes, nonce,
     amends, reason, override_reason, recorded_by, recorded_by_email)
  values (p_participant, v_med.id, v_med.name, v_outcome, v_at, v_due, coalesce(v_dose, case when v_outcome = 'given' then v_med.dose end),
          v_notes, p ->> 'nonce', v_amended.id, p ->> 'reason', nullif(btrim(p ->> 'override_reason'), ''),
          (v_actor ->> 'sub')::uuid, v_actor ->> 'email')
  on conflict (tenant_id, nonce) do nothing
  returning * into v_entry;
  if v_entry.id is null then
    -- The same nonce committed meanwhile by a concurrent upload.
    select * into v_entry from public.medication_administrations a where a.nonce = p ->> 'nonce';
    return jsonb_build_object('record', private.administration_json(v_entry), 'created', false);
  end if;
  return jsonb_build_object('record', private.administration_json(v_entry), 'created', true);
end
$function$;
alter function private.medication_administration_create(p_participant uuid, p jsonb) owner to camp_care;
revoke all on function private.medication_administration_create(p_participant uuid, p jsonb) from public;
grant execute on function private.medication_administration_create(p_participant uuid, p jsonb) to camp_api;

CREATE OR REPLACE FUNCTION private.medication_administrations(p_participant uuid, p_medication uuid, p_from timestamp with time zone, p_to timestamp with time zone)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
begin
  perform private.care_gate(p_participant, 'read');
  perform private.audit_care_read('medication_administrations', p_participant);
  return (
    with entries as (
      select a as entry, a.id, a.recorded_at, a.administered_at, private.administration_root(a.id) as root
      from public.medication_administrations a
      where a.participant_id = p_participant
        and (p_medication is null or a.medication_id = p_medication)
    ), chains as (
      select e.root, min(e.recorded_at) as started,
             bool_or((p_from is null or e.administered_at >= p_from) and (p_to is null or e.administered_at < p_to)) as in_range
      from entries e group by e.root
    )
    select coalesce(jsonb_agg(private.administration_json(e.entry)
                              order by c.started, c.root, e.recorded_at, e.id), '[]'::jsonb)
    from entries e join chains c on c.root = e.root
    where c.in_range
  );
end
$function$;
alter function private.medication_administrations(p_participant uuid, p_medication uuid, p_from timestamp with time zone, p_to timestamp with time zone) owner to camp_care;
revoke all on function private.medication_administrations(p_participant uuid, p_medication uuid, p_from timestamp with time zone, p_to timestamp with time zone) from public;
grant execute on function private.medication_administrations(p_participant uuid, p_medication uuid, p_from timestamp with time zone, p_to timestamp with time zone) to camp_api;

CREATE OR REPLACE FUNCTION private.medication_create(p_participant uuid, p jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_created jsonb;
begin
  perform private.care_gate(p_participant, 'write');
  perform pg_advisory_xact_lock(hashtextextended('medications ' || p_participant::text, 0));
  if (select count(*) from public.participant_medications m where m.participant_id = p_participant) >= 100 then
    raise exception 'a participant has at most 100 medications, deleted ones included' using errcode = 'CA409';
  end if;
  insert into public.participant_medications as m
    (participant_id, name, dose, route, instructions, start_date, end_date, times, prn, min_interval_hours, max_doses_per_24h)
  values (p_participant, p ->> 'name', p ->> 'dose', p ->> 'route', p ->> 'instructions', (p ->> 'start_date')::date,
          (p ->> 'end_date')::date,
          case when jsonb_typeof(p -> 'times') = 'array' then array(select jsonb_array_elements_text(p -> 'times')) end,
          coalesce((p ->> 'prn')::boolean, false), (p ->> 'min_interval_hours')::numeric, (p ->> 'max_doses_per_24h')::int)
  returning jsonb_build_object('record', private.medication_json(m), 'version', m.xmin::text) into v_created;
  return v_created;
end
$function$;
alter function private.medication_create(p_participant uuid, p jsonb) owner to camp_care;
revoke all on function private.medication_create(p_participant uuid, p jsonb) from public;
grant execute on function private.medication_create(p_participant uuid, p jsonb) to camp_api;

CREATE OR REPLACE FUNCTION private.medication_delete(p_participant uuid, p_medication uuid, p_versions text[])
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_version text;
begin
  perform private.care_gate(p_participant, 'write');
  select m.xmin::text into v_version
  from public.participant_medications m
  where m.id = p_medication and m.participant_id = p_participant and m.deleted_at is null
  for update;
  if v_version is null then
    raise exception 'medication not found' using errcode = 'CA404';
  end if;
  if not private.version_matches(p_versions, v_version) then
    raise exception 'the record has changed since you read it' using errcode = 'CA412';
  end if;
  update public.participant_medications set deleted_at = now() where id = p_medication;
end
$function$;
alter function private.medication_delete(p_participant uuid, p_medication uuid, p_versions text[]) owner to camp_care;
revoke all on function private.medication_delete(p_participant uuid, p_medication uuid, p_versions text[]) from public;
grant execute on function private.medication_delete(p_participant uuid, p_medication uuid, p_versions text[]) to camp_api;

CREATE OR REPLACE FUNCTION private.medication_json(m public.participant_medications)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
 SET search_path TO ''
AS $function$
  select jsonb_build_object(
    'id', m.id, 'participant_id', m.participant_id, 'name', m.name, 'dose', m.dose, 'route', m.route,
    'instructions', m.instructions, 'start_date', m.start_date, 'end_date', m.end_date,
    'times', to_jsonb(m.times), 'prn', m.prn, 'min_interval_hours', m.min_interval_hours::float8,
    'max_doses_per_24h', m.max_doses_per_24h,
    'created_at', private.iso_time(m.created_at), 'updated_at', private.iso_time(m.updated_at),
    'deleted_at', private.iso_time(m.deleted_at))
$function$;
grant execute on function private.medication_json(m public.participant_medications) to public;
grant execute on function private.medication_json(m public.participant_medications) to camp_care;

CREATE OR REPLACE FUNCTION private.medication_pass(p_instance uuid, p_at timestamp with time zone, p_window_minutes integer)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
 SET jit TO 'off'
AS $function$
declare
  v_doses jsonb;
  v_now timestamptz := clock_timestamp();
  v_actor jsonb := private.audit_actor();
begin
  if private.care_access() = 'none' then
    raise exception 'no access to care data (needs the user''s care_access, and for an API key its care scope)'
      using errcode = 'CA403';
  end if;
  if not exists (select from public.instances i
                 where i.id = p_instance and i.tenant_id = private.request_tenant_id() and i.deleted_at is null) then
    raise exception 'instance not found' using errcode = 'CA404';
  end if;
  with doses as (
    select * from private.scheduled_doses(p_instance, p_at - make_interval(mins => p_window_minutes),
                                          p_at + make_interval(mins => p_window_minutes))
  ), audited as (
    insert into public.audit_events
      (tenant_id, actor_user_id, actor_email, actor_via, actor_key_id, request_id, action, resource_type, resource_id)
    select distinct private.request_tenant_id(), (v_actor ->> 'sub')::uuid, v_actor ->> 'email', coalesce(v_actor ->> 'via', 'operator'),
           (v_actor ->> 'key_id')::uuid, v_actor ->> 'request_id', 'read', 'medications', d.participant_id
    from doses d
    returning 1
  )
  select coalesce(jsonb_agg(jsonb_build_object(
           'participant_id', d.participant_id, 'participant_name', d.participant_name,
           'medication_id', d.medication_id, 'medication_name', d.medication_name, 'dose', d.dose, 'route', d.route,
           'due_at', private.iso_time(d.due_at),
           'state', case when (d.entry).id is not null then 'charted'
                         when v_now > d.due_at + interval '60 minutes' then 'overdue' else 'due' end,
           'entry', case when (d.entry).id is not null then private.administration_json(d.entry) end)
         order by d.due_at, d.participant_name, d.participant_id, d.medication_name, d.medication_id), '[]'::jsonb)
    into v_doses
  from doses d;
  return v_doses;
end
$function$;
revoke all on function private.medication_pass(p_instance uuid, p_at timestamp with time zone, p_window_minutes integer) from public;
grant execute on function private.medication_pass(p_instance uuid, p_at timestamp with time zone, p_window_minutes integer) to camp_api;

CREATE OR REPLACE FUNCTION private.medication_schedule_text(m public.participant_medications)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE
 SET search_path TO ''
AS $function$
  select case when m.prn then 'as needed' when m.times is not null then array_to_string(m.times, ', ') else m.instructions end
$function$;
grant execute on function private.medication_schedule_text(m public.participant_medications) to public;
grant execute on function private.medication_schedule_text(m public.participant_medications) to camp_care;
grant execute on function private.medication_schedule_text(m public.participant_medications) to camp_reporting;

CREATE OR REPLACE FUNCTION private.medication_update(p_participant uuid, p_medication uuid, p jsonb, p_versions text[])
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_version text;
  v_changed jsonb;
begin
  perform private.care_gate(p_participant, 'write');
  select m.xmin::text into v_version
  from public.participant_medications m
  where m.id = p_medication and m.participant_id = p_participant and m.deleted_at is null
  for update;
  if v_version is null then
    raise exception 'medication not found' using errcode = 'CA404';
  end if;
  if not private.version_matches(p_versions, v_version) then
    raise exception 'the record has changed since you read it' using errcode = 'CA412';
  end if;
  update public.participant_medications as m set
    name = case when p ? 'name' then p ->> 'name' else m.name end,
    dose = case when p ? 'dose' then p ->> 'dose' else m.dose end,
    route = case when p ? 'route' then p ->> 'route' else m.route end,
    instructions = case when p ? 'instructions' then p ->> 'instructions' else m.instructions end,
    start_date = case when p ? 'start_date' then (p ->> 'start_date')::date else m.start_date end,
    end_date = case when p ? 'end_date' then (p ->> 'end_date')::date else m.end_date end,
    times = case when p ? 'times' then
              case when jsonb_typeof(p -> 'times') = 'array' then array(select jsonb_array_elements_text(p -> 'times')) end
            else m.times end,
    prn = case when p ? 'prn' then coalesce((p ->> 'prn')::boolean, false) else m.prn end,
    min_interval_hours = case when p ? 'min_interval_hours' then (p ->> 'min_interval_hours')::numeric else m.min_interval_hours end,
    max_doses_per_24h = case when p ? 'max_doses_per_24h' then (p ->> 'max_doses_per_24h')::int else m.max_doses_per_24h end
  where m.id = p_medication
  returning jsonb_build_object('record', private.medication_json(m), 'version', m.xmin::text) into v_changed;
  return v_changed;
end
$function$;
alter function private.medication_update(p_participant uuid, p_medication uuid, p jsonb, p_versions text[]) owner to camp_care;
revoke all on function private.medication_update(p_participant uuid, p_medication uuid, p jsonb, p_versions text[]) from public;
grant execute on function private.medication_update(p_participant uuid, p_medication uuid, p jsonb, p_versions text[]) to camp_api;

CREATE OR REPLACE FUNCTION private.medications(p_participant uuid, p_include_deleted boolean)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
begin
  perform private.care_gate(p_participant, 'read');
  perform private.audit_care_read('medications', p_participant);
  return (
    select coalesce(jsonb_agg(private.medication_json(m) order by m.created_at, m.id), '[]'::jsonb)
    from public.participant_medications m
    where m.participant_id = p_participant and (p_include_deleted or m.deleted_at is null)
  );
end
$function$;
alter function private.medications(p_participant uuid, p_include_deleted boolean) owner to camp_care;
revoke all on function private.medications(p_participant uuid, p_include_deleted boolean) from public;
grant execute on function private.medications(p_participant uuid, p_include_deleted boolean) to camp_api;

CREATE OR REPLACE FUNCTION private.movement_json(m public.attendance_movements)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
 SET search_path TO ''
AS $function$
  select jsonb_build_object(
    'id', m.id, 'participant_id', m.participant_id, 'instance_id', m.instance_id, 'direction', m.direction,
    'recorded_at', private.iso_time(m.recorded_at), 'received_at', private.iso_time(m.received_at),
    'recorded_by', m.recorded_by, 'location', m.location, 'pickup_contact_id', m.pickup_contact_id,
    'override_reason', m.override_reason, 'nonce', m.nonce, 'conflict', m.conflict, 'conflict_reason', m.conflict_reason)
$function$;
grant execute on function private.movement_json(m public.attendance_movements) to public;
grant execute on function private.movement_json(m public.attendance_movements) to camp_api;

CREATE OR REPLACE FUNCTION private.nearest_due(p_times text[], p_zone text, p_at timestamp with time zone)
 RETURNS timestamp with time zone
 LANGUAGE sql
 STABLE
 SET search_path TO ''
AS $function$
  select d.due
  from (
    select ((((p_at at time zone p_zone)::date + day_offset) + t::time) at time zone p_zone) as due
    from unnest(p_times) as t, generate_series(-1, 1) as day_offset
  ) d
  where abs(extract(epoch from d.due - p_at)) <= 3 * 3600
  order by abs(extract(epoch from d.due - p_at)), d.due
  limit 1
$function$;
grant execute on function private.nearest_due(p_times text[], p_zone text, p_at timestamp with time zone) to public;
grant execute on function private.nearest_due(p_times text[], p_zone text, p_at timestamp with time zone) to camp_care;

CREATE OR REPLACE FUNCTION private.new_security_code()
 RETURNS text
 LANGUAGE sql
 SET search_path TO ''
AS $function$
  select string_agg(substr('ACDEFHJKMNPQRTUVWXY3479', 1 + floor(random() * 23)::int, 1), '')
  from generate_series(1, 4)
$function$;
revoke all on function private.new_security_code() from public;

CREATE OR REPLACE FUNCTION private.note_capacity_override()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
begin
  select jsonb_build_object('room_id', r.id, 'room_number', r.room_number, 'capacity', r.capacity, 'occupancy', c.occupancy)
  into new.capacity_override
  from public.participants p
  join public.rooms r on r.id = p.room_id
  cross join lateral (
    select count(*) as occupancy from public.participants o where o.room_id = r.id and o.deleted_at is null
  ) c
  where p.id = new.resource_id and p.deleted_at is null and r.capacity is not null and c.occupancy > r.capacity
    and (new.action = 'create' or new.changes ? 'room_id' or new.changes ? 'deleted_at');
  return new;
end
$function$;

CREATE OR REPLACE FUNCTION private.open_roll_call(p_id uuid)
 RETURNS public.roll_calls
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
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
$function$;
revoke all on function private.open_roll_call(p_id uuid) from public;

CREATE OR REPLACE FUNCTION private.override_room_capacity()
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO ''
AS $function$
begin
  if current_setting('request.jwt.claims', true) is not null
     and current_setting('request.jwt.claims', true) <> ''
     and coalesce(private.request_app_role(), '') <> 'admin' then
    raise exception 'only an admin may place participants over a room''s capacity'
      using errcode = 'CA403', column = 'override_capacity';
  end if;
  perform set_config('camp.room_capacity_override', 'on', true);
end
$function$;
revoke all on function private.override_room_capacity() from public;
grant execute on function private.override_room_capacity() to camp_api;

CREATE OR REPLACE FUNCTION private.participant_full_name(p_first_name text, p_surname text)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE
 SET search_path TO ''
AS $function$
  select btrim(coalesce(p_first_name, '') || ' ' || coalesce(p_surname, ''))
$function$;
grant execute on function private.participant_full_name(p_first_name text, p_surname text) to public;
grant execute on function private.participant_full_name(p_first_name text, p_surname text) to camp_api;

CREATE OR REPLACE FUNCTION private.participant_time_zone(p_participant uuid)
 RETURNS text
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO ''
AS $function$
  select i.time_zone from public.participants pt join public.instances i on i.id = pt.instance_id
  where pt.id = p_participant and pt.tenant_id = private.request_tenant_id()
$function$;
revoke all on function private.participant_time_zone(p_participant uuid) from public;
grant execute on function private.participant_time_zone(p_participant uuid) to camp_care;

CREATE OR REPLACE FUNCTION private.photo_consent_refused(p_participant uuid)
 RETURNS boolean
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO ''
AS $function$
  select coalesce((
    select c.status = 'refused'
    from public.participant_consents c
    where c.participant_id = p_participant and c.tenant_id = private.request_tenant_id() and c.kind = 'photo'
    order by c.seq desc
    limit 1), false)
$function$;
revoke all on function private.photo_consent_refused(p_participant uuid) from public;
grant execute on function private.photo_consent_refused(p_participant uuid) to camp_api;

CREATE OR REPLACE FUNCTION private.pickup_names_visible()
 RETURNS boolean
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_claims jsonb := private.audit_actor();
begin
  if private.care_access() <> 'none' then
    return true;
  end if;
  if v_claims ->> 'key_id' is null then
    return private.attendance_access() = 'write' and v_claims ->> 'via' = 'bearer';
  end if;
  return exists (
    select from public.api_keys k
    join public.users u on u.id = k.user_id and u.active
    where k.id = (v_claims ->> 'key_id')::uuid and k.user_id = (v_claims ->> 'sub')::uuid
      and k.tenant_id = private.request_tenant_id()
      and k.revoked_at is null and (k.expires_at is null or k.expires_at > now())
      and 'attendance' = any (k.scopes));
end
$function$;
revoke all on function private.pickup_names_visible() from public;
grant execute on function private.pickup_names_visible() to camp_api;

CREATE OR REPLACE FUNCTION private.ping_webhook(p_endpoint uuid)
 RETURNS uuid
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_endpoint public.webhook_endpoints;
  v_delivery uuid;
begin
  if private.request_app_role() is distinct from 'admin' then
    return null;
  end if;
  select * into v_endpoint from public.webhook_endpoints w
  where w.id = p_endpoint and w.tenant_id = private.request_tenant_id() and w.deleted_at is null;
  if not found then
    return null;
  end if;
  if not v_endpoint.enabled then
    raise exception 'the webhook endpoint is disabled: enable it first' using errcode = 'CA409';
  end if;
  insert into public.webhook_deliveries (tenant_id, endpoint_id, event_id, event_type, resource_id, occurred_at)
  values (v_endpoint.tenant_id, v_endpoint.id, nextval(pg_get_serial_sequence('public.audit_events', 'id')),
          'webhook.ping', v_endpoint.id, now())
  returning id into v_delivery;
  return v_delivery;
end
$function$;
revoke all on function private.ping_webhook(p_endpoint uuid) from public;
grant execute on function private.ping_webhook(p_endpoint uuid) to camp_api;
comment on function private.ping_webhook(p_endpoint uuid) is 'An admin''s test delivery: a signed webhook.ping to one enabled endpoint of the caller''s tenant, due now.';

CREATE OR REPLACE FUNCTION private.prune_audit_events(p_before timestamp with time zone)
 RETURNS bigint
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_count bigint;
begin
  perform set_config('camp.audit_rewrite', 'on', true);
  delete from public.audit_events where occurred_at < p_before;
  get diagnostics v_count = row_count;
  perform set_config('camp.audit_rewrite', 'off', true);
  return v_count;
end
$function$;
revoke all on function private.prune_audit_events(p_before timestamp with time zone) from public;

CREATE OR REPLACE FUNCTION private.prune_events(p_before timestamp with time zone, p_batch integer DEFAULT 10000)
 RETURNS bigint
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_count bigint;
  v_newest xid8;
begin
  with gone as (
    delete from public.events e
    where (e.tenant_id, e.xact_id, e.id) in (
      select o.tenant_id, o.xact_id, o.id from public.events o where o.occurred_at < p_before limit p_batch)
    returning e.xact_id
  )
  select count(*), max(xact_id) into v_count, v_newest from gone;
  if v_newest is not null then
    update private.event_horizon set xact_id = greatest(xact_id, v_newest);
  end if;
  return v_count;
end
$function$;
revoke all on function private.prune_events(p_before timestamp with time zone, p_batch integer) from public;

CREATE OR REPLACE FUNCTION private.prune_idempotency_keys(p_batch integer DEFAULT 10000)
 RETURNS bigint
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_count bigint;
begin
  delete from public.idempotency_keys
  where ctid in (select k.ctid from public.idempotency_keys k where k.expires_at <= now() limit p_batch);
  get diagnostics v_count = row_count;
  return v_count;
end
$function$;
revoke all on function private.prune_idempotency_keys(p_batch integer) from public;

CREATE OR REPLACE FUNCTION private.prune_webhook_deliveries(p_before timestamp with time zone, p_batch integer DEFAULT 10000)
 RETURNS bigint
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_count bigint;
begin
  -- Pending ones too (an endpoint disabled for a month): past the three days of retries, none is still worth sending.
  delete from public.webhook_deliveries
  where id in (
    select d.id from public.webhook_deliveries d
    where d.created_at < p_before and (d.lease_token is null or d.next_attempt_at < now())
    limit p_batch);
  get diagnostics v_count = row_count;
  return v_count;
end
$function$;
revoke all on function private.prune_webhook_deliveries(p_before timestamp with time zone, p_batch integer) from public;

CREATE OR REPLACE FUNCTION private.raise_incident_alert(p_tenant uuid, p_incident uuid, p_category text, p_now timestamp with time zone)
 RETURNS boolean
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
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
$function$;
revoke all on function private.raise_incident_alert(p_tenant uuid, p_incident uuid, p_category text, p_now timestamp with time zone) from public;
grant execute on function private.raise_incident_alert(p_tenant uuid, p_incident uuid, p_category text, p_now timestamp with time zone) to camp_care;

CREATE OR REPLACE FUNCTION private.raise_incident_alerts(p_now timestamp with time zone DEFAULT now())
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
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
$function$;
revoke all on function private.raise_incident_alerts(p_now timestamp with time zone) from public;
comment on function private.raise_incident_alerts(p_now timestamp with time zone) is 'The incidents sweep: one incident.needs_attention event per open incident (recorded in the last 30 days) that is serious or whose guardians were not recorded as notified within the tenant''s incident_notice_hours, raised once.';

CREATE OR REPLACE FUNCTION private.raise_overdue_doses(p_now timestamp with time zone DEFAULT now())
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
 SET jit TO 'off'
AS $function$
declare
  v_count int;
begin
  delete from private.overdue_doses where raised_at < p_now - interval '7 days';
  with overdue as (
    select d.tenant_id, d.medication_id, d.due_at
    from private.scheduled_doses(null, p_now - interval '24 hours' - interval '60 minutes', p_now - interval '60 minutes') d
    where (d.entry).id is null
  ), raised as (
    insert into private.overdue_doses (tenant_id, medication_id, due_at)
    select o.tenant_id, o.medication_id, o.due_at from overdue o
    on conflict do nothing
    returning tenant_id, medication_id, due_at
  ), evented as (
    insert into public.events (tenant_id, xact_id, id, type, resource_id, occurred_at)
    select r.tenant_id, pg_current_xact_id(), nextval(pg_get_serial_sequence('public.audit_events', 'id')),
           'medication.overdue', r.medication_id, p_now
    from raised r
    order by r.due_at, r.medication_id
    returning 1
  )
  select count(*) into v_count from evented;
  return v_count;
end
$function$;
revoke all on function private.raise_overdue_doses(p_now timestamp with time zone) from public;
comment on function private.raise_overdue_doses(p_now timestamp with time zone) is 'The overdue sweep: one medication.overdue event per scheduled dose left uncharted past its 60-minute grace period (due within the last day), raised once. Run by the webhook worker every minute and by camp health sweep.';

CREATE OR REPLACE FUNCTION private.rate_hit(p_subject text, p_weight integer, p_limit integer, p_window_seconds integer)
 RETURNS TABLE(rate_limit integer, remaining integer, reset_seconds integer)
 LANGUAGE plpgsql
 SET search_path TO ''
AS $function$
declare
  v_now timestamptz := clock_timestamp();
  v_start timestamptz := to_timestamp(floor(extract(epoch from v_now) / p_window_seconds) * p_window_seconds);
  v_hits int;
begin
  insert into private.rate_counters as c (subject, window_start, hits)
  values (p_subject, v_start, p_weight)
  on conflict (subject, window_start) do update set hits = c.hits + excluded.hits
  returning c.hits into v_hits;
  -- About one call in a hundred clears windows that have ended.
  if random() < 0.01 then
    delete from private.rate_counters where window_start < v_start;
  end if;
  rate_limit := p_limit;
  remaining := p_limit - v_hits;
  reset_seconds := greatest(1, ceil(extract(epoch from (v_start + make_interval(secs => p_window_seconds) - v_now))))::int;
  return next;
end
$function$;
revoke all on function private.rate_hit(p_subject text, p_weight integer, p_limit integer, p_window_seconds integer) from public;

CREATE OR REPLACE FUNCTION private.rate_hit_key(p_key_hash bytea, p_weight integer, p_limit integer, p_window_seconds integer)
 RETURNS TABLE(rate_limit integer, remaining integer, reset_seconds integer)
 LANGUAGE sql
 SET search_path TO ''
AS $function$
  select h.*
  from public.api_keys k
  cross join lateral private.rate_hit('key:' || k.id::text, p_weight, p_limit, p_window_seconds) h
  where k.key_hash = p_key_hash and k.revoked_at is null
$function$;
revoke all on function private.rate_hit_key(p_key_hash bytea, p_weight integer, p_limit integer, p_window_seconds integer) from public;

CREATE OR REPLACE FUNCTION private.rate_lease(p_subject text, p_weight integer, p_want integer, p_limit integer, p_window_seconds integer)
 RETURNS TABLE(granted integer, remaining integer, window_ms integer)
 LANGUAGE plpgsql
 SET search_path TO ''
AS $function$
declare
  v_now timestamptz := clock_timestamp();
  v_start timestamptz := to_timestamp(floor(extract(epoch from v_now) / p_window_seconds) * p_window_seconds);
  v_end timestamptz := v_start + make_interval(secs => p_window_seconds);
  v_hits int;
  v_left int;
begin
  -- The window's row, locked: concurrent leases of one caller take turns.
  insert into private.rate_counters (subject, window_start, hits)
  values (p_subject, v_start, 0)
  on conflict (subject, window_start) do nothing;
  select c.hits into v_hits
  from private.rate_counters c
  where c.subject = p_subject and c.window_start = v_start
  for update;
  v_left := p_limit - v_hits;
  if v_left < p_weight then
    raise exception 'rate limit spent' using errcode = 'CA429', hint = p_subject,
      detail = greatest(1, ceil(extract(epoch from (v_end - v_now))))::int::text;
  end if;
  granted := least(p_want, v_left, greatest(p_weight, v_left / 8));
  remaining := v_left - granted;
  update private.rate_counters c
  set hits = v_hits + granted
  where c.subject = p_subject and c.window_start = v_start;
  -- About one lease in a hundred clears windows that have ended.
  if random() < 0.01 then
    delete from private.rate_counters where window_start < v_start;
  end if;
  window_ms := greatest(1, floor(extract(epoch from (v_end - v_now)) * 1000))::int;
  return next;
end
$function$;
revoke all on function private.rate_lease(p_subject text, p_weight integer, p_want integer, p_limit integer, p_window_seconds integer) from public;

CREATE OR REPLACE FUNCTION private.rate_lease_key(p_key_hash bytea, p_weight integer, p_want integer, p_limit integer, p_window_seconds integer)
 RETURNS TABLE(user_id uuid, granted integer, remaining integer, window_ms integer)
 LANGUAGE sql
 SET search_path TO ''
AS $function$
  select l.user_id, h.*
  from private.live_api_keys l
  cross join lateral private.rate_lease('user:' || l.user_id::text, p_weight, p_want, p_limit, p_window_seconds) h
  where l.key_hash = p_key_hash
$function$;
revoke all on function private.rate_lease_key(p_key_hash bytea, p_weight integer, p_want integer, p_limit integer, p_window_seconds integer) from public;

CREATE OR REPLACE FUNCTION private.redeliver_webhook(p_endpoint uuid, p_delivery uuid)
 RETURNS text
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_delivery public.webhook_deliveries;
  v_enabled boolean;
begin
  if private.request_app_role() is distinct from 'admin' then
    return 'not_found';
  end if;
  select w.enabled into v_enabled from public.webhook_endpoints w
  where w.id = p_endpoint and w.tenant_id = private.request_tenant_id() and w.deleted_at is null;
  if not found then
    return 'not_found';
  end if;
  select * into v_delivery from public.webhook_deliveries
  where id = p_delivery and endpoint_id = p_endpoint and tenant_id = private.request_tenant_id()
  for update;
  if not found then
    return 'not_found';
  elsif not v_enabled then
    return 'disabled';
  elsif v_delivery.lease_token is not null and v_delivery.next_attempt_at > now() then
    return 'in_flight';
  end if;
  update public.webhook_deliveries
  set status = 'pending', tries = 0, cycle_started_at = null, next_attempt_at = now(), lease_token = null, leased_at = null
  where id = p_delivery;
  return 'queued';
end
$function$;
revoke all on function private.redeliver_webhook(p_endpoint uuid, p_delivery uuid) from public;
grant execute on function private.redeliver_webhook(p_endpoint uuid, p_delivery uuid) to camp_api;

CREATE OR REPLACE FUNCTION private.refuse_instance_change()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO ''
AS $function$
begin
  raise exception 'cannot be changed; create the record in the other instance instead'
    using errcode = 'CA400', column = 'instance_id';
end
$function$;

CREATE OR REPLACE FUNCTION private.reporting_care()
 RETURNS boolean
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO ''
AS $function$
begin
  if not private.reporting_care_granted() then
    raise exception 'permission denied for care data: this reporting role was not granted --care'
      using errcode = '42501', hint = 'camp reporting grant ... --care makes a role that reads it';
  end if;
  return true;
end
$function$;
revoke all on function private.reporting_care() from public;
grant execute on function private.reporting_care() to camp_reporting;

CREATE OR REPLACE FUNCTION private.reporting_care_granted()
 RETURNS boolean
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO ''
AS $function$
  select coalesce((select r.care from private.reporting_roles r where r.role_name = session_user::text), false)
$function$;
revoke all on function private.reporting_care_granted() from public;
grant execute on function private.reporting_care_granted() to camp_reporting;

CREATE OR REPLACE FUNCTION private.reporting_tenant_id()
 RETURNS uuid
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO ''
AS $function$
  select r.tenant_id from private.reporting_roles r where r.role_name = session_user::text
$function$;
revoke all on function private.reporting_tenant_id() from public;
grant execute on function private.reporting_tenant_id() to camp_reporting;

CREATE OR REPLACE FUNCTION private.request_app_role()
 RETURNS text
 LANGUAGE plpgsql
 STABLE
 SET search_path TO ''
AS $function$
begin
  return nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'app_role';
end
$function$;
grant execute on function private.request_app_role() to public;
grant execute on function private.request_app_role() to camp_api;

CREATE OR REPLACE FUNCTION private.request_tenant_id()
 RETURNS uuid
 LANGUAGE plpgsql
 STABLE
 SET search_path TO ''
AS $function$
begin
  -- Null without claims (a connection outside a tenant scope): matches no row.
  return (nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'tenant_id')::uuid;
end
$function$;
grant execute on function private.request_tenant_id() to public;
grant execute on function private.request_tenant_id() to camp_api;
grant execute on function private.request_tenant_id() to camp_care;
comment on function private.request_tenant_id() is 'The caller''s tenant from the transaction''s claims (request.jwt.claims), or null. PL/pgSQL so that its body is compiled once per session, not parsed at every evaluation.';

CREATE OR REPLACE FUNCTION private.require_care_access()
 RETURNS boolean
 LANGUAGE plpgsql
 STABLE
 SET search_path TO ''
AS $function$
begin
  if private.care_access() = 'none' then
    raise exception 'no access to care data (needs the user''s care_access, and for an API key its care scope)'
      using errcode = 'CA403';
  end if;
  return true;
end
$function$;
revoke all on function private.require_care_access() from public;
grant execute on function private.require_care_access() to camp_api;

CREATE OR REPLACE FUNCTION private.require_safeguarding_lead()
 RETURNS boolean
 LANGUAGE plpgsql
 STABLE
 SET search_path TO ''
AS $function$
begin
  if not private.is_safeguarding_lead() then
    raise exception 'only safeguarding leads read safeguarding incidents' using errcode = 'CA403';
  end if;
  return true;
end
$function$;
revoke all on function private.require_safeguarding_lead() from public;
grant execute on function private.require_safeguarding_lead() to camp_api;

CREATE OR REPLACE FUNCTION private.reset_list_counts()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
begin
  delete from private.list_counts where list = tg_argv[0];
  return null;
end
$function$;

CREATE OR REPLACE FUNCTION private.reset_room_occupancy()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
begin
  update private.room_occupancy set occupancy = 0 where occupancy <> 0;
  return null;
end
$function$;

CREATE OR REPLACE FUNCTION private.resolve_token_user(p_subject text, p_email text, p_email_verified boolean, p_tenant_id uuid)
 RETURNS TABLE(tenant_id uuid, user_id uuid, email text, role text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
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
$function$;
comment on function private.resolve_token_user(p_subject text, p_email text, p_email_verified boolean, p_tenant_id uuid) is 'The user a verified Bearer token is: by subject; the first time only, by a verified e-mail of a user no subject holds yet, which it then links.';

CREATE OR REPLACE FUNCTION private.restrict_reporting_database()
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO ''
AS $function$
begin
  execute format('revoke temporary on database %I from public', current_database());
  if exists (select from pg_catalog.pg_roles where rolname = 'camp_api') then
    execute format('grant temporary on database %I to camp_api', current_database());
  end if;
  execute format('grant connect on database %I to camp_reporting', current_database());
exception when insufficient_privilege then
  raise notice 'not the owner of database %: TEMP stays granted to PUBLIC', current_database();
end
$function$;
revoke all on function private.restrict_reporting_database() from public;

CREATE OR REPLACE FUNCTION private.retain_health_records(p_tenant uuid, p_participant uuid, p_until timestamp with time zone)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_entries uuid[];
  v_incidents int;
  v_kept jsonb := '[]'::jsonb;
begin
  v_entries := array(select a.id from public.medication_administrations a
                     where a.tenant_id = p_tenant and a.participant_id = p_participant);
  if cardinality(v_entries) > 0 then
    perform set_config('camp.health_rewrite', 'on', true);
    update public.medication_administrations set
      participant_id = null, medication_id = null, nonce = null, notes = null,
      reason = case when reason is not null then 'removed at erasure' end,
      override_reason = case when override_reason is not null then 'removed at erasure' end,
      retained_until = p_until
    where id = any (v_entries);
    perform set_config('camp.health_rewrite', 'off', true);
    perform set_config('camp.audit_rewrite', 'on', true);
    update public.audit_events e
    set changes = (
      select coalesce(jsonb_object_agg(f.key, case when e.action = 'create' then '"erased"'::jsonb else '["erased", "erased"]'::jsonb end), '{}')
      from jsonb_each(e.changes) f)
    where e.tenant_id = p_tenant
      and e.resource_type = 'medication_administration'
      and e.resource_id = any (v_entries)
      and e.changes <> '{}'::jsonb;
    perform set_config('camp.audit_rewrite', 'off', true);
    v_kept := v_kept || jsonb_build_object('record', 'medication_administrations', 'count', cardinality(v_entries),
                                           'retained_until', private.iso_time(p_until));
  end if;
  -- Before the participant's row is blanked: it scrubs the child's names from the incidents' text.
  v_incidents := private.retain_incidents_of_participant(p_tenant, p_participant, p_until);
  if v_incidents > 0 then
    v_kept := v_kept || jsonb_build_object('record', 'incidents', 'count', v_incidents,
                                           'retained_until', private.iso_time(p_until));
  end if;
  return v_kept;
end
$function$;
revoke all on function private.retain_health_records(p_tenant uuid, p_participant uuid, p_until timestamp with time zone) from public;

CREATE OR REPLACE FUNCTION private.retain_incidents_of_participant(p_tenant uuid, p_participant uuid, p_until timestamp with time zone)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_linked uuid[];
  v_kept uuid[];
  v_names text[];
begin
  v_linked := array(select l.incident_id from public.incident_participants l
                    where l.participant_id = p_participant and l.tenant_id = p_tenant);
  if cardinality(v_linked) = 0 then
    return 0;
  end if;
  select array[p.first_name, p.surname, p.full_name] into v_names
  from public.participants p where p.id = p_participant and p.tenant_id = p_tenant;
  perform private.scrub_incident_names(p_tenant, v_linked, v_names);
  perform set_config('camp.health_rewrite', 'on', true);
  delete from public.incident_participants where participant_id = p_participant and tenant_id = p_tenant;
  v_kept := array(select x from unnest(v_linked) x
                  where not exists (select from public.incident_participants l where l.incident_id = x));
  update public.incidents set retained_until = p_until where id = any (v_kept);
  perform set_config('camp.health_rewrite', 'off', true);
  delete from private.incident_alerts where incident_id = any (v_kept);
  perform set_config('camp.audit_rewrite', 'on', true);
  update public.audit_events e
  set changes = (
    select coalesce(jsonb_object_agg(f.key, case when e.action = 'create' then '"erased"'::jsonb else '["erased", "erased"]'::jsonb end), '{}')
    from jsonb_each(e.changes) f)
  where e.tenant_id = p_tenant
    and e.resource_type in ('incident', 'safeguarding_incident')
    and e.resource_id = any (v_kept)
    and e.changes <> '{}'::jsonb;
  perform set_config('camp.audit_rewrite', 'off', true);
  return cardinality(v_kept);
end
$function$;
revoke all on function private.retain_incidents_of_participant(p_tenant uuid, p_participant uuid, p_until timestamp with time zone) from public;

CREATE OR REPLACE FUNCTION private.roll_call_close(p_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_call public.roll_calls;
  v_counts jsonb;
begin
  perform private.attendance_gate();
  v_call := private.open_roll_call(p_id);
  v_counts := private.roll_call_json(p_id) -> 'counts';
  update public.roll_calls
  set status = 'closed', closed_at = now(), closed_by = (private.audit_actor() ->> 'sub')::uuid,
      expected_count = (v_counts ->> 'expected')::int,
      present_count = (v_counts ->> 'present')::int,
      absent_count = (v_counts ->> 'absent')::int,
      excused_count = (v_counts ->> 'excused')::int,
      missing_count = (v_counts ->> 'missing')::int
  where id = v_call.id;
  return private.roll_call_json(p_id);
end
$function$;
revoke all on function private.roll_call_close(p_id uuid) from public;
grant execute on function private.roll_call_close(p_id uuid) to camp_api;

CREATE OR REPLACE FUNCTION private.roll_call_json(p_id uuid)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
 SET search_path TO ''
AS $function$
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
$function$;
revoke all on function private.roll_call_json(p_id uuid) from public;
grant execute on function private.roll_call_json(p_id uuid) to camp_api;

CREATE OR REPLACE FUNCTION private.roll_call_mark(p_id uuid, p_marks jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
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
$function$;
revoke all on function private.roll_call_mark(p_id uuid, p_marks jsonb) from public;
grant execute on function private.roll_call_mark(p_id uuid, p_marks jsonb) to camp_api;

CREATE OR REPLACE FUNCTION private.roll_call_open(p jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
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
  select v_id, x.id
  from (
    select pt.id
    from public.participants pt
    where pt.tenant_id = v_tenant and pt.instance_id = v_instance and pt.deleted_at is null and pt.presence = 'in'
      and (v_super is null or pt.super_group_id = v_super)
      and (v_sub is null or pt.sub_group_id = v_sub)
      and (v_block is null or pt.block_id = v_block)
      and (v_room is null or pt.room_id = v_room)
    order by pt.id
    for share of pt
  ) x;
  return private.roll_call_json(v_id);
end
$function$;
revoke all on function private.roll_call_open(p jsonb) from public;
grant execute on function private.roll_call_open(p jsonb) to camp_api;

CREATE OR REPLACE FUNCTION private.room_capacity_overridden()
 RETURNS boolean
 LANGUAGE sql
 STABLE
 SET search_path TO ''
AS $function$
  select coalesce(current_setting('camp.room_capacity_override', true), '') = 'on'
$function$;
grant execute on function private.room_capacity_overridden() to public;
grant execute on function private.room_capacity_overridden() to camp_api;

CREATE OR REPLACE FUNCTION private.room_in_instance(p_room_id uuid, p_instance_id uuid)
 RETURNS public.rooms
 LANGUAGE plpgsql
 STABLE
 SET search_path TO ''
AS $function$
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
$function$;
grant execute on function private.room_in_instance(p_room_id uuid, p_instance_id uuid) to public;
grant execute on function private.room_in_instance(p_room_id uuid, p_instance_id uuid) to camp_api;

CREATE OR REPLACE FUNCTION private.rooms_over_capacity(p_rooms uuid[])
 RETURNS TABLE(room_id uuid, room_number text, capacity integer, occupancy bigint)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
begin
  return query
    select o.room_id, r.room_number, o.capacity, o.occupancy::bigint
    from private.room_occupancy o
    join public.rooms r on r.id = o.room_id
    where o.room_id = any (p_rooms) and o.occupancy > o.capacity
    order by o.room_id
    for update of o;
end
$function$;
revoke all on function private.rooms_over_capacity(p_rooms uuid[]) from public;
grant execute on function private.rooms_over_capacity(p_rooms uuid[]) to camp_api;
comment on function private.rooms_over_capacity(p_rooms uuid[]) is 'The rooms of the list holding more live participants than their capacity, as this transaction sees them; locks their capacity checks until the transaction ends.';

CREATE OR REPLACE FUNCTION private.scheduled_doses(p_instance uuid, p_from timestamp with time zone, p_to timestamp with time zone)
 RETURNS TABLE(tenant_id uuid, instance_id uuid, participant_id uuid, participant_name text, medication_id uuid, medication_name text, dose text, route text, due_at timestamp with time zone, entry public.medication_administrations)
 LANGUAGE sql
 STABLE
 SET search_path TO ''
AS $function$
  select m.tenant_id, i.id, p.id, p.full_name, m.id, m.name, m.dose, m.route, d.due_at, e
  from public.instances i
  join public.participants p on p.instance_id = i.id and p.deleted_at is null
  join public.participant_medications m on m.participant_id = p.id and m.deleted_at is null and m.times is not null
  cross join lateral (
    select ((day + t::time) at time zone i.time_zone) as due_at, day
    from generate_series((p_from at time zone i.time_zone)::date, (p_to at time zone i.time_zone)::date, interval '1 day') as g(day_ts)
    cross join lateral (select g.day_ts::date as day) dd
    cross join unnest(m.times) as t
  ) d
  left join lateral (
    select a from public.medication_administrations a
    where a.medication_id = m.id and a.due_at = d.due_at
      and not exists (select from public.medication_administrations c where c.amends = a.id)
    order by a.recorded_at desc
    limit 1
  ) ch(e) on true
  where (p_instance is null or i.id = p_instance) and i.deleted_at is null
    and d.due_at >= p_from and d.due_at <= p_to
    and (m.start_date is null or d.day >= m.start_date)
    and (m.end_date is null or d.day <= m.end_date)
$function$;
revoke all on function private.scheduled_doses(p_instance uuid, p_from timestamp with time zone, p_to timestamp with time zone) from public;

CREATE OR REPLACE FUNCTION private.scrub_incident_names(p_tenant uuid, p_incidents uuid[], p_names text[])
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
begin
  if cardinality(p_incidents) = 0 then
    return;
  end if;
  perform set_config('camp.health_rewrite', 'on', true);
  update public.incidents i set
    location = coalesce(nullif(btrim(private.scrub_names(i.location, p_names)), ''), '[erased]'),
    description = private.scrub_names(i.description, p_names),
    actions_taken = private.scrub_names(i.actions_taken, p_names),
    guardian_notified_by = private.scrub_names(i.guardian_notified_by, p_names)
  where i.id = any (p_incidents) and i.tenant_id = p_tenant
    and (i.location, i.description, i.actions_taken, i.guardian_notified_by) is distinct from
        (private.scrub_names(i.location, p_names), private.scrub_names(i.description, p_names),
         private.scrub_names(i.actions_taken, p_names), private.scrub_names(i.guardian_notified_by, p_names));
  update public.incident_amendments a set
    changes = private.scrub_names_json(a.changes, p_names),
    reason = private.scrub_names(a.reason, p_names)
  where a.incident_id = any (p_incidents) and a.tenant_id = p_tenant
    and (a.changes, a.reason) is distinct from (private.scrub_names_json(a.changes, p_names), private.scrub_names(a.reason, p_names));
  perform set_config('camp.health_rewrite', 'off', true);
  perform set_config('camp.audit_rewrite', 'on', true);
  update public.audit_events e set changes = private.scrub_names_json(e.changes, p_names)
  where e.tenant_id = p_tenant and e.resource_type in ('incident', 'safeguarding_incident') and e.resource_id = any (p_incidents)
    and e.changes <> '{}'::jsonb and e.changes is distinct from private.scrub_names_json(e.changes, p_names);
  perform set_config('camp.audit_rewrite', 'off', true);
end
$function$;
revoke all on function private.scrub_incident_names(p_tenant uuid, p_incidents uuid[], p_names text[]) from public;

CREATE OR REPLACE FUNCTION private.scrub_names(p_text text, p_names text[])
 RETURNS text
 LANGUAGE sql
 IMMUTABLE
 SET search_path TO ''
AS $function$
  select case when p_text is null then null else (
    select coalesce(
      (select regexp_replace(p_text,
                             '\m(' || string_agg(regexp_replace(n, '([.\\+*?\[^\]$(){}=!<>|:#/-])', '\\\1', 'g'), '|'
                                                 order by char_length(n) desc) || ')\M',
                             '[erased]', 'gi')
       from unnest(p_names) n
       where char_length(btrim(n)) >= 2),
      p_text)) end
$function$;

CREATE OR REPLACE FUNCTION private.scrub_names_json(p_value jsonb, p_names text[])
 RETURNS jsonb
 LANGUAGE sql
 IMMUTABLE
 SET search_path TO ''
AS $function$
  select case jsonb_typeof(p_value)
    when 'string' then to_jsonb(private.scrub_names(p_value #>> '{}', p_names))
    when 'array' then (select coalesce(jsonb_agg(private.scrub_names_json(e, p_names) order by o), '[]'::jsonb)
                       from jsonb_array_elements(p_value) with ordinality as x(e, o))
    when 'object' then (select coalesce(jsonb_object_agg(k, private.scrub_names_json(v, p_names)), '{}'::jsonb)
                        from jsonb_each(p_value) as x(k, v))
    else p_value end
$function$;

CREATE OR REPLACE FUNCTION private.search_deleted_participant_ids(p_term text)
 RETURNS SETOF uuid
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO ''
AS $function$
  select p.id
  from public.participants p
  where p.tenant_id = (select private.request_tenant_id())
    and p.deleted_at is not null
    and private.search_key($1) <> ''
    and p.search_key like '%' || private.search_key($1) || '%'
$function$;
revoke all on function private.search_deleted_participant_ids(p_term text) from public;
grant execute on function private.search_deleted_participant_ids(p_term text) to camp_api;

CREATE OR REPLACE FUNCTION private.search_grams(p_key text)
 RETURNS text[]
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE STRICT
 SET search_path TO ''
AS $function$
  select array(
    select c from unnest(pg_catalog.string_to_array(p_key, null)) as c
    where c <> pg_catalog.chr(31)
    union all
    select a || b
    from unnest((pg_catalog.string_to_array(p_key, null))[1:pg_catalog.length(p_key) - 1],
                (pg_catalog.string_to_array(p_key, null))[2:]) as p (a, b)
    where a <> pg_catalog.chr(31) and b <> pg_catalog.chr(31))
$function$;
comment on function private.search_grams(p_key text) is 'The letters and pairs of adjacent letters of a search key, within its fields: what a search of one or two letters looks up (participants_search_grams).';

CREATE OR REPLACE FUNCTION private.search_key(p_text text)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE STRICT
 SET search_path TO ''
AS $function$
      select regexp_replace(lower(extensions.unaccent('extensions.unaccent'::regdictionary, p_text)), '[^[:alnum:]' || chr(31) || ']+', '', 'g')
    $function$;
grant execute on function private.search_key(p_text text) to public;
grant execute on function private.search_key(p_text text) to camp_api;
comment on function private.search_key(p_text text) is 'Text as search compares it: lower case, without accents, without anything but letters, digits and the field separator chr(31).';

CREATE OR REPLACE FUNCTION private.search_participant_ids(p_term text)
 RETURNS SETOF uuid
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO ''
AS $function$
  select p.id
  from public.participants p
  where p.tenant_id = (select private.request_tenant_id())
    and p.deleted_at is null
    and length(private.search_key($1)) >= 3
    and p.search_key like '%' || private.search_key($1) || '%'
  union all
  select p.id
  from public.participants p
  where p.tenant_id = (select private.request_tenant_id())
    and p.deleted_at is null
    and length(private.search_key($1)) between 1 and 2
    and private.search_grams(p.search_key) @> array[private.search_key($1)]
$function$;
revoke all on function private.search_participant_ids(p_term text) from public;
grant execute on function private.search_participant_ids(p_term text) to camp_api;

CREATE OR REPLACE FUNCTION private.set_webhook_secret(p_endpoint uuid, p_secret text, p_grace interval)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
begin
  if not exists (
    select from public.webhook_endpoints
    where id = p_endpoint and tenant_id = private.request_tenant_id() and deleted_at is null
  ) or private.request_app_role() is distinct from 'admin' then
    raise exception 'webhook endpoint not found' using errcode = 'CA404';
  end if;
  -- At most two secrets sign: the new one and the one it replaces; older ones end now.
  delete from private.webhook_secrets where endpoint_id = p_endpoint and expires_at is not null;
  update private.webhook_secrets set expires_at = now() + p_grace where endpoint_id = p_endpoint and expires_at is null;
  delete from private.webhook_secrets where endpoint_id = p_endpoint and expires_at <= now();
  insert into private.webhook_secrets (endpoint_id, secret) values (p_endpoint, p_secret);
end
$function$;
revoke all on function private.set_webhook_secret(p_endpoint uuid, p_secret text, p_grace interval) from public;
grant execute on function private.set_webhook_secret(p_endpoint uuid, p_secret text, p_grace interval) to camp_api;

CREATE OR REPLACE FUNCTION private.severe_allergy_participants()
 RETURNS SETOF uuid
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO ''
AS $function$
begin
  if private.care_access() = 'none' then
    raise exception 'no access to care data (needs the user''s care_access, and for an API key its care scope)'
      using errcode = 'CA403';
  end if;
  return query select r.id from public.participant_care r where r.severe_allergy;
end
$function$;
alter function private.severe_allergy_participants() owner to camp_care;
revoke all on function private.severe_allergy_participants() from public;
grant execute on function private.severe_allergy_participants() to camp_api;

CREATE OR REPLACE FUNCTION private.skip_safeguarding_deliveries()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
begin
  if new.event_type like 'incident.%'
     and exists (select from public.incidents i where i.id = new.resource_id and i.category = 'safeguarding') then
    return null;
  end if;
  return new;
end
$function$;
revoke all on function private.skip_safeguarding_deliveries() from public;

CREATE OR REPLACE FUNCTION private.skip_unnamed_care_deliveries()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
begin
  if private.is_care_event(new.event_type)
     and not exists (select from public.webhook_endpoints w
                     where w.id = new.endpoint_id and new.event_type = any (w.types)) then
    return null;
  end if;
  return new;
end
$function$;
revoke all on function private.skip_unnamed_care_deliveries() from public;

CREATE OR REPLACE FUNCTION private.start_webhook_dispatch()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
begin
  if tg_op = 'INSERT' or (new.enabled and not old.enabled) then
    insert into private.webhook_dispatch (endpoint_id, tenant_id, xact_id, event_id)
    values (new.id, new.tenant_id, pg_snapshot_xmin(pg_current_snapshot()), 0)
    on conflict (endpoint_id) do update
      set xact_id = excluded.xact_id, event_id = 0, failing_since = null, slow_failures = 0, paused_until = null;
  end if;
  return null;
end
$function$;

CREATE OR REPLACE FUNCTION private.supabase_user_tenant_id()
 RETURNS uuid
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO ''
AS $function$
  select u.tenant_id
  from public.users u
  where u.auth_subject = coalesce(
    nullif(current_setting('request.jwt.claim.sub', true), ''),
    nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'sub'
  )
$function$;
revoke all on function private.supabase_user_tenant_id() from public;
grant execute on function private.supabase_user_tenant_id() to authenticated;

CREATE OR REPLACE FUNCTION private.supergroup_of_subgroup(p_sub_group_id uuid, p_instance_id uuid)
 RETURNS uuid
 LANGUAGE plpgsql
 STABLE
 SET search_path TO ''
AS $function$
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
$function$;
grant execute on function private.supergroup_of_subgroup(p_sub_group_id uuid, p_instance_id uuid) to public;
grant execute on function private.supergroup_of_subgroup(p_sub_group_id uuid, p_instance_id uuid) to camp_api;

CREATE OR REPLACE FUNCTION private.sweep_retained_health_records(p_now timestamp with time zone DEFAULT now())
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_count int;
begin
  perform set_config('camp.health_rewrite', 'on', true);
  -- One statement: a correction and the entry it amends are kept until the same moment and go together.
  delete from public.medication_administrations where retained_until <= p_now;
  get diagnostics v_count = row_count;
  perform set_config('camp.health_rewrite', 'off', true);
  return v_count + private.sweep_retained_incidents(p_now);
end
$function$;
revoke all on function private.sweep_retained_health_records(p_now timestamp with time zone) from public;
comment on function private.sweep_retained_health_records(p_now timestamp with time zone) is 'The retention sweep: deletes the medication administration entries and incidents of erased participants kept past their tenant''s retention period; returns how many of both. Run by the webhook workers'' hourly housekeeping and by camp health sweep.';

CREATE OR REPLACE FUNCTION private.sweep_retained_incidents(p_now timestamp with time zone DEFAULT now())
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_gone uuid[];
begin
  v_gone := array(select i.id from public.incidents i where i.retained_until <= p_now);
  if cardinality(v_gone) = 0 then
    return 0;
  end if;
  perform set_config('camp.health_rewrite', 'on', true);
  delete from public.incident_amendments where incident_id = any (v_gone);
  delete from public.incidents where id = any (v_gone);
  perform set_config('camp.health_rewrite', 'off', true);
  return cardinality(v_gone);
end
$function$;
revoke all on function private.sweep_retained_incidents(p_now timestamp with time zone) from public;
comment on function private.sweep_retained_incidents(p_now timestamp with time zone) is 'The retention sweep for incidents: deletes incidents kept (detached) after an erasure once their retained_until has passed.';

CREATE OR REPLACE FUNCTION private.touch_updated_at()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO ''
AS $function$
begin
  new.updated_at := now();
  return new;
end
$function$;

CREATE OR REPLACE FUNCTION private.track_room_capacity()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
begin
  if tg_op = 'INSERT' then
    insert into private.room_occupancy (room_id, capacity)
    values (new.id, case when new.deleted_at is null then new.capacity end);
  else
    update private.room_occupancy
    set capacity = case when new.deleted_at is null then new.capacity end
    where room_id = new.id;
  end if;
  return null;
end
$function$;

CREATE OR REPLACE FUNCTION private.version_matches(p_versions text[], p_version text)
 RETURNS boolean
 LANGUAGE sql
 IMMUTABLE
 SET search_path TO ''
AS $function$
  select p_versions is null or (p_version is not null and ('*' = any (p_versions) or p_version = any (p_versions)))
$function$;
grant execute on function private.version_matches(p_versions text[], p_version text) to public;
grant execute on function private.version_matches(p_versions text[], p_version text) to camp_care;

CREATE OR REPLACE FUNCTION private.webhook_endpoint_state(p_endpoint uuid)
 RETURNS TABLE(failing_since timestamp with time zone, previous_secret_expires_at timestamp with time zone)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO ''
AS $function$
  select d.failing_since,
         (select max(s.expires_at) from private.webhook_secrets s where s.endpoint_id = w.id and s.expires_at > now())
  from public.webhook_endpoints w
  left join private.webhook_dispatch d on d.endpoint_id = w.id
  where w.id = p_endpoint and w.tenant_id = private.request_tenant_id() and private.request_app_role() = 'admin'
$function$;
revoke all on function private.webhook_endpoint_state(p_endpoint uuid) from public;
grant execute on function private.webhook_endpoint_state(p_endpoint uuid) to camp_api;

CREATE OR REPLACE FUNCTION private.withdraw_refused_photo()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_key text;
begin
  select p.photo_key into v_key from public.participants p where p.id = new.participant_id for update;
  update public.participants
  set photo_key = null, photo_content_type = null, photo_size = null, photo_sha256 = null, photo_link = null
  where id = new.participant_id and (photo_key is not null or photo_link is not null);
  if v_key is not null then
    perform set_config('camp.withdrawn_photo', v_key, true);
  end if;
  return null;
end
$function$;

CREATE OR REPLACE FUNCTION private.withhold_answers_naming(p_tenant uuid, p_participant uuid)
 RETURNS bigint
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_count bigint;
begin
  update public.idempotency_keys k
  set withheld = 'erased', body = null, headers = '{}', request_hash = null
  where k.tenant_id = p_tenant
    and k.body is not null
    and (strpos(k.body, p_participant::text) > 0 or strpos(k.headers::text, p_participant::text) > 0);
  get diagnostics v_count = row_count;
  return v_count;
end
$function$;
revoke all on function private.withhold_answers_naming(p_tenant uuid, p_participant uuid) from public;

CREATE OR REPLACE FUNCTION private.withhold_answers_of_erased()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
begin
  perform private.withhold_answers_naming(new.tenant_id, new.id);
  return null;
end
$function$;
revoke all on function private.withhold_answers_of_erased() from public;

-- ==================== schema public ====================

create table public.api_keys (
  id uuid default gen_random_uuid() not null,
  tenant_id uuid default private.request_tenant_id() not null,
  user_id uuid not null,
  key_hash bytea not null,
  key_prefix text not null,
  created_at timestamp with time zone default now() not null,
  last_used_at timestamp with time zone,
  expires_at timestamp with time zone,
  revoked_at timestamp with time zone,
  name text,
  scopes text[] default '{read,write}'::text[] not null,
  constraint api_keys_pkey PRIMARY KEY (id),
  constraint api_keys_key_hash_key UNIQUE (key_hash),
  constraint api_keys_user_id_fkey FOREIGN KEY (tenant_id, user_id) REFERENCES public.users(tenant_id, id),
  constraint api_keys_key_hash_check CHECK (octet_length(key_hash) = 32),
  constraint api_keys_key_prefix_check CHECK (char_length(key_prefix) >= 5 AND char_length(key_prefix) <= 32),
  constraint api_keys_name_check CHECK (char_length(name) >= 1 AND char_length(name) <= 100),
  constraint api_keys_scopes_check CHECK (scopes = '{read}'::text[] OR scopes = '{read,write}'::text[] OR scopes = '{read,care}'::text[] OR scopes = '{read,write,care}'::text[] OR scopes = '{attendance}'::text[] OR scopes = '{read,attendance}'::text[] OR scopes = '{read,write,attendance}'::text[] OR scopes = '{read,care,attendance}'::text[] OR scopes = '{read,write,care,attendance}'::text[])
);
alter table public.api_keys enable row level security;
CREATE INDEX api_keys_live_by_user ON public.api_keys USING btree (user_id) WHERE (revoked_at IS NULL);
CREATE INDEX api_keys_tenant_id ON public.api_keys USING btree (tenant_id);
create policy "API callers manage the keys of their tenant" on public.api_keys for all to camp_api
  using ((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)))
  with check ((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)));
CREATE TRIGGER api_keys_audit_insert AFTER INSERT ON public.api_keys REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION private.audit_changes('api_key');
CREATE TRIGGER api_keys_audit_update AFTER UPDATE ON public.api_keys REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION private.audit_changes('api_key');
CREATE TRIGGER api_keys_guard_issue BEFORE INSERT ON public.api_keys FOR EACH ROW EXECUTE FUNCTION private.guard_key_issue();
CREATE TRIGGER api_keys_guard_revocation BEFORE UPDATE OF revoked_at ON public.api_keys FOR EACH ROW EXECUTE FUNCTION private.guard_key_revocation();
grant select (id, tenant_id, user_id, key_prefix, created_at, last_used_at, expires_at, revoked_at, name, scopes), insert (tenant_id, user_id, key_hash, key_prefix, expires_at, name, scopes), update (revoked_at) on table public.api_keys to camp_api;
comment on column public.api_keys.scopes is 'What the key may do: {read} (GET and HEAD only) or {read,write} (everything its user''s role allows), each optionally with care (the user''s care access) and attendance (movements, roll calls, pickups'' names in the roster); {attendance} alone reaches only movements, roll calls, presence, rosters and the event feed.';

create table public.attendance_codes (
  movement_id uuid not null,
  tenant_id uuid default private.request_tenant_id() not null,
  code text not null,
  constraint attendance_codes_pkey PRIMARY KEY (movement_id),
  constraint attendance_codes_movement_id_fkey FOREIGN KEY (movement_id) REFERENCES public.attendance_movements(id) ON DELETE CASCADE,
  constraint attendance_codes_code_check CHECK (code ~ '^[A-Z0-9]{4,8}$'::text)
);
alter table public.attendance_codes enable row level security;
comment on table public.attendance_codes is 'The security code a check-in issued or a check-out presented. Read only by the attendance doors; never returned but once, in the check-in''s answer.';

create table public.attendance_movements (
  id uuid default gen_random_uuid() not null,
  tenant_id uuid default private.request_tenant_id() not null,
  instance_id uuid not null,
  participant_id uuid not null,
  direction text not null,
  recorded_at timestamp with time zone not null,
  received_at timestamp with time zone default now() not null,
  recorded_by uuid,
  location text,
  pickup_contact_id uuid,
  override_reason text,
  nonce uuid not null,
  conflict_reason text,
  conflict boolean generated always as ((conflict_reason IS NOT NULL)) stored not null,
  constraint attendance_movements_pkey PRIMARY KEY (id),
  constraint attendance_movements_nonce_key UNIQUE (tenant_id, nonce),
  constraint attendance_movements_participant_id_fkey FOREIGN KEY (tenant_id, participant_id) REFERENCES public.participants(tenant_id, id),
  constraint attendance_movements_direction_check CHECK (direction = ANY (ARRAY['in'::text, 'out'::text])),
  constraint attendance_movements_location_check CHECK (char_length(location) <= 200),
  constraint attendance_movements_override_check CHECK (override_reason IS NULL OR direction = 'out'::text),
  constraint attendance_movements_override_reason_check CHECK (char_length(btrim(override_reason)) >= 1 AND char_length(btrim(override_reason)) <= 2000)
);
alter table public.attendance_movements enable row level security;
CREATE INDEX attendance_movements_by_direction ON public.attendance_movements USING btree (tenant_id, direction, recorded_at, nonce);
CREATE INDEX attendance_movements_by_instance ON public.attendance_movements USING btree (instance_id, recorded_at, nonce);
CREATE INDEX attendance_movements_by_tenant ON public.attendance_movements USING btree (tenant_id, recorded_at, nonce);
CREATE INDEX attendance_movements_timeline ON public.attendance_movements USING btree (participant_id, recorded_at, nonce);
create policy "API callers read the movements of their tenant" on public.attendance_movements for select to camp_api
  using ((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)));
create policy "Reporting roles read the movements of their tenant" on public.attendance_movements for select to camp_reporting
  using ((tenant_id = ( SELECT private.reporting_tenant_id() AS reporting_tenant_id)));
create policy "Supabase users read the movements of their tenant" on public.attendance_movements for select to authenticated
  using ((tenant_id = ( SELECT private.supabase_user_tenant_id() AS supabase_user_tenant_id)));
CREATE TRIGGER attendance_movements_audit_insert AFTER INSERT ON public.attendance_movements REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION private.audit_changes('movement');
CREATE TRIGGER attendance_movements_audit_update AFTER UPDATE ON public.attendance_movements REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION private.audit_changes('movement');
CREATE TRIGGER attendance_movements_hold_live_participant BEFORE INSERT OR UPDATE ON public.attendance_movements FOR EACH ROW EXECUTE FUNCTION private.hold_live_participant();
grant select (id, instance_id, participant_id, direction, recorded_at, received_at, recorded_by, location, pickup_contact_id, override_reason, conflict_reason, conflict) on table public.attendance_movements to authenticated;
grant select (id, instance_id, participant_id, direction, recorded_at, received_at, recorded_by, location, pickup_contact_id, override_reason, conflict_reason, conflict) on table public.attendance_movements to camp_reporting;
grant select on table public.attendance_movements to camp_api;
comment on table public.attendance_movements is 'Check-ins and check-outs, append-only (only erasure removes rows): the device''s recorded_at orders them, conflict_reason says when one contradicts its predecessor. Written only through private.attendance_record.';

create table public.attendance_present_codes (
  participant_id uuid not null,
  tenant_id uuid not null,
  instance_id uuid not null,
  movement_id uuid not null,
  code text not null,
  constraint attendance_present_codes_pkey PRIMARY KEY (participant_id),
  constraint attendance_present_codes_code_key UNIQUE (instance_id, code),
  constraint attendance_present_codes_movement_id_fkey FOREIGN KEY (movement_id) REFERENCES public.attendance_movements(id) ON DELETE CASCADE,
  constraint attendance_present_codes_participant_id_fkey FOREIGN KEY (tenant_id, participant_id) REFERENCES public.participants(tenant_id, id)
);
alter table public.attendance_present_codes enable row level security;
CREATE INDEX attendance_present_codes_tenant_id ON public.attendance_present_codes USING btree (tenant_id);
CREATE TRIGGER attendance_present_codes_hold_live_participant BEFORE INSERT OR UPDATE ON public.attendance_present_codes FOR EACH ROW EXECUTE FUNCTION private.hold_live_participant();
comment on table public.attendance_present_codes is 'The security code of each present participant''s check-in, unique within the instance; maintained by the attendance doors, read by nobody else.';

create table public.audit_events (
  id bigint generated always as identity not null,
  tenant_id uuid not null,
  occurred_at timestamp with time zone default now() not null,
  actor_user_id uuid,
  actor_email text,
  actor_via text not null,
  actor_key_id uuid,
  request_id text,
  action text not null,
  resource_type text not null,
  resource_id uuid not null,
  changes jsonb default '{}'::jsonb not null,
  client_request_id text default (private.audit_actor() ->> 'client_request_id'::text),
  capacity_override jsonb,
  constraint audit_events_pkey PRIMARY KEY (id),
  constraint audit_events_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id) ON DELETE CASCADE,
  constraint audit_events_action_check CHECK (action = ANY (ARRAY['create'::text, 'update'::text, 'delete'::text, 'erase'::text, 'read'::text])),
  constraint audit_events_actor_via_check CHECK (actor_via = ANY (ARRAY['api_key'::text, 'bearer'::text, 'operator'::text]))
);
alter table public.audit_events enable row level security;
CREATE INDEX audit_events_resource ON public.audit_events USING btree (tenant_id, resource_type, resource_id, occurred_at DESC);
CREATE INDEX audit_events_tenant_time ON public.audit_events USING btree (tenant_id, occurred_at DESC, id DESC);
create policy "API callers read the audit trail of their tenant" on public.audit_events for select to camp_api
  using (((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)) AND ((NOT private.is_care_resource(resource_type)) OR (( SELECT private.care_access() AS care_access) = ANY (ARRAY['read'::text, 'write'::text]))) AND ((resource_type <> 'safeguarding_incident'::text) OR ( SELECT private.is_safeguarding_lead() AS is_safeguarding_lead))));
create policy "Reporting roles read their tenant's audit trail" on public.audit_events for select to camp_reporting
  using (((tenant_id = ( SELECT private.reporting_tenant_id() AS reporting_tenant_id)) AND ((NOT private.is_care_resource(resource_type)) OR ( SELECT private.reporting_care_granted() AS reporting_care_granted)) AND (resource_type <> 'safeguarding_incident'::text)));
CREATE TRIGGER audit_events_append_only BEFORE DELETE OR UPDATE ON public.audit_events FOR EACH ROW EXECUTE FUNCTION private.guard_audit_events();
CREATE TRIGGER audit_events_derive_events AFTER INSERT ON public.audit_events REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION private.derive_events();
CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON public.audit_events FOR EACH STATEMENT EXECUTE FUNCTION private.guard_audit_events();
CREATE TRIGGER audit_events_note_capacity_override BEFORE INSERT ON public.audit_events FOR EACH ROW WHEN (current_setting('camp.room_capacity_override'::text, true) = 'on'::text AND new.resource_type = 'participant'::text) EXECUTE FUNCTION private.note_capacity_override();
grant select (id, occurred_at, actor_user_id, actor_email, actor_via, actor_key_id, request_id, action, resource_type, resource_id, changes, client_request_id, capacity_override) on table public.audit_events to camp_reporting;
comment on column public.audit_events.client_request_id is 'The X-Request-Id the client sent, when it was a short safe token; request_id is the server''s own id.';
comment on column public.audit_events.capacity_override is 'Set when the change placed the participant in a room over its capacity under an admin''s override: {room_id, room_number, capacity, occupancy} as the write left it; the actor is who overrode.';
grant select on table public.audit_events to camp_api;
comment on table public.audit_events is 'Who changed what, when: one event per created, updated, deleted or erased record, written by triggers in the writing transaction. Append-only: only private.prune_audit_events and private.erase_participant may change it.';

create table public.blocks (
  id uuid default gen_random_uuid() not null,
  tenant_id uuid default private.request_tenant_id() not null,
  instance_id uuid not null,
  name text not null,
  description text,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null,
  deleted_at timestamp with time zone,
  constraint blocks_pkey PRIMARY KEY (id),
  constraint blocks_instance_id_id_key UNIQUE (instance_id, id),
  constraint blocks_instance_id_fkey FOREIGN KEY (tenant_id, instance_id) REFERENCES public.instances(tenant_id, id),
  constraint blocks_description_check CHECK (char_length(description) <= 2000),
  constraint blocks_name_check CHECK (char_length(btrim(name)) >= 1 AND char_length(btrim(name)) <= 200)
);
alter table public.blocks enable row level security;
CREATE INDEX blocks_by_instance ON public.blocks USING btree (instance_id, created_at, id) WHERE (deleted_at IS NULL);
CREATE INDEX blocks_list ON public.blocks USING btree (tenant_id, created_at, id) WHERE (deleted_at IS NULL);
CREATE UNIQUE INDEX blocks_name_key ON public.blocks USING btree (instance_id, lower(btrim(name))) WHERE (deleted_at IS NULL);
create policy "API callers manage the blocks of their tenant" on public.blocks for all to camp_api
  using ((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)))
  with check ((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)));
create policy "Reporting roles read the blocks of their tenant" on public.blocks for select to camp_reporting
  using ((tenant_id = ( SELECT private.reporting_tenant_id() AS reporting_tenant_id)));
create policy "Supabase users read the blocks of their tenant" on public.blocks for select to authenticated
  using ((tenant_id = ( SELECT private.supabase_user_tenant_id() AS supabase_user_tenant_id)));
CREATE TRIGGER blocks_audit_insert AFTER INSERT ON public.blocks REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION private.audit_changes('block');
CREATE TRIGGER blocks_audit_update AFTER UPDATE ON public.blocks REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION private.audit_changes('block');
CREATE TRIGGER blocks_count_delete AFTER DELETE ON public.blocks REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION private.count_structure_rows('blocks', 'r.instance_id', '''''');
CREATE TRIGGER blocks_count_insert AFTER INSERT ON public.blocks REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION private.count_structure_rows('blocks', 'r.instance_id', '''''');
CREATE TRIGGER blocks_count_move AFTER UPDATE ON public.blocks FOR EACH ROW WHEN ((new.deleted_at IS NULL) <> (old.deleted_at IS NULL)) EXECUTE FUNCTION private.count_structure_rows('blocks', 'r.instance_id', '''''');
CREATE TRIGGER blocks_count_truncate AFTER TRUNCATE ON public.blocks FOR EACH STATEMENT EXECUTE FUNCTION private.reset_list_counts('blocks');
CREATE TRIGGER blocks_freeze_instance_id BEFORE UPDATE ON public.blocks FOR EACH ROW WHEN (new.instance_id IS DISTINCT FROM old.instance_id) EXECUTE FUNCTION private.refuse_instance_change();
CREATE TRIGGER blocks_guard_write BEFORE INSERT OR UPDATE ON public.blocks FOR EACH ROW EXECUTE FUNCTION private.guard_block_write();
CREATE TRIGGER blocks_touch_updated_at BEFORE UPDATE ON public.blocks FOR EACH ROW EXECUTE FUNCTION private.touch_updated_at();
grant select (id, instance_id, name, deleted_at) on table public.blocks to authenticated;
grant select (id, instance_id, name, deleted_at) on table public.blocks to camp_reporting;
grant select, insert, update on table public.blocks to camp_api;

create table public.events (
  tenant_id uuid not null,
  xact_id xid8 not null,
  id bigint not null,
  type text not null,
  resource_id uuid not null,
  occurred_at timestamp with time zone not null,
  audience text,
  data jsonb,
  constraint events_pkey PRIMARY KEY (tenant_id, xact_id, id),
  constraint events_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id) ON DELETE CASCADE,
  constraint events_audience_check CHECK (audience = 'safeguarding'::text)
);
alter table public.events enable row level security;
CREATE INDEX events_occurred_at ON public.events USING brin (occurred_at);
create policy "API callers read the events of their tenant" on public.events for select to camp_api
  using (((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)) AND ((NOT private.is_care_event(type)) OR (( SELECT private.care_access() AS care_access) = ANY (ARRAY['read'::text, 'write'::text])))));
create policy "Only safeguarding leads read safeguarding events" on public.events as restrictive for select to camp_api
  using (((audience IS NULL) OR ( SELECT private.is_safeguarding_lead() AS is_safeguarding_lead)));
comment on column public.events.audience is 'null: the tenant''s callers (care events: those with care access); safeguarding: safeguarding leads only (a safeguarding incident''s alert), never sent to a webhook.';
comment on column public.events.data is 'Figures the event carries besides the record''s id (roll_call.closed: {counts}); never a name or a value of a person. Null for most types.';
grant select on table public.events to camp_api;
comment on table public.events is 'The change feed: one row per created, updated, deleted or erased camp record, derived from audit_events in the writing transaction; ids and type only. Kept 30 days (private.prune_events).';

create table public.idempotency_keys (
  tenant_id uuid default private.request_tenant_id() not null,
  user_id uuid not null,
  key text not null,
  request_hash text,
  status integer not null,
  headers jsonb default '{}'::jsonb not null,
  body text,
  created_at timestamp with time zone default now() not null,
  expires_at timestamp with time zone default (now() + '24:00:00'::interval) not null,
  withheld text,
  requires text[] default '{}'::text[] not null,
  constraint idempotency_keys_pkey PRIMARY KEY (tenant_id, user_id, key),
  constraint idempotency_keys_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id) ON DELETE CASCADE,
  constraint idempotency_keys_user_id_fkey FOREIGN KEY (tenant_id, user_id) REFERENCES public.users(tenant_id, id) ON DELETE CASCADE,
  constraint idempotency_keys_hash_check CHECK (request_hash IS NOT NULL OR withheld = 'erased'::text),
  constraint idempotency_keys_key_check CHECK (key ~ '^[!-~]{1,255}$'::text),
  constraint idempotency_keys_requires_check CHECK (requires <@ ARRAY['admin'::text, 'care'::text]),
  constraint idempotency_keys_withheld_body CHECK ((withheld IS NULL) = (body IS NOT NULL)),
  constraint idempotency_keys_withheld_check CHECK (withheld = ANY (ARRAY['secret'::text, 'erased'::text]))
);
alter table public.idempotency_keys enable row level security;
CREATE INDEX idempotency_keys_expires_at ON public.idempotency_keys USING btree (tenant_id, expires_at);
CREATE INDEX idempotency_keys_expiry ON public.idempotency_keys USING btree (expires_at);
create policy "API callers keep the idempotency keys of their tenant" on public.idempotency_keys for all to camp_api
  using ((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)))
  with check ((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)));
comment on column public.idempotency_keys.withheld is 'Why the answer is not kept: secret (it held an API key or signing secret, shown once), erased (it named a participant since erased). Null when body holds the answer.';
comment on column public.idempotency_keys.requires is 'The rights the first request relied on beyond write scope (admin, care); a replay is given only to a caller who still holds them.';
grant select, insert, update, delete on table public.idempotency_keys to camp_api;
comment on table public.idempotency_keys is 'The stored answers of POSTs sent with an Idempotency-Key, per tenant and user, for 24 hours (removed by private.prune_idempotency_keys in the hourly housekeeping, and a few at a time by later keyed requests of the tenant). Never a secret (withheld = secret), never an erased participant (withheld = erased).';

create table public.incident_amendments (
  id uuid default gen_random_uuid() not null,
  tenant_id uuid default private.request_tenant_id() not null,
  incident_id uuid not null,
  changes jsonb not null,
  reason text not null,
  recorded_by uuid,
  recorded_by_email text,
  recorded_at timestamp with time zone default clock_timestamp() not null,
  constraint incident_amendments_pkey PRIMARY KEY (id),
  constraint incident_amendments_incident_id_fkey FOREIGN KEY (tenant_id, incident_id) REFERENCES public.incidents(tenant_id, id),
  constraint incident_amendments_changes_check CHECK (jsonb_typeof(changes) = 'object'::text AND changes <> '{}'::jsonb),
  constraint incident_amendments_reason_check CHECK (char_length(btrim(reason)) >= 1 AND char_length(btrim(reason)) <= 2000)
);
alter table public.incident_amendments enable row level security;
CREATE INDEX incident_amendments_by_incident ON public.incident_amendments USING btree (incident_id, recorded_at, id);
create policy "Care access reads the amendments of incidents it reads" on public.incident_amendments for select to camp_care
  using (((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)) AND (EXISTS ( SELECT
   FROM public.incidents i
  WHERE (i.id = incident_amendments.incident_id)))));
create policy "Care write access amends incidents it reads" on public.incident_amendments for insert to camp_care
  with check (((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)) AND (( SELECT private.care_access() AS care_access) = 'write'::text) AND (EXISTS ( SELECT
   FROM public.incidents i
  WHERE (i.id = incident_amendments.incident_id)))));
create policy "Reporting roles granted care read incident amendments" on public.incident_amendments for select to camp_reporting
  using (((tenant_id = ( SELECT private.reporting_tenant_id() AS reporting_tenant_id)) AND ( SELECT private.reporting_care() AS reporting_care) AND (EXISTS ( SELECT
   FROM public.incidents i
  WHERE (i.id = incident_amendments.incident_id)))));
CREATE TRIGGER incident_amendments_append_only BEFORE DELETE OR UPDATE ON public.incident_amendments FOR EACH ROW EXECUTE FUNCTION private.guard_append_only();
CREATE TRIGGER incident_amendments_no_truncate BEFORE TRUNCATE ON public.incident_amendments FOR EACH STATEMENT EXECUTE FUNCTION private.guard_append_only();
grant insert (incident_id, changes, reason, recorded_by, recorded_by_email) on table public.incident_amendments to camp_care;
grant select (id, incident_id, changes, reason, recorded_by, recorded_by_email, recorded_at) on table public.incident_amendments to camp_reporting_care;
grant select on table public.incident_amendments to camp_care;
comment on table public.incident_amendments is 'Amendments of incidents, append-only: {field: new value} with a reason; closing (status closed) is one.';

create table public.incident_participants (
  tenant_id uuid default private.request_tenant_id() not null,
  incident_id uuid not null,
  participant_id uuid not null,
  constraint incident_participants_pkey PRIMARY KEY (incident_id, participant_id),
  constraint incident_participants_incident_id_fkey FOREIGN KEY (tenant_id, incident_id) REFERENCES public.incidents(tenant_id, id),
  constraint incident_participants_participant_id_fkey FOREIGN KEY (tenant_id, participant_id) REFERENCES public.participants(tenant_id, id)
);
alter table public.incident_participants enable row level security;
CREATE INDEX incident_participants_by_participant ON public.incident_participants USING btree (participant_id);
create policy "Care access reads the participants of incidents it reads" on public.incident_participants for select to camp_care
  using (((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)) AND (EXISTS ( SELECT
   FROM public.incidents i
  WHERE (i.id = incident_participants.incident_id)))));
create policy "Care write access names an incident's participants" on public.incident_participants for insert to camp_care
  with check (((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)) AND (( SELECT private.care_access() AS care_access) = 'write'::text)));
create policy "Reporting roles granted care read incident participants" on public.incident_participants for select to camp_reporting
  using (((tenant_id = ( SELECT private.reporting_tenant_id() AS reporting_tenant_id)) AND ( SELECT private.reporting_care() AS reporting_care) AND (EXISTS ( SELECT
   FROM public.incidents i
  WHERE (i.id = incident_participants.incident_id)))));
CREATE TRIGGER incident_participants_append_only BEFORE DELETE OR UPDATE ON public.incident_participants FOR EACH ROW EXECUTE FUNCTION private.guard_append_only();
CREATE TRIGGER incident_participants_hold_live_participant BEFORE INSERT ON public.incident_participants FOR EACH ROW EXECUTE FUNCTION private.hold_live_participant();
CREATE TRIGGER incident_participants_no_truncate BEFORE TRUNCATE ON public.incident_participants FOR EACH STATEMENT EXECUTE FUNCTION private.guard_append_only();
grant insert (incident_id, participant_id) on table public.incident_participants to camp_care;
grant select (incident_id, participant_id) on table public.incident_participants to camp_reporting_care;
grant select on table public.incident_participants to camp_care;
comment on table public.incident_participants is 'The participants an incident names, fixed at reporting; erasure removes a participant''s links.';

create table public.incidents (
  id uuid default gen_random_uuid() not null,
  tenant_id uuid default private.request_tenant_id() not null,
  instance_id uuid not null,
  occurred_at timestamp with time zone not null,
  location text not null,
  category text not null,
  severity text not null,
  description text not null,
  actions_taken text not null,
  guardian_notified_at timestamp with time zone,
  guardian_notified_by text,
  reported_by uuid,
  reported_by_email text,
  recorded_at timestamp with time zone default clock_timestamp() not null,
  retained_until timestamp with time zone,
  constraint incidents_pkey PRIMARY KEY (id),
  constraint incidents_tenant_id_id_key UNIQUE (tenant_id, id),
  constraint incidents_instance_id_fkey FOREIGN KEY (tenant_id, instance_id) REFERENCES public.instances(tenant_id, id),
  constraint incidents_actions_taken_check CHECK (char_length(actions_taken) <= 10000),
  constraint incidents_category_check CHECK (category = ANY (ARRAY['injury'::text, 'illness'::text, 'behaviour'::text, 'safeguarding'::text, 'near_miss'::text, 'other'::text])),
  constraint incidents_description_check CHECK (char_length(btrim(description)) >= 1 AND char_length(btrim(description)) <= 10000),
  constraint incidents_guardian_notified_by_check CHECK (char_length(guardian_notified_by) <= 200),
  constraint incidents_location_check CHECK (char_length(btrim(location)) >= 1 AND char_length(btrim(location)) <= 200),
  constraint incidents_retained_until_check CHECK (retained_until IS NULL OR retained_until > recorded_at),
  constraint incidents_severity_check CHECK (severity = ANY (ARRAY['minor'::text, 'moderate'::text, 'serious'::text]))
);
alter table public.incidents enable row level security;
CREATE INDEX incidents_by_instance ON public.incidents USING btree (instance_id, recorded_at DESC);
CREATE INDEX incidents_by_tenant ON public.incidents USING btree (tenant_id, recorded_at DESC, id DESC);
CREATE INDEX incidents_recent ON public.incidents USING btree (recorded_at);
CREATE INDEX incidents_retained ON public.incidents USING btree (retained_until) WHERE (retained_until IS NOT NULL);
create policy "Care access reads incidents, leads safeguarding ones" on public.incidents for select to camp_care
  using (((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)) AND (( SELECT private.care_access() AS care_access) = ANY (ARRAY['read'::text, 'write'::text])) AND ((category <> 'safeguarding'::text) OR ( SELECT private.is_safeguarding_lead() AS is_safeguarding_lead))));
create policy "Care write access reports incidents" on public.incidents for insert to camp_care
  with check (((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)) AND (( SELECT private.care_access() AS care_access) = 'write'::text)));
create policy "Reporting roles granted care read incidents" on public.incidents for select to camp_reporting
  using (((tenant_id = ( SELECT private.reporting_tenant_id() AS reporting_tenant_id)) AND ( SELECT private.reporting_care() AS reporting_care) AND (category <> 'safeguarding'::text)));
CREATE TRIGGER incidents_append_only BEFORE DELETE OR UPDATE ON public.incidents FOR EACH ROW EXECUTE FUNCTION private.guard_append_only();
CREATE TRIGGER incidents_no_truncate BEFORE TRUNCATE ON public.incidents FOR EACH STATEMENT EXECUTE FUNCTION private.guard_append_only();
grant insert (id, instance_id, occurred_at, location, category, severity, description, actions_taken, guardian_notified_at, guardian_notified_by, reported_by, reported_by_email, recorded_at) on table public.incidents to camp_care;
grant select (id, instance_id, occurred_at, location, category, severity, description, actions_taken, guardian_notified_at, guardian_notified_by, reported_by, reported_by_email, recorded_at) on table public.incidents to camp_reporting_care;
grant select on table public.incidents to camp_care;
comment on table public.incidents is 'Incidents as first reported (injury, illness, behaviour, safeguarding, near miss, other), append-only: changes are incident_amendments. Care data, safeguarding ones for leads only: reached only through private.incident*.';

create table public.instances (
  id uuid default gen_random_uuid() not null,
  tenant_id uuid default private.request_tenant_id() not null,
  name text not null,
  description text,
  status text default 'upcoming'::text not null,
  start_date date,
  end_date date,
  location text,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null,
  deleted_at timestamp with time zone,
  time_zone text default 'UTC'::text not null,
  constraint instances_pkey PRIMARY KEY (id),
  constraint instances_tenant_id_id_key UNIQUE (tenant_id, id),
  constraint instances_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id),
  constraint instances_description_check CHECK (char_length(description) <= 2000),
  constraint instances_end_date_check CHECK (end_date >= start_date),
  constraint instances_location_check CHECK (char_length(location) <= 200),
  constraint instances_name_check CHECK (char_length(btrim(name)) >= 1 AND char_length(btrim(name)) <= 200),
  constraint instances_status_check CHECK (status = ANY (ARRAY['upcoming'::text, 'active'::text, 'completed'::text, 'archived'::text]))
);
alter table public.instances enable row level security;
CREATE INDEX instances_list ON public.instances USING btree (tenant_id, created_at, id) WHERE (deleted_at IS NULL);
create policy "API callers manage the instances of their tenant" on public.instances for all to camp_api
  using ((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)))
  with check ((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)));
create policy "Reporting roles read the instances of their tenant" on public.instances for select to camp_reporting
  using ((tenant_id = ( SELECT private.reporting_tenant_id() AS reporting_tenant_id)));
create policy "Supabase users read the instances of their tenant" on public.instances for select to authenticated
  using ((tenant_id = ( SELECT private.supabase_user_tenant_id() AS supabase_user_tenant_id)));
CREATE TRIGGER instances_audit_insert AFTER INSERT ON public.instances REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION private.audit_changes('instance');
CREATE TRIGGER instances_audit_update AFTER UPDATE ON public.instances REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION private.audit_changes('instance');
CREATE TRIGGER instances_count_delete AFTER DELETE ON public.instances REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION private.count_structure_rows('instances', '''00000000-0000-0000-0000-000000000000''::uuid', 'r.status');
CREATE TRIGGER instances_count_insert AFTER INSERT ON public.instances REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION private.count_structure_rows('instances', '''00000000-0000-0000-0000-000000000000''::uuid', 'r.status');
CREATE TRIGGER instances_count_move AFTER UPDATE ON public.instances FOR EACH ROW WHEN ((new.deleted_at IS NULL) <> (old.deleted_at IS NULL) OR new.status IS DISTINCT FROM old.status) EXECUTE FUNCTION private.count_structure_rows('instances', '''00000000-0000-0000-0000-000000000000''::uuid', 'r.status');
CREATE TRIGGER instances_count_truncate AFTER TRUNCATE ON public.instances FOR EACH STATEMENT EXECUTE FUNCTION private.reset_list_counts('instances');
CREATE TRIGGER instances_guard_time_zone BEFORE INSERT OR UPDATE OF time_zone ON public.instances FOR EACH ROW EXECUTE FUNCTION private.guard_instance_time_zone();
CREATE TRIGGER instances_guard_write BEFORE UPDATE ON public.instances FOR EACH ROW EXECUTE FUNCTION private.guard_instance_write();
CREATE TRIGGER instances_touch_updated_at BEFORE UPDATE ON public.instances FOR EACH ROW EXECUTE FUNCTION private.touch_updated_at();
grant select (id, name, status, start_date, end_date, deleted_at) on table public.instances to authenticated;
grant select (id, name, status, start_date, end_date, deleted_at) on table public.instances to camp_reporting;
comment on column public.instances.time_zone is 'IANA time zone of the camp (default UTC): medication times are local times there.';
grant select, insert, update on table public.instances to camp_api;

create table public.medication_administrations (
  id uuid default gen_random_uuid() not null,
  tenant_id uuid default private.request_tenant_id() not null,
  participant_id uuid,
  medication_id uuid,
  medication_name text not null,
  outcome text not null,
  administered_at timestamp with time zone not null,
  due_at timestamp with time zone,
  dose_given text,
  notes text,
  nonce text,
  amends uuid,
  reason text,
  override_reason text,
  recorded_by uuid,
  recorded_by_email text,
  recorded_at timestamp with time zone default clock_timestamp() not null,
  retained_until timestamp with time zone,
  constraint medication_administrations_pkey PRIMARY KEY (id),
  constraint medication_administrations_nonce_key UNIQUE (tenant_id, nonce),
  constraint medication_administrations_tenant_id_id_key UNIQUE (tenant_id, id),
  constraint medication_administrations_amends_fkey FOREIGN KEY (tenant_id, amends) REFERENCES public.medication_administrations(tenant_id, id),
  constraint medication_administrations_medication_id_fkey FOREIGN KEY (tenant_id, medication_id) REFERENCES public.participant_medications(tenant_id, id),
  constraint medication_administrations_participant_id_fkey FOREIGN KEY (tenant_id, participant_id) REFERENCES public.participants(tenant_id, id),
  constraint medication_administrations_amends_reason_check CHECK ((amends IS NULL) = (reason IS NULL)),
  constraint medication_administrations_dose_given_check CHECK (char_length(dose_given) <= 200),
  constraint medication_administrations_medication_name_check CHECK (char_length(medication_name) <= 200),
  constraint medication_administrations_nonce_check CHECK (char_length(nonce) >= 1 AND char_length(nonce) <= 200),
  constraint medication_administrations_notes_check CHECK (char_length(notes) <= 2000),
  constraint medication_administrations_outcome_check CHECK (outcome = ANY (ARRAY['given'::text, 'refused'::text, 'missed'::text, 'held'::text, 'unavailable'::text])),
  constraint medication_administrations_override_reason_check CHECK (char_length(btrim(override_reason)) >= 1 AND char_length(btrim(override_reason)) <= 2000),
  constraint medication_administrations_reason_check CHECK (char_length(btrim(reason)) >= 1 AND char_length(btrim(reason)) <= 2000),
  constraint medication_administrations_retained_until_check CHECK ((participant_id IS NULL) = (retained_until IS NOT NULL))
);
alter table public.medication_administrations enable row level security;
CREATE INDEX medication_administrations_amends ON public.medication_administrations USING btree (amends) WHERE (amends IS NOT NULL);
CREATE INDEX medication_administrations_by_due ON public.medication_administrations USING btree (tenant_id, due_at) WHERE (due_at IS NOT NULL);
CREATE INDEX medication_administrations_by_medication ON public.medication_administrations USING btree (medication_id, administered_at);
CREATE INDEX medication_administrations_by_participant ON public.medication_administrations USING btree (participant_id, recorded_at, id);
CREATE INDEX medication_administrations_retained ON public.medication_administrations USING btree (retained_until) WHERE (retained_until IS NOT NULL);
create policy "Care functions chart doses with care write access" on public.medication_administrations for insert to camp_care
  with check (((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)) AND (( SELECT private.care_access() AS care_access) = 'write'::text)));
create policy "Care functions read the administration record with care access" on public.medication_administrations for select to camp_care
  using (((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)) AND (( SELECT private.care_access() AS care_access) = ANY (ARRAY['read'::text, 'write'::text]))));
create policy "Reporting roles granted care read the administration record" on public.medication_administrations for select to camp_reporting
  using (((tenant_id = ( SELECT private.reporting_tenant_id() AS reporting_tenant_id)) AND ( SELECT private.reporting_care() AS reporting_care)));
CREATE TRIGGER medication_administrations_append_only BEFORE DELETE OR UPDATE ON public.medication_administrations FOR EACH ROW EXECUTE FUNCTION private.guard_append_only();
CREATE TRIGGER medication_administrations_audit_insert AFTER INSERT ON public.medication_administrations REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION private.audit_changes('medication_administration');
CREATE TRIGGER medication_administrations_hold_live_participant BEFORE INSERT ON public.medication_administrations FOR EACH ROW EXECUTE FUNCTION private.hold_live_participant();
CREATE TRIGGER medication_administrations_no_truncate BEFORE TRUNCATE ON public.medication_administrations FOR EACH STATEMENT EXECUTE FUNCTION private.guard_append_only();
grant insert (participant_id, medication_id, medication_name, outcome, administered_at, due_at, dose_given, notes, nonce, amends, reason, override_reason, recorded_by, recorded_by_email) on table public.medication_administrations to camp_care;
grant select (id, participant_id, medication_id, medication_name, outcome, administered_at, due_at, dose_given, notes, amends, reason, override_reason, recorded_by, recorded_by_email, recorded_at, retained_until) on table public.medication_administrations to camp_reporting_care;
grant select on table public.medication_administrations to camp_care;
comment on table public.medication_administrations is 'The medication administration record: every dose charted (given, refused, missed, held, unavailable), append-only; a correction is a new entry naming what it amends. Care data: reached only through private.medication_administration*.';

create table public.participant_care (
  id uuid not null,
  tenant_id uuid default private.request_tenant_id() not null,
  allergies jsonb default '[]'::jsonb not null,
  dietary_requirements text,
  medical_conditions text,
  care_notes text,
  severe_allergy boolean generated always as (jsonb_path_exists(allergies, '$[*]?(@."severity" == "severe" || @."severity" == "anaphylactic")'::jsonpath)) stored not null,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null,
  constraint participant_care_pkey PRIMARY KEY (id),
  constraint participant_care_id_fkey FOREIGN KEY (tenant_id, id) REFERENCES public.participants(tenant_id, id),
  constraint participant_care_allergies_check CHECK (jsonb_typeof(allergies) = 'array'::text AND jsonb_array_length(allergies) <= 50),
  constraint participant_care_care_notes_check CHECK (char_length(care_notes) <= 2000),
  constraint participant_care_dietary_requirements_check CHECK (char_length(dietary_requirements) <= 2000),
  constraint participant_care_medical_conditions_check CHECK (char_length(medical_conditions) <= 2000)
);
alter table public.participant_care enable row level security;
CREATE INDEX participant_care_severe ON public.participant_care USING btree (tenant_id) INCLUDE (id) WHERE severe_allergy;
create policy "Care functions add care records with care write access" on public.participant_care for insert to camp_care
  with check (((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)) AND (( SELECT private.care_access() AS care_access) = 'write'::text)));
create policy "Care functions change care records with care write access" on public.participant_care for update to camp_care
  using (((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)) AND (( SELECT private.care_access() AS care_access) = 'write'::text)))
  with check (((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)) AND (( SELECT private.care_access() AS care_access) = 'write'::text)));
create policy "Care functions read care records with care access" on public.participant_care for select to camp_care
  using (((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)) AND (( SELECT private.care_access() AS care_access) = ANY (ARRAY['read'::text, 'write'::text]))));
create policy "Reporting roles granted care read their tenant's care records" on public.participant_care for select to camp_reporting
  using (((tenant_id = ( SELECT private.reporting_tenant_id() AS reporting_tenant_id)) AND ( SELECT private.reporting_care() AS reporting_care)));
CREATE TRIGGER participant_care_audit_insert AFTER INSERT ON public.participant_care REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION private.audit_changes('care_record');
CREATE TRIGGER participant_care_audit_update AFTER UPDATE ON public.participant_care REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION private.audit_changes('care_record');
CREATE TRIGGER participant_care_hold_live_participant BEFORE INSERT OR UPDATE ON public.participant_care FOR EACH ROW EXECUTE FUNCTION private.hold_live_participant('id');
CREATE TRIGGER participant_care_touch_updated_at BEFORE UPDATE ON public.participant_care FOR EACH ROW EXECUTE FUNCTION private.touch_updated_at();
grant insert (id, allergies, dietary_requirements, medical_conditions, care_notes), update (allergies, dietary_requirements, medical_conditions, care_notes) on table public.participant_care to camp_care;
grant select (id, allergies, dietary_requirements, medical_conditions, care_notes, severe_allergy, created_at, updated_at) on table public.participant_care to camp_reporting_care;
grant select on table public.participant_care to camp_care;
comment on table public.participant_care is 'Allergies, dietary needs, medical conditions, medications and care notes of a participant (id = the participant''s id). Care data: reached only through private.care_record*.';

create table public.participant_consents (
  id uuid default gen_random_uuid() not null,
  tenant_id uuid default private.request_tenant_id() not null,
  participant_id uuid not null,
  seq bigint generated always as identity not null,
  kind text not null,
  status text not null,
  note text,
  recorded_by uuid,
  recorded_by_email text,
  recorded_at timestamp with time zone default clock_timestamp() not null,
  constraint participant_consents_pkey PRIMARY KEY (id),
  constraint participant_consents_participant_id_fkey FOREIGN KEY (tenant_id, participant_id) REFERENCES public.participants(tenant_id, id),
  constraint participant_consents_kind_check CHECK (kind = ANY (ARRAY['photo'::text, 'emergency_medical_treatment'::text])),
  constraint participant_consents_note_check CHECK (char_length(note) <= 2000),
  constraint participant_consents_status_check CHECK (status = ANY (ARRAY['granted'::text, 'refused'::text, 'unknown'::text]))
);
alter table public.participant_consents enable row level security;
CREATE INDEX participant_consents_by_participant ON public.participant_consents USING btree (participant_id, kind, seq DESC);
CREATE INDEX participant_consents_tenant_id ON public.participant_consents USING btree (tenant_id);
create policy "Care functions read consents with care access" on public.participant_consents for select to camp_care
  using (((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)) AND (( SELECT private.care_access() AS care_access) = ANY (ARRAY['read'::text, 'write'::text]))));
create policy "Care functions record consents with care write access" on public.participant_consents for insert to camp_care
  with check (((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)) AND (( SELECT private.care_access() AS care_access) = 'write'::text)));
create policy "Reporting roles granted care read their tenant's consents" on public.participant_consents for select to camp_reporting
  using (((tenant_id = ( SELECT private.reporting_tenant_id() AS reporting_tenant_id)) AND ( SELECT private.reporting_care() AS reporting_care)));
CREATE TRIGGER participant_consents_audit_insert AFTER INSERT ON public.participant_consents REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION private.audit_changes('consent');
CREATE TRIGGER participant_consents_audit_update AFTER UPDATE ON public.participant_consents REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION private.audit_changes('consent');
CREATE TRIGGER participant_consents_hold_live_participant BEFORE INSERT OR UPDATE ON public.participant_consents FOR EACH ROW EXECUTE FUNCTION private.hold_live_participant();
CREATE TRIGGER participant_consents_withdraw_photo AFTER INSERT ON public.participant_consents FOR EACH ROW WHEN (new.kind = 'photo'::text AND new.status = 'refused'::text) EXECUTE FUNCTION private.withdraw_refused_photo();
grant insert (participant_id, kind, status, note, recorded_by, recorded_by_email) on table public.participant_consents to camp_care;
grant select (id, participant_id, seq, kind, status, note, recorded_by, recorded_by_email, recorded_at) on table public.participant_consents to camp_reporting_care;
grant select on table public.participant_consents to camp_care;
comment on table public.participant_consents is 'Consent answers (photo, emergency_medical_treatment) as a history, with who recorded each and when. Care data: reached only through private.care_consents*.';

create table public.participant_contacts (
  id uuid default gen_random_uuid() not null,
  tenant_id uuid default private.request_tenant_id() not null,
  participant_id uuid not null,
  name text not null,
  relationship text,
  phone text,
  phone_alt text,
  email text,
  emergency boolean default false not null,
  emergency_order integer,
  authorised_pickup boolean default false not null,
  notes text,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null,
  deleted_at timestamp with time zone,
  constraint participant_contacts_pkey PRIMARY KEY (id),
  constraint participant_contacts_participant_id_fkey FOREIGN KEY (tenant_id, participant_id) REFERENCES public.participants(tenant_id, id),
  constraint participant_contacts_email_check CHECK (email ~ '^[^@[:space:]]+@[^@[:space:]]+$'::text AND char_length(email) <= 320),
  constraint participant_contacts_emergency_order_check CHECK (emergency_order >= 1 AND emergency_order <= 99),
  constraint participant_contacts_emergency_order_only_check CHECK (emergency OR emergency_order IS NULL),
  constraint participant_contacts_emergency_phone_check CHECK (NOT emergency OR phone IS NOT NULL),
  constraint participant_contacts_name_check CHECK (char_length(btrim(name)) >= 1 AND char_length(btrim(name)) <= 200),
  constraint participant_contacts_notes_check CHECK (char_length(notes) <= 2000),
  constraint participant_contacts_phone_alt_check CHECK (phone_alt ~ '^\+[1-9][0-9]{3,14}$'::text),
  constraint participant_contacts_phone_check CHECK (phone ~ '^\+[1-9][0-9]{3,14}$'::text),
  constraint participant_contacts_relationship_check CHECK (char_length(relationship) <= 200)
);
alter table public.participant_contacts enable row level security;
CREATE INDEX participant_contacts_by_participant ON public.participant_contacts USING btree (participant_id, emergency_order, created_at, id);
CREATE INDEX participant_contacts_tenant_id ON public.participant_contacts USING btree (tenant_id);
create policy "Care functions add contacts with care write access" on public.participant_contacts for insert to camp_care
  with check (((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)) AND (( SELECT private.care_access() AS care_access) = 'write'::text)));
create policy "Care functions change contacts with care write access" on public.participant_contacts for update to camp_care
  using (((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)) AND (( SELECT private.care_access() AS care_access) = 'write'::text)))
  with check (((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)) AND (( SELECT private.care_access() AS care_access) = 'write'::text)));
create policy "Care functions read contacts with care access" on public.participant_contacts for select to camp_care
  using (((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)) AND (( SELECT private.care_access() AS care_access) = ANY (ARRAY['read'::text, 'write'::text]))));
create policy "Reporting roles granted care read their tenant's contacts" on public.participant_contacts for select to camp_reporting
  using (((tenant_id = ( SELECT private.reporting_tenant_id() AS reporting_tenant_id)) AND ( SELECT private.reporting_care() AS reporting_care)));
CREATE TRIGGER participant_contacts_audit_insert AFTER INSERT ON public.participant_contacts REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION private.audit_changes('contact');
CREATE TRIGGER participant_contacts_audit_update AFTER UPDATE ON public.participant_contacts REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION private.audit_changes('contact');
CREATE TRIGGER participant_contacts_hold_live_participant BEFORE INSERT OR UPDATE ON public.participant_contacts FOR EACH ROW EXECUTE FUNCTION private.hold_live_participant();
CREATE TRIGGER participant_contacts_touch_updated_at BEFORE UPDATE ON public.participant_contacts FOR EACH ROW EXECUTE FUNCTION private.touch_updated_at();
grant insert (participant_id, name, relationship, phone, phone_alt, email, emergency, emergency_order, authorised_pickup, notes), update (name, relationship, phone, phone_alt, email, emergency, emergency_order, authorised_pickup, notes, deleted_at) on table public.participant_contacts to camp_care;
grant select (id, participant_id, name, relationship, phone, phone_alt, email, emergency, emergency_order, authorised_pickup, notes, created_at, updated_at, deleted_at) on table public.participant_contacts to camp_reporting_care;
grant select on table public.participant_contacts to camp_care;
comment on table public.participant_contacts is 'Emergency contacts and people authorised to collect a participant. Care data: reached only through the private.care_contact* functions.';

create table public.participant_medications (
  id uuid default gen_random_uuid() not null,
  tenant_id uuid default private.request_tenant_id() not null,
  participant_id uuid not null,
  name text not null,
  dose text,
  route text,
  instructions text,
  start_date date,
  end_date date,
  times text[],
  prn boolean default false not null,
  min_interval_hours numeric(5,2),
  max_doses_per_24h integer,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null,
  deleted_at timestamp with time zone,
  constraint participant_medications_pkey PRIMARY KEY (id),
  constraint participant_medications_tenant_id_id_key UNIQUE (tenant_id, id),
  constraint participant_medications_participant_id_fkey FOREIGN KEY (tenant_id, participant_id) REFERENCES public.participants(tenant_id, id),
  constraint participant_medications_dates_check CHECK (end_date >= start_date),
  constraint participant_medications_dose_check CHECK (char_length(dose) <= 200),
  constraint participant_medications_instructions_check CHECK (char_length(instructions) <= 2000),
  constraint participant_medications_max_doses_per_24h_check CHECK (max_doses_per_24h >= 1 AND max_doses_per_24h <= 48),
  constraint participant_medications_min_interval_hours_check CHECK (min_interval_hours > 0::numeric AND min_interval_hours <= 168::numeric),
  constraint participant_medications_name_check CHECK (char_length(btrim(name)) >= 1 AND char_length(btrim(name)) <= 200),
  constraint participant_medications_prn_limits_check CHECK (prn OR min_interval_hours IS NULL AND max_doses_per_24h IS NULL),
  constraint participant_medications_route_check CHECK (char_length(route) <= 200),
  constraint participant_medications_schedule_check CHECK (NOT (prn AND times IS NOT NULL)),
  constraint participant_medications_times_check CHECK (cardinality(times) >= 1 AND cardinality(times) <= 24 AND array_to_string(times, ','::text) ~ '^([01][0-9]|2[0-3]):[0-5][0-9](,([01][0-9]|2[0-3]):[0-5][0-9])*$'::text)
);
alter table public.participant_medications enable row level security;
CREATE INDEX participant_medications_by_participant ON public.participant_medications USING btree (participant_id, created_at, id);
CREATE INDEX participant_medications_scheduled ON public.participant_medications USING btree (tenant_id) INCLUDE (participant_id) WHERE ((deleted_at IS NULL) AND (times IS NOT NULL));
create policy "Care functions add medications with care write access" on public.participant_medications for insert to camp_care
  with check (((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)) AND (( SELECT private.care_access() AS care_access) = 'write'::text)));
create policy "Care functions change medications with care write access" on public.participant_medications for update to camp_care
  using (((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)) AND (( SELECT private.care_access() AS care_access) = 'write'::text)))
  with check (((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)) AND (( SELECT private.care_access() AS care_access) = 'write'::text)));
create policy "Care functions read medications with care access" on public.participant_medications for select to camp_care
  using (((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)) AND (( SELECT private.care_access() AS care_access) = ANY (ARRAY['read'::text, 'write'::text]))));
create policy "Reporting roles granted care read their tenant's medications" on public.participant_medications for select to camp_reporting
  using (((tenant_id = ( SELECT private.reporting_tenant_id() AS reporting_tenant_id)) AND ( SELECT private.reporting_care() AS reporting_care)));
CREATE TRIGGER participant_medications_audit_insert AFTER INSERT ON public.participant_medications REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION private.audit_changes('medication');
CREATE TRIGGER participant_medications_audit_update AFTER UPDATE ON public.participant_medications REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION private.audit_changes('medication');
CREATE TRIGGER participant_medications_hold_live_participant BEFORE INSERT OR UPDATE ON public.participant_medications FOR EACH ROW EXECUTE FUNCTION private.hold_live_participant();
CREATE TRIGGER participant_medications_touch_updated_at BEFORE UPDATE ON public.participant_medications FOR EACH ROW EXECUTE FUNCTION private.touch_updated_at();
grant insert (participant_id, name, dose, route, instructions, start_date, end_date, times, prn, min_interval_hours, max_doses_per_24h), update (name, dose, route, instructions, start_date, end_date, times, prn, min_interval_hours, max_doses_per_24h, deleted_at) on table public.participant_medications to camp_care;
grant select (id, participant_id, name, dose, route, instructions, start_date, end_date, times, prn, min_interval_hours, max_doses_per_24h, created_at, updated_at, deleted_at) on table public.participant_medications to camp_reporting;
grant select on table public.participant_medications to camp_care;
comment on table public.participant_medications is 'Medications of a participant: name, dose, route, instructions, dates and schedule (times of day in the instance''s time zone, or as needed). Care data: reached only through private.medication*.';

create table public.participants (
  id uuid default gen_random_uuid() not null,
  tenant_id uuid default private.request_tenant_id() not null,
  instance_id uuid not null,
  user_id text not null,
  first_name text not null,
  surname text not null,
  full_name text not null,
  gender text,
  pronouns text,
  status text default 'active'::text not null,
  date_of_birth date,
  school_year text,
  rank text,
  unit_name text,
  school_institute text,
  arrival_date date,
  departure_date date,
  super_group_id uuid,
  sub_group_id uuid,
  block_id uuid,
  room_id uuid,
  room_number text,
  photo_link text,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null,
  deleted_at timestamp with time zone,
  photo_key text,
  photo_content_type text,
  photo_size integer,
  photo_sha256 text,
  search_key text generated always as (private.search_key(((((((first_name || chr(31)) || surname) || chr(31)) || full_name) || chr(31)) || user_id))) stored,
  erased_at timestamp with time zone,
  presence text,
  presence_since timestamp with time zone,
  constraint participants_pkey PRIMARY KEY (id),
  constraint participants_tenant_id_id_key UNIQUE (tenant_id, id),
  constraint participants_block_id_fkey FOREIGN KEY (instance_id, block_id) REFERENCES public.blocks(instance_id, id),
  constraint participants_instance_id_fkey FOREIGN KEY (tenant_id, instance_id) REFERENCES public.instances(tenant_id, id),
  constraint participants_room_id_fkey FOREIGN KEY (instance_id, room_id) REFERENCES public.rooms(instance_id, id),
  constraint participants_room_id_parent_fkey FOREIGN KEY (block_id, room_id) REFERENCES public.rooms(block_id, id),
  constraint participants_sub_group_id_fkey FOREIGN KEY (instance_id, sub_group_id) REFERENCES public.subgroups(instance_id, id),
  constraint participants_sub_group_id_parent_fkey FOREIGN KEY (super_group_id, sub_group_id) REFERENCES public.subgroups(parent_supergroup_id, id),
  constraint participants_super_group_id_fkey FOREIGN KEY (instance_id, super_group_id) REFERENCES public.supergroups(instance_id, id),
  constraint participants_departure_date_check CHECK (departure_date >= arrival_date),
  constraint participants_first_name_check CHECK (char_length(btrim(first_name)) >= 1 AND char_length(btrim(first_name)) <= 200),
  constraint participants_full_name_check CHECK (char_length(full_name) <= 401),
  constraint participants_gender_check CHECK (gender = ANY (ARRAY['Male'::text, 'Female'::text, 'Other'::text])),
  constraint participants_photo_content_type_check CHECK (photo_content_type = ANY (ARRAY['image/jpeg'::text, 'image/png'::text, 'image/gif'::text, 'image/webp'::text])),
  constraint participants_photo_key_check CHECK (photo_key IS NULL AND photo_content_type IS NULL AND photo_size IS NULL AND photo_sha256 IS NULL OR photo_key = ((((((tenant_id::text || '/'::text) || id::text) || '/'::text) || photo_sha256) || '.'::text) ||
CASE photo_content_type
    WHEN 'image/jpeg'::text THEN 'jpg'::text
    WHEN 'image/png'::text THEN 'png'::text
    WHEN 'image/gif'::text THEN 'gif'::text
    WHEN 'image/webp'::text THEN 'webp'::text
    ELSE NULL::text
END)),
  constraint participants_photo_link_check CHECK (char_length(photo_link) <= 2000),
  constraint participants_photo_sha256_check CHECK (photo_sha256 ~ '^[0-9a-f]{64}$'::text),
  constraint participants_photo_size_check CHECK (photo_size >= 1 AND photo_size <= 5242880),
  constraint participants_presence_check CHECK (presence = ANY (ARRAY['in'::text, 'out'::text])),
  constraint participants_pronouns_check CHECK (char_length(pronouns) <= 50),
  constraint participants_rank_check CHECK (char_length(rank) <= 200),
  constraint participants_room_id_check CHECK (room_id IS NULL OR block_id IS NOT NULL),
  constraint participants_room_number_check CHECK (char_length(room_number) <= 200),
  constraint participants_school_institute_check CHECK (char_length(school_institute) <= 200),
  constraint participants_school_year_check CHECK (char_length(school_year) <= 200),
  constraint participants_status_check CHECK (status = ANY (ARRAY['active'::text, 'inactive'::text])),
  constraint participants_sub_group_id_check CHECK (sub_group_id IS NULL OR super_group_id IS NOT NULL),
  constraint participants_surname_check CHECK (char_length(btrim(surname)) >= 1 AND char_length(btrim(surname)) <= 200),
  constraint participants_unit_name_check CHECK (char_length(unit_name) <= 200),
  constraint participants_user_id_check CHECK (char_length(btrim(user_id)) >= 1 AND char_length(btrim(user_id)) <= 200)
);
alter table public.participants enable row level security;
CREATE INDEX participants_by_block ON public.participants USING btree (block_id, created_at, id) WHERE (deleted_at IS NULL);
CREATE INDEX participants_by_instance ON public.participants USING btree (instance_id, created_at, id) INCLUDE (tenant_id) WHERE (deleted_at IS NULL);
CREATE INDEX participants_by_instance_first_name ON public.participants USING btree (instance_id, first_name, id) WHERE (deleted_at IS NULL);
CREATE INDEX participants_by_instance_status ON public.participants USING btree (instance_id, status, created_at, id) WHERE (deleted_at IS NULL);
CREATE INDEX participants_by_instance_surname ON public.participants USING btree (instance_id, surname, id) WHERE (deleted_at IS NULL);
CREATE INDEX participants_by_room ON public.participants USING btree (room_id, created_at, id) WHERE (deleted_at IS NULL);
CREATE INDEX participants_by_status ON public.participants USING btree (tenant_id, status, created_at, id) WHERE (deleted_at IS NULL);
CREATE INDEX participants_by_sub_group ON public.participants USING btree (sub_group_id, created_at, id) WHERE (deleted_at IS NULL);
CREATE INDEX participants_by_super_group ON public.participants USING btree (super_group_id, created_at, id) WHERE (deleted_at IS NULL);
CREATE INDEX participants_by_tenant_surname ON public.participants USING btree (tenant_id, surname, id) WHERE (deleted_at IS NULL);
CREATE INDEX participants_by_updated_at ON public.participants USING btree (tenant_id, updated_at, id);
CREATE INDEX participants_by_user_id ON public.participants USING btree (tenant_id, user_id) WHERE (deleted_at IS NULL);
CREATE INDEX participants_list ON public.participants USING btree (tenant_id, created_at, id) WHERE (deleted_at IS NULL);
CREATE INDEX participants_presence ON public.participants USING btree (instance_id, presence) WHERE (deleted_at IS NULL);
CREATE INDEX participants_presence_by_tenant ON public.participants USING btree (tenant_id, presence) WHERE (deleted_at IS NULL);
CREATE INDEX participants_search_grams ON public.participants USING gin (private.search_grams(search_key)) WHERE (deleted_at IS NULL);
CREATE INDEX participants_search_key ON public.participants USING gin (search_key extensions.gin_trgm_ops) WHERE (deleted_at IS NULL);
CREATE UNIQUE INDEX participants_user_id_key ON public.participants USING btree (instance_id, user_id) WHERE (deleted_at IS NULL);
create policy "API callers manage the participants of their tenant" on public.participants for all to camp_api
  using ((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)))
  with check ((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)));
create policy "Keys without the write scope add no participant" on public.participants as restrictive for insert to camp_api
  with check (( SELECT private.key_may_write() AS key_may_write));
create policy "Keys without the write scope change no participant" on public.participants as restrictive for update to camp_api
  using (( SELECT private.key_may_write() AS key_may_write))
  with check (( SELECT private.key_may_write() AS key_may_write));
create policy "Reporting roles read the participants of their tenant" on public.participants for select to camp_reporting
  using ((tenant_id = ( SELECT private.reporting_tenant_id() AS reporting_tenant_id)));
create policy "Supabase users read the participants of their tenant" on public.participants for select to authenticated
  using ((tenant_id = ( SELECT private.supabase_user_tenant_id() AS supabase_user_tenant_id)));
CREATE TRIGGER participants_audit_insert AFTER INSERT ON public.participants REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION private.audit_changes('participant');
CREATE TRIGGER participants_audit_update AFTER UPDATE ON public.participants REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION private.audit_changes('participant');
CREATE TRIGGER participants_count_delete AFTER DELETE ON public.participants REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION private.count_participants_deleted();
CREATE TRIGGER participants_count_insert AFTER INSERT ON public.participants REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION private.count_participants_inserted();
CREATE TRIGGER participants_count_move AFTER UPDATE OF instance_id, status, deleted_at ON public.participants FOR EACH ROW WHEN (new.instance_id IS DISTINCT FROM old.instance_id OR new.status IS DISTINCT FROM old.status OR (new.deleted_at IS NULL) <> (old.deleted_at IS NULL)) EXECUTE FUNCTION private.count_participant_moved();
CREATE TRIGGER participants_count_room_delete AFTER DELETE ON public.participants FOR EACH ROW WHEN (old.room_id IS NOT NULL AND old.deleted_at IS NULL) EXECUTE FUNCTION private.count_room_placement();
CREATE TRIGGER participants_count_room_insert AFTER INSERT ON public.participants FOR EACH ROW WHEN (new.room_id IS NOT NULL AND new.deleted_at IS NULL) EXECUTE FUNCTION private.count_room_placement();
CREATE TRIGGER participants_count_room_truncate AFTER TRUNCATE ON public.participants FOR EACH STATEMENT EXECUTE FUNCTION private.reset_room_occupancy();
CREATE TRIGGER participants_count_room_update AFTER UPDATE OF room_id, deleted_at ON public.participants FOR EACH ROW WHEN ((new.room_id IS DISTINCT FROM old.room_id OR (new.deleted_at IS NULL) <> (old.deleted_at IS NULL)) AND (old.room_id IS NOT NULL AND old.deleted_at IS NULL OR new.room_id IS NOT NULL AND new.deleted_at IS NULL)) EXECUTE FUNCTION private.count_room_placement();
CREATE TRIGGER participants_count_truncate AFTER TRUNCATE ON public.participants FOR EACH STATEMENT EXECUTE FUNCTION private.reset_list_counts('participants');
CREATE TRIGGER participants_erase_attendance AFTER UPDATE OF erased_at ON public.participants FOR EACH ROW WHEN (old.erased_at IS NULL AND new.erased_at IS NOT NULL) EXECUTE FUNCTION private.erase_attendance_of_participant();
CREATE TRIGGER participants_erase_care AFTER UPDATE OF erased_at ON public.participants FOR EACH ROW WHEN (old.erased_at IS NULL AND new.erased_at IS NOT NULL) EXECUTE FUNCTION private.erase_care_of_participant();
CREATE TRIGGER participants_erase_incidents AFTER UPDATE OF erased_at ON public.participants FOR EACH ROW WHEN (old.erased_at IS NULL AND new.erased_at IS NOT NULL) EXECUTE FUNCTION private.erase_incidents_on_erasure();
CREATE TRIGGER participants_erase_medications AFTER UPDATE OF erased_at ON public.participants FOR EACH ROW WHEN (old.erased_at IS NULL AND new.erased_at IS NOT NULL) EXECUTE FUNCTION private.erase_medications_of_participant();
CREATE TRIGGER participants_erase_photo_uploads AFTER UPDATE OF erased_at ON public.participants FOR EACH ROW WHEN (old.erased_at IS NULL AND new.erased_at IS NOT NULL) EXECUTE FUNCTION private.erase_photo_uploads_of_participant();
CREATE TRIGGER participants_erase_presence BEFORE UPDATE OF erased_at ON public.participants FOR EACH ROW WHEN (old.erased_at IS NULL AND new.erased_at IS NOT NULL) EXECUTE FUNCTION private.clear_presence_of_erased();
CREATE TRIGGER participants_erase_roll_calls AFTER UPDATE OF erased_at ON public.participants FOR EACH ROW WHEN (old.erased_at IS NULL AND new.erased_at IS NOT NULL) EXECUTE FUNCTION private.erase_roll_calls_of_participant();
CREATE TRIGGER participants_erase_stored_answers AFTER UPDATE OF erased_at ON public.participants FOR EACH ROW WHEN (old.erased_at IS NULL AND new.erased_at IS NOT NULL) EXECUTE FUNCTION private.withhold_answers_of_erased();
CREATE TRIGGER participants_fill_full_name BEFORE INSERT ON public.participants FOR EACH ROW EXECUTE FUNCTION private.fill_participant_full_name();
CREATE TRIGGER participants_guard_insert AFTER INSERT ON public.participants REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION private.guard_participant_insert();
CREATE TRIGGER participants_guard_presence BEFORE UPDATE OF presence, presence_since ON public.participants FOR EACH ROW WHEN (new.presence IS DISTINCT FROM old.presence OR new.presence_since IS DISTINCT FROM old.presence_since) EXECUTE FUNCTION private.guard_presence();
CREATE TRIGGER participants_guard_presence_insert BEFORE INSERT ON public.participants FOR EACH ROW WHEN (new.presence IS NOT NULL OR new.presence_since IS NOT NULL) EXECUTE FUNCTION private.guard_presence();
CREATE TRIGGER participants_guard_refused_photo BEFORE UPDATE OF photo_key, photo_link ON public.participants FOR EACH ROW WHEN (new.photo_key IS NOT NULL AND new.photo_key IS DISTINCT FROM old.photo_key OR new.photo_link IS NOT NULL AND new.photo_link IS DISTINCT FROM old.photo_link) EXECUTE FUNCTION private.guard_refused_photo();
CREATE TRIGGER participants_guard_write BEFORE UPDATE ON public.participants FOR EACH ROW EXECUTE FUNCTION private.guard_participant_write();
CREATE TRIGGER participants_touch_updated_at BEFORE UPDATE ON public.participants FOR EACH ROW EXECUTE FUNCTION private.touch_updated_at();
grant select (id, instance_id, user_id, first_name, surname, full_name, gender, status, date_of_birth, school_year, rank, unit_name, school_institute, arrival_date, departure_date, super_group_id, sub_group_id, block_id, room_id, room_number, created_at, updated_at, deleted_at, presence, presence_since) on table public.participants to authenticated;
grant select (id, instance_id, user_id, first_name, surname, full_name, gender, status, date_of_birth, school_year, rank, unit_name, school_institute, arrival_date, departure_date, super_group_id, sub_group_id, block_id, room_id, room_number, created_at, updated_at, deleted_at, presence, presence_since) on table public.participants to camp_reporting;
comment on column public.participants.search_key is 'What `q` searches: the names and user_id as private.search_key folds them, joined by chr(31). Generated; never written.';
comment on column public.participants.erased_at is 'When the participant''s personal data was erased (POST /participants/{id}/erase): the row keeps its id and instance, nothing else of the person.';
comment on column public.participants.presence is 'in or out: the direction of the participant''s last movement by recorded_at (null: none recorded). Set only by the attendance doors.';
grant select, insert, update on table public.participants to camp_api;

create table public.photo_uploads (
  key text not null,
  tenant_id uuid default private.request_tenant_id() not null,
  started_at timestamp with time zone default now() not null,
  constraint photo_uploads_pkey PRIMARY KEY (key),
  constraint photo_uploads_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id) ON DELETE CASCADE
);
alter table public.photo_uploads enable row level security;
CREATE INDEX photo_uploads_tenant_id ON public.photo_uploads USING btree (tenant_id);
create policy "API callers record the uploads of their tenant" on public.photo_uploads for all to camp_api
  using ((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)))
  with check ((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)));
grant select, insert, delete on table public.photo_uploads to camp_api;
comment on table public.photo_uploads is 'Photo objects being uploaded: written before the object is stored, removed when the participant row points at it. camp photos sweep keeps every key listed here (an intent older than a day is a crashed upload and is ignored).';

create table public.roll_call_expected (
  roll_call_id uuid not null,
  participant_id uuid not null,
  tenant_id uuid default private.request_tenant_id() not null,
  constraint roll_call_expected_pkey PRIMARY KEY (roll_call_id, participant_id),
  constraint roll_call_expected_participant_id_fkey FOREIGN KEY (tenant_id, participant_id) REFERENCES public.participants(tenant_id, id),
  constraint roll_call_expected_roll_call_id_fkey FOREIGN KEY (tenant_id, roll_call_id) REFERENCES public.roll_calls(tenant_id, id) ON DELETE CASCADE
);
alter table public.roll_call_expected enable row level security;
CREATE INDEX roll_call_expected_by_participant ON public.roll_call_expected USING btree (participant_id);
CREATE INDEX roll_call_expected_tenant_id ON public.roll_call_expected USING btree (tenant_id);
create policy "API callers read who roll calls expected" on public.roll_call_expected for select to camp_api
  using ((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)));
CREATE TRIGGER roll_call_expected_hold_live_participant BEFORE INSERT OR UPDATE ON public.roll_call_expected FOR EACH ROW EXECUTE FUNCTION private.hold_live_participant();
grant select on table public.roll_call_expected to camp_api;

create table public.roll_call_marks (
  id uuid default gen_random_uuid() not null,
  roll_call_id uuid not null,
  participant_id uuid not null,
  tenant_id uuid default private.request_tenant_id() not null,
  mark text not null,
  marked_by uuid,
  marked_at timestamp with time zone default now() not null,
  constraint roll_call_marks_pkey PRIMARY KEY (id),
  constraint roll_call_marks_participant_key UNIQUE (roll_call_id, participant_id),
  constraint roll_call_marks_participant_id_fkey FOREIGN KEY (tenant_id, participant_id) REFERENCES public.participants(tenant_id, id),
  constraint roll_call_marks_roll_call_id_fkey FOREIGN KEY (tenant_id, roll_call_id) REFERENCES public.roll_calls(tenant_id, id) ON DELETE CASCADE,
  constraint roll_call_marks_mark_check CHECK (mark = ANY (ARRAY['present'::text, 'absent'::text, 'excused'::text]))
);
alter table public.roll_call_marks enable row level security;
CREATE INDEX roll_call_marks_by_participant ON public.roll_call_marks USING btree (participant_id);
CREATE INDEX roll_call_marks_tenant_id ON public.roll_call_marks USING btree (tenant_id);
create policy "API callers read roll call marks" on public.roll_call_marks for select to camp_api
  using ((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)));
CREATE TRIGGER roll_call_marks_audit_insert AFTER INSERT ON public.roll_call_marks REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION private.audit_changes('roll_call_mark');
CREATE TRIGGER roll_call_marks_audit_update AFTER UPDATE ON public.roll_call_marks REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION private.audit_changes('roll_call_mark');
CREATE TRIGGER roll_call_marks_hold_live_participant BEFORE INSERT OR UPDATE ON public.roll_call_marks FOR EACH ROW EXECUTE FUNCTION private.hold_live_participant();
grant select on table public.roll_call_marks to camp_api;

create table public.roll_calls (
  id uuid default gen_random_uuid() not null,
  tenant_id uuid default private.request_tenant_id() not null,
  instance_id uuid not null,
  super_group_id uuid,
  sub_group_id uuid,
  block_id uuid,
  room_id uuid,
  name text,
  status text default 'open'::text not null,
  created_by uuid,
  closed_by uuid,
  closed_at timestamp with time zone,
  missing_count integer,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null,
  expected_count integer,
  present_count integer,
  absent_count integer,
  excused_count integer,
  constraint roll_calls_pkey PRIMARY KEY (id),
  constraint roll_calls_tenant_id_id_key UNIQUE (tenant_id, id),
  constraint roll_calls_instance_id_fkey FOREIGN KEY (tenant_id, instance_id) REFERENCES public.instances(tenant_id, id),
  constraint roll_calls_name_check CHECK (char_length(name) <= 200),
  constraint roll_calls_one_scope_check CHECK (num_nonnulls(super_group_id, sub_group_id, block_id, room_id) <= 1),
  constraint roll_calls_status_check CHECK (status = ANY (ARRAY['open'::text, 'closed'::text]))
);
alter table public.roll_calls enable row level security;
CREATE INDEX roll_calls_by_instance ON public.roll_calls USING btree (instance_id, created_at, id);
CREATE INDEX roll_calls_tenant_id ON public.roll_calls USING btree (tenant_id);
create policy "API callers read the roll calls of their tenant" on public.roll_calls for select to camp_api
  using ((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)));
CREATE TRIGGER roll_calls_audit_insert AFTER INSERT ON public.roll_calls REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION private.audit_changes('roll_call');
CREATE TRIGGER roll_calls_audit_update AFTER UPDATE ON public.roll_calls REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION private.audit_changes('roll_call');
CREATE TRIGGER roll_calls_touch_updated_at BEFORE UPDATE ON public.roll_calls FOR EACH ROW EXECUTE FUNCTION private.touch_updated_at();
comment on column public.roll_calls.missing_count is 'Frozen when closed, with expected_count, present_count, absent_count and excused_count: the counts roll_call.closed carries.';
grant select on table public.roll_calls to camp_api;
comment on table public.roll_calls is 'Head counts: who was expected (present in the scope when it opened), who was marked, who was missing when it closed. Written only through private.roll_call_*.';

create table public.rooms (
  id uuid default gen_random_uuid() not null,
  tenant_id uuid default private.request_tenant_id() not null,
  instance_id uuid not null,
  block_id uuid not null,
  room_number text not null,
  name text,
  capacity integer,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null,
  deleted_at timestamp with time zone,
  constraint rooms_pkey PRIMARY KEY (id),
  constraint rooms_block_id_id_key UNIQUE (block_id, id),
  constraint rooms_instance_id_id_key UNIQUE (instance_id, id),
  constraint rooms_block_id_fkey FOREIGN KEY (instance_id, block_id) REFERENCES public.blocks(instance_id, id),
  constraint rooms_instance_id_fkey FOREIGN KEY (tenant_id, instance_id) REFERENCES public.instances(tenant_id, id),
  constraint rooms_capacity_check CHECK (capacity >= 0),
  constraint rooms_name_check CHECK (char_length(name) <= 200),
  constraint rooms_room_number_check CHECK (char_length(btrim(room_number)) >= 1 AND char_length(btrim(room_number)) <= 200)
);
alter table public.rooms enable row level security;
CREATE INDEX rooms_by_block ON public.rooms USING btree (block_id, created_at, id) WHERE (deleted_at IS NULL);
CREATE INDEX rooms_by_instance ON public.rooms USING btree (instance_id, created_at, id) WHERE (deleted_at IS NULL);
CREATE INDEX rooms_list ON public.rooms USING btree (tenant_id, created_at, id) WHERE (deleted_at IS NULL);
CREATE UNIQUE INDEX rooms_room_number_key ON public.rooms USING btree (block_id, lower(btrim(room_number))) WHERE (deleted_at IS NULL);
create policy "API callers manage the rooms of their tenant" on public.rooms for all to camp_api
  using ((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)))
  with check ((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)));
create policy "Reporting roles read the rooms of their tenant" on public.rooms for select to camp_reporting
  using ((tenant_id = ( SELECT private.reporting_tenant_id() AS reporting_tenant_id)));
create policy "Supabase users read the rooms of their tenant" on public.rooms for select to authenticated
  using ((tenant_id = ( SELECT private.supabase_user_tenant_id() AS supabase_user_tenant_id)));
CREATE TRIGGER rooms_audit_insert AFTER INSERT ON public.rooms REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION private.audit_changes('room');
CREATE TRIGGER rooms_audit_update AFTER UPDATE ON public.rooms REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION private.audit_changes('room');
CREATE TRIGGER rooms_count_delete AFTER DELETE ON public.rooms REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION private.count_structure_rows('rooms', 'r.instance_id', '''''');
CREATE TRIGGER rooms_count_insert AFTER INSERT ON public.rooms REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION private.count_structure_rows('rooms', 'r.instance_id', '''''');
CREATE TRIGGER rooms_count_move AFTER UPDATE ON public.rooms FOR EACH ROW WHEN ((new.deleted_at IS NULL) <> (old.deleted_at IS NULL)) EXECUTE FUNCTION private.count_structure_rows('rooms', 'r.instance_id', '''''');
CREATE TRIGGER rooms_count_truncate AFTER TRUNCATE ON public.rooms FOR EACH STATEMENT EXECUTE FUNCTION private.reset_list_counts('rooms');
CREATE TRIGGER rooms_freeze_instance_id BEFORE UPDATE ON public.rooms FOR EACH ROW WHEN (new.instance_id IS DISTINCT FROM old.instance_id) EXECUTE FUNCTION private.refuse_instance_change();
CREATE TRIGGER rooms_guard_move BEFORE UPDATE ON public.rooms FOR EACH ROW WHEN (new.block_id IS DISTINCT FROM old.block_id) EXECUTE FUNCTION private.guard_room_move();
CREATE TRIGGER rooms_guard_write BEFORE INSERT OR UPDATE ON public.rooms FOR EACH ROW EXECUTE FUNCTION private.guard_room_write();
CREATE TRIGGER rooms_touch_updated_at BEFORE UPDATE ON public.rooms FOR EACH ROW EXECUTE FUNCTION private.touch_updated_at();
CREATE TRIGGER rooms_track_capacity_insert AFTER INSERT ON public.rooms FOR EACH ROW EXECUTE FUNCTION private.track_room_capacity();
CREATE TRIGGER rooms_track_capacity_update AFTER UPDATE OF capacity, deleted_at ON public.rooms FOR EACH ROW WHEN (new.capacity IS DISTINCT FROM old.capacity OR new.deleted_at IS DISTINCT FROM old.deleted_at) EXECUTE FUNCTION private.track_room_capacity();
grant select (id, instance_id, block_id, room_number, name, capacity, deleted_at) on table public.rooms to authenticated;
grant select (id, instance_id, block_id, room_number, name, capacity, deleted_at) on table public.rooms to camp_reporting;
grant select, insert, update on table public.rooms to camp_api;

create table public.subgroups (
  id uuid default gen_random_uuid() not null,
  tenant_id uuid default private.request_tenant_id() not null,
  instance_id uuid not null,
  parent_supergroup_id uuid not null,
  name text not null,
  description text,
  type text default 'subgroup'::text not null,
  purpose text,
  notifications boolean default true not null,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null,
  deleted_at timestamp with time zone,
  constraint subgroups_pkey PRIMARY KEY (id),
  constraint subgroups_instance_id_id_key UNIQUE (instance_id, id),
  constraint subgroups_parent_supergroup_id_id_key UNIQUE (parent_supergroup_id, id),
  constraint subgroups_instance_id_fkey FOREIGN KEY (tenant_id, instance_id) REFERENCES public.instances(tenant_id, id),
  constraint subgroups_parent_supergroup_id_fkey FOREIGN KEY (instance_id, parent_supergroup_id) REFERENCES public.supergroups(instance_id, id),
  constraint subgroups_description_check CHECK (char_length(description) <= 2000),
  constraint subgroups_name_check CHECK (char_length(btrim(name)) >= 1 AND char_length(btrim(name)) <= 200),
  constraint subgroups_purpose_check CHECK (char_length(purpose) <= 2000),
  constraint subgroups_type_check CHECK (char_length(type) <= 200)
);
alter table public.subgroups enable row level security;
CREATE INDEX subgroups_by_instance ON public.subgroups USING btree (instance_id, created_at, id) WHERE (deleted_at IS NULL);
CREATE INDEX subgroups_by_parent ON public.subgroups USING btree (parent_supergroup_id, created_at, id) WHERE (deleted_at IS NULL);
CREATE INDEX subgroups_list ON public.subgroups USING btree (tenant_id, created_at, id) WHERE (deleted_at IS NULL);
CREATE UNIQUE INDEX subgroups_name_key ON public.subgroups USING btree (parent_supergroup_id, lower(btrim(name))) WHERE (deleted_at IS NULL);
create policy "API callers manage the subgroups of their tenant" on public.subgroups for all to camp_api
  using ((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)))
  with check ((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)));
create policy "Reporting roles read the subgroups of their tenant" on public.subgroups for select to camp_reporting
  using ((tenant_id = ( SELECT private.reporting_tenant_id() AS reporting_tenant_id)));
create policy "Supabase users read the subgroups of their tenant" on public.subgroups for select to authenticated
  using ((tenant_id = ( SELECT private.supabase_user_tenant_id() AS supabase_user_tenant_id)));
CREATE TRIGGER subgroups_audit_insert AFTER INSERT ON public.subgroups REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION private.audit_changes('subgroup');
CREATE TRIGGER subgroups_audit_update AFTER UPDATE ON public.subgroups REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION private.audit_changes('subgroup');
CREATE TRIGGER subgroups_count_delete AFTER DELETE ON public.subgroups REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION private.count_structure_rows('subgroups', 'r.instance_id', '''''');
CREATE TRIGGER subgroups_count_insert AFTER INSERT ON public.subgroups REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION private.count_structure_rows('subgroups', 'r.instance_id', '''''');
CREATE TRIGGER subgroups_count_move AFTER UPDATE ON public.subgroups FOR EACH ROW WHEN ((new.deleted_at IS NULL) <> (old.deleted_at IS NULL)) EXECUTE FUNCTION private.count_structure_rows('subgroups', 'r.instance_id', '''''');
CREATE TRIGGER subgroups_count_truncate AFTER TRUNCATE ON public.subgroups FOR EACH STATEMENT EXECUTE FUNCTION private.reset_list_counts('subgroups');
CREATE TRIGGER subgroups_freeze_instance_id BEFORE UPDATE ON public.subgroups FOR EACH ROW WHEN (new.instance_id IS DISTINCT FROM old.instance_id) EXECUTE FUNCTION private.refuse_instance_change();
CREATE TRIGGER subgroups_guard_move BEFORE UPDATE ON public.subgroups FOR EACH ROW WHEN (new.parent_supergroup_id IS DISTINCT FROM old.parent_supergroup_id) EXECUTE FUNCTION private.guard_subgroup_move();
CREATE TRIGGER subgroups_guard_write BEFORE INSERT OR UPDATE ON public.subgroups FOR EACH ROW EXECUTE FUNCTION private.guard_subgroup_write();
CREATE TRIGGER subgroups_touch_updated_at BEFORE UPDATE ON public.subgroups FOR EACH ROW EXECUTE FUNCTION private.touch_updated_at();
grant select (id, instance_id, parent_supergroup_id, name, type, deleted_at) on table public.subgroups to authenticated;
grant select (id, instance_id, parent_supergroup_id, name, type, deleted_at) on table public.subgroups to camp_reporting;
grant select, insert, update on table public.subgroups to camp_api;

create table public.supergroups (
  id uuid default gen_random_uuid() not null,
  tenant_id uuid default private.request_tenant_id() not null,
  instance_id uuid not null,
  name text not null,
  description text,
  type text default 'supergroup'::text not null,
  purpose text,
  notifications boolean default true not null,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null,
  deleted_at timestamp with time zone,
  constraint supergroups_pkey PRIMARY KEY (id),
  constraint supergroups_instance_id_id_key UNIQUE (instance_id, id),
  constraint supergroups_instance_id_fkey FOREIGN KEY (tenant_id, instance_id) REFERENCES public.instances(tenant_id, id),
  constraint supergroups_description_check CHECK (char_length(description) <= 2000),
  constraint supergroups_name_check CHECK (char_length(btrim(name)) >= 1 AND char_length(btrim(name)) <= 200),
  constraint supergroups_purpose_check CHECK (char_length(purpose) <= 2000),
  constraint supergroups_type_check CHECK (char_length(type) <= 200)
);
alter table public.supergroups enable row level security;
CREATE INDEX supergroups_by_instance ON public.supergroups USING btree (instance_id, created_at, id) WHERE (deleted_at IS NULL);
CREATE INDEX supergroups_list ON public.supergroups USING btree (tenant_id, created_at, id) WHERE (deleted_at IS NULL);
CREATE UNIQUE INDEX supergroups_name_key ON public.supergroups USING btree (instance_id, lower(btrim(name))) WHERE (deleted_at IS NULL);
create policy "API callers manage the supergroups of their tenant" on public.supergroups for all to camp_api
  using ((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)))
  with check ((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)));
create policy "Reporting roles read the supergroups of their tenant" on public.supergroups for select to camp_reporting
  using ((tenant_id = ( SELECT private.reporting_tenant_id() AS reporting_tenant_id)));
create policy "Supabase users read the supergroups of their tenant" on public.supergroups for select to authenticated
  using ((tenant_id = ( SELECT private.supabase_user_tenant_id() AS supabase_user_tenant_id)));
CREATE TRIGGER supergroups_audit_insert AFTER INSERT ON public.supergroups REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION private.audit_changes('supergroup');
CREATE TRIGGER supergroups_audit_update AFTER UPDATE ON public.supergroups REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION private.audit_changes('supergroup');
CREATE TRIGGER supergroups_count_delete AFTER DELETE ON public.supergroups REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION private.count_structure_rows('supergroups', 'r.instance_id', '''''');
CREATE TRIGGER supergroups_count_insert AFTER INSERT ON public.supergroups REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION private.count_structure_rows('supergroups', 'r.instance_id', '''''');
CREATE TRIGGER supergroups_count_move AFTER UPDATE ON public.supergroups FOR EACH ROW WHEN ((new.deleted_at IS NULL) <> (old.deleted_at IS NULL)) EXECUTE FUNCTION private.count_structure_rows('supergroups', 'r.instance_id', '''''');
CREATE TRIGGER supergroups_count_truncate AFTER TRUNCATE ON public.supergroups FOR EACH STATEMENT EXECUTE FUNCTION private.reset_list_counts('supergroups');
CREATE TRIGGER supergroups_freeze_instance_id BEFORE UPDATE ON public.supergroups FOR EACH ROW WHEN (new.instance_id IS DISTINCT FROM old.instance_id) EXECUTE FUNCTION private.refuse_instance_change();
CREATE TRIGGER supergroups_guard_write BEFORE INSERT OR UPDATE ON public.supergroups FOR EACH ROW EXECUTE FUNCTION private.guard_supergroup_write();
CREATE TRIGGER supergroups_touch_updated_at BEFORE UPDATE ON public.supergroups FOR EACH ROW EXECUTE FUNCTION private.touch_updated_at();
grant select (id, instance_id, name, type, deleted_at) on table public.supergroups to authenticated;
grant select (id, instance_id, name, type, deleted_at) on table public.supergroups to camp_reporting;
grant select, insert, update on table public.supergroups to camp_api;

create table public.tenants (
  id uuid default gen_random_uuid() not null,
  name text not null,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null,
  incident_notice_hours integer default 24 not null,
  health_retention_days integer,
  constraint tenants_pkey PRIMARY KEY (id),
  constraint tenants_health_retention_days_check CHECK (health_retention_days >= 1 AND health_retention_days <= 36500),
  constraint tenants_incident_notice_hours_check CHECK (incident_notice_hours >= 1 AND incident_notice_hours <= 720),
  constraint tenants_name_check CHECK (char_length(btrim(name)) >= 1 AND char_length(btrim(name)) <= 200)
);
alter table public.tenants enable row level security;
create policy "API callers see their own tenant" on public.tenants for select to camp_api
  using ((id = ( SELECT private.request_tenant_id() AS request_tenant_id)));
create policy "Admins change their tenant's settings" on public.tenants for update to camp_api
  using (((id = ( SELECT private.request_tenant_id() AS request_tenant_id)) AND (( SELECT private.request_app_role() AS request_app_role) = 'admin'::text)))
  with check (((id = ( SELECT private.request_tenant_id() AS request_tenant_id)) AND (( SELECT private.request_app_role() AS request_app_role) = 'admin'::text)));
CREATE TRIGGER tenants_audit_update AFTER UPDATE ON public.tenants REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION private.audit_tenant_settings();
CREATE TRIGGER tenants_touch_updated_at BEFORE UPDATE ON public.tenants FOR EACH ROW EXECUTE FUNCTION private.touch_updated_at();
grant update (incident_notice_hours, health_retention_days) on table public.tenants to camp_api;
comment on column public.tenants.incident_notice_hours is 'Hours after an incident occurred within which its guardians are to be recorded as notified (default 24); later, the incident needs attention.';
comment on column public.tenants.health_retention_days is 'How many days health and incident records of an erased participant are kept, detached from any name (private.retain_health_records); null: erasure removes them with the rest.';
grant select on table public.tenants to camp_api;

create table public.users (
  id uuid default gen_random_uuid() not null,
  tenant_id uuid default private.request_tenant_id() not null,
  email text not null,
  role text default 'staff'::text not null,
  auth_subject text,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null,
  active boolean default true not null,
  care_access text not null,
  safeguarding_lead boolean default false not null,
  constraint users_pkey PRIMARY KEY (id),
  constraint users_auth_subject_key UNIQUE (auth_subject),
  constraint users_tenant_id_id_key UNIQUE (tenant_id, id),
  constraint users_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id),
  constraint users_auth_subject_check CHECK (char_length(auth_subject) >= 1 AND char_length(auth_subject) <= 255),
  constraint users_care_access_check CHECK (care_access = ANY (ARRAY['none'::text, 'read'::text, 'write'::text])),
  constraint users_email_check CHECK (email ~ '^[^@[:space:]]+@[^@[:space:]]+$'::text AND char_length(email) <= 320),
  constraint users_role_check CHECK (role = ANY (ARRAY['admin'::text, 'staff'::text]))
);
alter table public.users enable row level security;
CREATE UNIQUE INDEX users_email_key ON public.users USING btree (tenant_id, lower(email));
CREATE INDEX users_email_lookup ON public.users USING btree (lower(email));
create policy "API callers add users to their tenant" on public.users for insert to camp_api
  with check ((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)));
create policy "API callers change the users of their tenant" on public.users for update to camp_api
  using ((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)))
  with check ((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)));
create policy "API callers see the users of their tenant" on public.users for select to camp_api
  using ((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)));
CREATE TRIGGER users_audit_insert AFTER INSERT ON public.users REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION private.audit_changes('user');
CREATE TRIGGER users_audit_update AFTER UPDATE ON public.users REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION private.audit_changes('user');
CREATE TRIGGER users_fill_care_access BEFORE INSERT ON public.users FOR EACH ROW EXECUTE FUNCTION private.fill_user_care_access();
CREATE TRIGGER users_guard_care_access BEFORE UPDATE OF care_access ON public.users FOR EACH ROW WHEN (old.care_access IS DISTINCT FROM new.care_access) EXECUTE FUNCTION private.guard_care_access_change();
CREATE TRIGGER users_guard_change BEFORE UPDATE OF role, active ON public.users FOR EACH ROW EXECUTE FUNCTION private.guard_user_change();
CREATE TRIGGER users_guard_safeguarding_lead BEFORE UPDATE OF safeguarding_lead ON public.users FOR EACH ROW WHEN (old.safeguarding_lead IS DISTINCT FROM new.safeguarding_lead) EXECUTE FUNCTION private.guard_safeguarding_lead_change();
CREATE TRIGGER users_touch_updated_at BEFORE UPDATE ON public.users FOR EACH ROW EXECUTE FUNCTION private.touch_updated_at();
grant insert (tenant_id, email, role), update (role, active, care_access, safeguarding_lead) on table public.users to camp_api;
comment on column public.users.active is 'A deactivated user keeps their history but cannot authenticate: their keys are revoked and their Bearer tokens refused.';
comment on column public.users.care_access is 'How far the user may reach children''s contacts, care records and consents: none, read or write. Default by role on insert (admin: write, staff: none); only an admin or an operator changes it.';
comment on column public.users.safeguarding_lead is 'Reads incidents of category safeguarding (with care access); set by admins only.';
grant select on table public.users to camp_api;

create table public.webhook_attempts (
  id bigint generated always as identity not null,
  tenant_id uuid not null,
  delivery_id uuid not null,
  started_at timestamp with time zone not null,
  duration_ms integer,
  status_code integer,
  error text,
  response text,
  constraint webhook_attempts_pkey PRIMARY KEY (id),
  constraint webhook_attempts_delivery_id_fkey FOREIGN KEY (delivery_id) REFERENCES public.webhook_deliveries(id) ON DELETE CASCADE,
  constraint webhook_attempts_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id),
  constraint webhook_attempts_error_check CHECK (char_length(error) <= 300),
  constraint webhook_attempts_response_check CHECK (char_length(response) <= 256)
);
alter table public.webhook_attempts enable row level security;
CREATE INDEX webhook_attempts_by_delivery ON public.webhook_attempts USING btree (delivery_id, id DESC);
create policy "Admins read the webhook attempts of their tenant" on public.webhook_attempts for select to camp_api
  using (((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)) AND (( SELECT private.request_app_role() AS request_app_role) = 'admin'::text)));
grant select on table public.webhook_attempts to camp_api;
comment on table public.webhook_attempts is 'Each attempt to deliver: when, how long, the status or the error. Deleted with its delivery.';

create table public.webhook_deliveries (
  id uuid default gen_random_uuid() not null,
  tenant_id uuid not null,
  endpoint_id uuid not null,
  event_id bigint not null,
  event_type text not null,
  resource_id uuid not null,
  occurred_at timestamp with time zone not null,
  status text default 'pending'::text not null,
  tries integer default 0 not null,
  cycle_started_at timestamp with time zone,
  next_attempt_at timestamp with time zone default now() not null,
  lease_token uuid,
  leased_at timestamp with time zone,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null,
  data jsonb,
  constraint webhook_deliveries_pkey PRIMARY KEY (id),
  constraint webhook_deliveries_once UNIQUE (endpoint_id, event_id),
  constraint webhook_deliveries_endpoint_fkey FOREIGN KEY (tenant_id, endpoint_id) REFERENCES public.webhook_endpoints(tenant_id, id) ON DELETE CASCADE,
  constraint webhook_deliveries_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id),
  constraint webhook_deliveries_status_check CHECK (status = ANY (ARRAY['pending'::text, 'delivered'::text, 'failed'::text]))
);
alter table public.webhook_deliveries enable row level security;
CREATE INDEX webhook_deliveries_by_endpoint ON public.webhook_deliveries USING btree (tenant_id, endpoint_id, created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_due ON public.webhook_deliveries USING btree (endpoint_id, next_attempt_at) WHERE (status = 'pending'::text);
CREATE INDEX webhook_deliveries_in_flight ON public.webhook_deliveries USING btree (tenant_id, endpoint_id) WHERE ((status = 'pending'::text) AND (lease_token IS NOT NULL));
CREATE INDEX webhook_deliveries_retention ON public.webhook_deliveries USING brin (created_at);
create policy "Admins read the webhook deliveries of their tenant" on public.webhook_deliveries for select to camp_api
  using (((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)) AND (( SELECT private.request_app_role() AS request_app_role) = 'admin'::text) AND ((NOT private.is_care_event(event_type)) OR (( SELECT private.care_access() AS care_access) = ANY (ARRAY['read'::text, 'write'::text])))));
CREATE TRIGGER webhook_deliveries_care_only_when_named BEFORE INSERT ON public.webhook_deliveries FOR EACH ROW EXECUTE FUNCTION private.skip_unnamed_care_deliveries();
CREATE TRIGGER webhook_deliveries_no_safeguarding BEFORE INSERT ON public.webhook_deliveries FOR EACH ROW EXECUTE FUNCTION private.skip_safeguarding_deliveries();
CREATE TRIGGER webhook_deliveries_touch_updated_at BEFORE UPDATE ON public.webhook_deliveries FOR EACH ROW EXECUTE FUNCTION private.touch_updated_at();
comment on column public.webhook_deliveries.data is 'The event''s figures (public.events.data), copied with its ids.';
grant select on table public.webhook_deliveries to camp_api;
comment on table public.webhook_deliveries is 'One event to one endpoint: pending until a 2xx answer (delivered) or retries run out (failed). Kept 30 days.';

create table public.webhook_endpoints (
  id uuid default gen_random_uuid() not null,
  tenant_id uuid default private.request_tenant_id() not null,
  url text not null,
  description text,
  types text[],
  enabled boolean default true not null,
  disabled_reason text,
  secret_rotated_at timestamp with time zone,
  created_at timestamp with time zone default now() not null,
  updated_at timestamp with time zone default now() not null,
  deleted_at timestamp with time zone,
  constraint webhook_endpoints_pkey PRIMARY KEY (id),
  constraint webhook_endpoints_tenant_id_id_key UNIQUE (tenant_id, id),
  constraint webhook_endpoints_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id),
  constraint webhook_endpoints_description_check CHECK (char_length(description) <= 2000),
  constraint webhook_endpoints_disabled_reason_check CHECK (char_length(disabled_reason) <= 300),
  constraint webhook_endpoints_types_check CHECK (types IS NULL OR cardinality(types) >= 1 AND cardinality(types) <= 50),
  constraint webhook_endpoints_url_check CHECK (url ~ '^https?://'::text AND char_length(url) <= 2000)
);
alter table public.webhook_endpoints enable row level security;
CREATE INDEX webhook_endpoints_by_tenant ON public.webhook_endpoints USING btree (tenant_id, created_at, id) WHERE (deleted_at IS NULL);
create policy "Admins add webhook endpoints to their tenant" on public.webhook_endpoints for insert to camp_api
  with check (((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)) AND (( SELECT private.request_app_role() AS request_app_role) = 'admin'::text)));
create policy "Admins change the webhook endpoints of their tenant" on public.webhook_endpoints for update to camp_api
  using (((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)) AND (( SELECT private.request_app_role() AS request_app_role) = 'admin'::text)))
  with check (((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)) AND (( SELECT private.request_app_role() AS request_app_role) = 'admin'::text)));
create policy "Admins read the webhook endpoints of their tenant" on public.webhook_endpoints for select to camp_api
  using (((tenant_id = ( SELECT private.request_tenant_id() AS request_tenant_id)) AND (( SELECT private.request_app_role() AS request_app_role) = 'admin'::text)));
CREATE TRIGGER webhook_endpoints_audit_insert AFTER INSERT ON public.webhook_endpoints REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION private.audit_changes('webhook_endpoint');
CREATE TRIGGER webhook_endpoints_audit_update AFTER UPDATE ON public.webhook_endpoints REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION private.audit_changes('webhook_endpoint');
CREATE TRIGGER webhook_endpoints_forget_deleted AFTER UPDATE ON public.webhook_endpoints REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION private.forget_deleted_webhook_endpoints();
CREATE TRIGGER webhook_endpoints_guard_care BEFORE INSERT OR UPDATE ON public.webhook_endpoints FOR EACH ROW EXECUTE FUNCTION private.guard_care_webhook_endpoint();
CREATE TRIGGER webhook_endpoints_guard_count BEFORE INSERT ON public.webhook_endpoints FOR EACH ROW EXECUTE FUNCTION private.guard_webhook_endpoint_count();
CREATE TRIGGER webhook_endpoints_start_dispatch AFTER INSERT OR UPDATE OF enabled ON public.webhook_endpoints FOR EACH ROW EXECUTE FUNCTION private.start_webhook_dispatch();
CREATE TRIGGER webhook_endpoints_touch_updated_at BEFORE UPDATE ON public.webhook_endpoints FOR EACH ROW EXECUTE FUNCTION private.touch_updated_at();
grant insert (tenant_id, url, description, types, enabled), update (url, description, types, enabled, disabled_reason, secret_rotated_at, deleted_at) on table public.webhook_endpoints to camp_api;
grant select on table public.webhook_endpoints to camp_api;
comment on table public.webhook_endpoints is 'Where a tenant''s events are delivered. Managed by the tenant''s admins; the signing secrets are in private.webhook_secrets, never here.';

-- ==================== schema reporting ====================

create view reporting.age_distribution with (security_invoker=true) as
 SELECT i.id AS instance_id,
    i.name AS instance_name,
    i.start_date,
    date_part('year'::text, age(i.start_date::timestamp without time zone, p.date_of_birth::timestamp without time zone))::integer AS age_at_start,
    count(*) AS participants
   FROM public.participants p
     JOIN public.instances i ON i.id = p.instance_id AND i.deleted_at IS NULL
  WHERE p.deleted_at IS NULL
  GROUP BY i.id, (date_part('year'::text, age(i.start_date::timestamp without time zone, p.date_of_birth::timestamp without time zone))::integer);
grant select on table reporting.age_distribution to authenticated;
grant select on table reporting.age_distribution to camp_reporting;
comment on view reporting.age_distribution is 'Live participants per instance by age in completed years on the instance''s start_date; one row with a null age counts those whose age is unknown (no date_of_birth or no start_date).';

create view reporting.attendance with (security_invoker=true) as
 SELECT m.id,
    m.instance_id,
    i.name AS instance_name,
    m.participant_id,
    p.full_name AS participant_name,
    m.direction,
    m.recorded_at,
    m.received_at,
    m.recorded_by,
    m.location,
    m.pickup_contact_id,
    m.override_reason,
    m.conflict,
    m.conflict_reason
   FROM public.attendance_movements m
     JOIN public.participants p ON p.id = m.participant_id AND p.deleted_at IS NULL
     JOIN public.instances i ON i.id = m.instance_id AND i.deleted_at IS NULL;
grant select on table reporting.attendance to authenticated;
grant select on table reporting.attendance to camp_reporting;
comment on view reporting.attendance is 'Check-ins (direction in) and check-outs (out) of live participants of live instances, as recorded on site; not the planned arrival_date and departure_date (those are daily_movements). No security codes, and the pickup as a contact id only (its name is care data: reporting.participant_contacts, --care roles).';

create view reporting.audit_events with (security_invoker=true) as
 SELECT audit_events.id,
    audit_events.occurred_at,
    audit_events.actor_user_id,
    audit_events.actor_email,
    audit_events.actor_via,
    audit_events.actor_key_id,
    audit_events.request_id,
    audit_events.action,
    audit_events.resource_type,
    audit_events.resource_id,
    private.audit_changes_of(audit_events.action, audit_events.changes) AS changes,
    audit_events.capacity_override,
    audit_events.client_request_id
   FROM public.audit_events;
grant select on table reporting.audit_events to camp_reporting;
comment on view reporting.audit_events is 'Who changed what and when in the tenant: one row per created, updated, deleted or erased record; changes as {field: [before, after]}; capacity_override when an admin placed a participant over a room''s capacity; request_id is the server''s id of the request, client_request_id the X-Request-Id the client sent. The events of care resources (contacts, care records, consents, care reads) only for roles granted --care.';

create view reporting.block_occupancy with (security_invoker=true) as
 WITH placed AS (
         SELECT p.block_id,
            p.room_id,
            count(*) AS participants
           FROM public.participants p
          WHERE p.deleted_at IS NULL AND p.block_id IS NOT NULL
          GROUP BY p.block_id, p.room_id
        ), room_load AS (
         SELECT r.block_id,
            r.capacity,
            COALESCE(pl.participants, 0::bigint) AS occupants
           FROM public.rooms r
             LEFT JOIN placed pl ON pl.room_id = r.id
          WHERE r.deleted_at IS NULL
        ), block_load AS (
         SELECT room_load.block_id,
            count(*) AS rooms,
            count(*) FILTER (WHERE room_load.capacity IS NULL) AS rooms_without_capacity,
            sum(room_load.capacity) AS capacity,
            sum(room_load.occupants)::bigint AS occupants,
            sum(
                CASE
                    WHEN room_load.capacity IS NOT NULL THEN GREATEST(room_load.capacity - room_load.occupants, 0::bigint)
                    ELSE NULL::bigint
                END)::bigint AS free_places
           FROM room_load
          GROUP BY room_load.block_id
        ), roomless AS (
         SELECT pl.block_id,
            pl.participants
           FROM placed pl
          WHERE pl.room_id IS NULL
        )
 SELECT b.instance_id,
    i.name AS instance_name,
    b.id AS block_id,
    b.name AS block_name,
    COALESCE(l.rooms, 0::bigint) AS rooms,
    COALESCE(l.rooms_without_capacity, 0::bigint) AS rooms_without_capacity,
    l.capacity,
    COALESCE(l.occupants, 0::bigint) AS occupants,
    COALESCE(nr.participants, 0::bigint) AS without_room,
    l.free_places,
    round(100.0 * l.occupants::numeric / NULLIF(l.capacity, 0)::numeric, 1) AS occupancy_percent
   FROM public.blocks b
     JOIN public.instances i ON i.id = b.instance_id AND i.deleted_at IS NULL
     LEFT JOIN block_load l ON l.block_id = b.id
     LEFT JOIN roomless nr ON nr.block_id = b.id
  WHERE b.deleted_at IS NULL;
grant select on table reporting.block_occupancy to authenticated;
grant select on table reporting.block_occupancy to camp_reporting;
comment on view reporting.block_occupancy is 'One row per live block: its live rooms, their total capacity, the live participants in them, and those assigned to the block without a room.';

create view reporting.daily_movements with (security_invoker=true) as
 WITH trips AS (
         SELECT p.instance_id,
            p.arrival_date,
            p.departure_date,
            count(*) AS participants
           FROM public.participants p
          WHERE p.deleted_at IS NULL AND (p.arrival_date IS NOT NULL OR p.departure_date IS NOT NULL)
          GROUP BY p.instance_id, p.arrival_date, p.departure_date
        )
 SELECT t.instance_id,
    i.name AS instance_name,
    m.day,
    COALESCE(sum(t.participants) FILTER (WHERE m.arriving), 0::numeric)::bigint AS arrivals,
    COALESCE(sum(t.participants) FILTER (WHERE NOT m.arriving), 0::numeric)::bigint AS departures
   FROM trips t
     JOIN public.instances i ON i.id = t.instance_id AND i.deleted_at IS NULL
     CROSS JOIN LATERAL ( VALUES (t.arrival_date,true), (t.departure_date,false)) m(day, arriving)
  WHERE m.day IS NOT NULL
  GROUP BY t.instance_id, i.id, m.day;
grant select on table reporting.daily_movements to authenticated;
grant select on table reporting.daily_movements to camp_reporting;
comment on view reporting.daily_movements is 'Per instance and day: live participants with that arrival_date (arrivals) and that departure_date (departures). Only days with at least one movement appear.';

create view reporting.incidents with (security_invoker=true) as
 SELECT i.id,
    i.instance_id,
    ARRAY( SELECT l.participant_id
           FROM public.incident_participants l
          WHERE l.incident_id = i.id
          ORDER BY l.participant_id) AS participant_ids,
    (c.v ->> 'occurred_at'::text)::timestamp with time zone AS occurred_at,
    c.v ->> 'location'::text AS location,
    c.v ->> 'category'::text AS category,
    c.v ->> 'severity'::text AS severity,
    c.v ->> 'description'::text AS description,
    c.v ->> 'actions_taken'::text AS actions_taken,
    (c.v ->> 'guardian_notified_at'::text)::timestamp with time zone AS guardian_notified_at,
    c.v ->> 'guardian_notified_by'::text AS guardian_notified_by,
    c.v ->> 'status'::text AS status,
    ( SELECT count(*)::integer AS count
           FROM public.incident_amendments a
          WHERE a.incident_id = i.id) AS amendments,
    i.reported_by_email,
    i.recorded_at
   FROM public.incidents i
     CROSS JOIN LATERAL ( SELECT jsonb_build_object('occurred_at', i.occurred_at, 'location', i.location, 'category', i.category, 'severity', i.severity, 'description', i.description, 'actions_taken', i.actions_taken, 'guardian_notified_at', i.guardian_notified_at, 'guardian_notified_by', i.guardian_notified_by, 'status', 'open') || COALESCE(( SELECT jsonb_object_agg(ch.key, ch.value ORDER BY a.recorded_at, a.id) AS jsonb_object_agg
                   FROM public.incident_amendments a
                     CROSS JOIN LATERAL jsonb_each(a.changes) ch(key, value)
                  WHERE a.incident_id = i.id), '{}'::jsonb) AS v) c
  WHERE i.category <> 'safeguarding'::text;
grant select on table reporting.incidents to camp_reporting_care;
comment on view reporting.incidents is 'Care data (roles granted --care only; others get permission denied): incidents with their current values (amendments applied), the participants they name and how many amendments they have. Safeguarding incidents are never here: only safeguarding leads read them, through the API.';

create view reporting.instance_counts with (security_invoker=true) as
 SELECT i.id AS instance_id,
    i.name AS instance_name,
    i.status AS instance_status,
    i.start_date,
    i.end_date,
    COALESCE(c.participants, 0::bigint) AS participants,
    COALESCE(c.active, 0::bigint) AS active,
    COALESCE(c.inactive, 0::bigint) AS inactive,
    COALESCE(c.male, 0::bigint) AS male,
    COALESCE(c.female, 0::bigint) AS female,
    COALESCE(c.other_gender, 0::bigint) AS other_gender,
    COALESCE(c.gender_unknown, 0::bigint) AS gender_unknown,
    COALESCE(c.without_supergroup, 0::bigint) AS without_supergroup,
    COALESCE(c.without_subgroup, 0::bigint) AS without_subgroup,
    COALESCE(c.without_room, 0::bigint) AS without_room
   FROM public.instances i
     LEFT JOIN ( SELECT p.instance_id,
            count(*) AS participants,
            count(*) FILTER (WHERE p.status = 'active'::text) AS active,
            count(*) FILTER (WHERE p.status = 'inactive'::text) AS inactive,
            count(*) FILTER (WHERE p.gender = 'Male'::text) AS male,
            count(*) FILTER (WHERE p.gender = 'Female'::text) AS female,
            count(*) FILTER (WHERE p.gender = 'Other'::text) AS other_gender,
            count(*) FILTER (WHERE p.gender IS NULL) AS gender_unknown,
            count(*) FILTER (WHERE p.super_group_id IS NULL) AS without_supergroup,
            count(*) FILTER (WHERE p.sub_group_id IS NULL) AS without_subgroup,
            count(*) FILTER (WHERE p.room_id IS NULL) AS without_room
           FROM public.participants p
          WHERE p.deleted_at IS NULL
          GROUP BY p.instance_id) c ON c.instance_id = i.id
  WHERE i.deleted_at IS NULL;
grant select on table reporting.instance_counts to authenticated;
grant select on table reporting.instance_counts to camp_reporting;
comment on view reporting.instance_counts is 'One row per live instance (also those without participants): live participants by status and by gender, and how many have no supergroup, subgroup or room.';

create view reporting.medication_administrations with (security_invoker=true) as
 SELECT a.id,
    a.participant_id,
    p.instance_id,
    p.full_name AS participant_name,
    a.medication_id,
    a.medication_name,
    a.outcome,
    a.administered_at,
    a.due_at,
    a.dose_given,
    a.notes,
    a.amends,
    a.reason,
    a.override_reason,
    NOT (EXISTS ( SELECT
           FROM public.medication_administrations c
          WHERE c.amends = a.id)) AS current,
    a.recorded_by,
    a.recorded_by_email,
    a.recorded_at,
    a.retained_until
   FROM public.medication_administrations a
     LEFT JOIN public.participants p ON p.id = a.participant_id;
grant select on table reporting.medication_administrations to camp_reporting_care;
comment on view reporting.medication_administrations is 'Care data (roles granted --care only; others get permission denied): every dose charted (given, refused, missed, held, unavailable), with its participant and instance, who charted it and when; a correction names what it amends (amends, reason) and current is false for an entry a correction amends. Entries kept after their participant''s erasure (the tenant''s health retention period) have no participant, medication, notes or reasons, and say until when they are kept (retained_until).';

create view reporting.participant_care with (security_invoker=true) as
 SELECT r.id AS participant_id,
    p.instance_id,
    p.full_name AS participant_name,
    r.allergies,
    r.severe_allergy,
    r.dietary_requirements,
    r.medical_conditions,
    COALESCE(( SELECT jsonb_agg(jsonb_build_object('name', m.name, 'dose', m.dose, 'schedule', private.medication_schedule_text(m.*)) ORDER BY m.created_at, m.id) AS jsonb_agg
           FROM public.participant_medications m
          WHERE m.participant_id = r.id AND m.deleted_at IS NULL), '[]'::jsonb) AS medications,
    r.care_notes,
    r.created_at,
    r.updated_at
   FROM public.participant_care r
     JOIN public.participants p ON p.id = r.id AND p.deleted_at IS NULL;
grant select on table reporting.participant_care to camp_reporting;
comment on view reporting.participant_care is 'Care data (roles granted --care only): allergies [{name, severity}], dietary requirements, medical conditions, medications [{name, dose, schedule}] (from reporting.participant_medications) and care notes of live participants.';

create view reporting.participant_consents with (security_invoker=true) as
 SELECT c.id,
    c.participant_id,
    p.instance_id,
    p.full_name AS participant_name,
    c.kind,
    c.status,
    c.note,
    c.recorded_by,
    c.recorded_by_email,
    c.recorded_at,
    c.seq = max(c.seq) OVER (PARTITION BY c.participant_id, c.kind) AS current
   FROM public.participant_consents c
     JOIN public.participants p ON p.id = c.participant_id AND p.deleted_at IS NULL;
grant select on table reporting.participant_consents to camp_reporting_care;
comment on view reporting.participant_consents is 'Care data (roles granted --care only; others get permission denied): the history of consent answers of live participants; current is true for the answer in force of each kind.';

create view reporting.participant_contacts with (security_invoker=true) as
 SELECT c.id,
    c.participant_id,
    p.instance_id,
    p.full_name AS participant_name,
    c.name,
    c.relationship,
    c.phone,
    c.phone_alt,
    c.email,
    c.emergency,
    c.emergency_order,
    c.authorised_pickup,
    c.notes,
    c.created_at,
    c.updated_at
   FROM public.participant_contacts c
     JOIN public.participants p ON p.id = c.participant_id AND p.deleted_at IS NULL
  WHERE c.deleted_at IS NULL;
grant select on table reporting.participant_contacts to camp_reporting_care;
comment on view reporting.participant_contacts is 'Care data (roles granted --care only; others get permission denied): the contacts of live participants; emergency contacts by emergency_order.';

create view reporting.participant_medications with (security_invoker=true) as
 SELECT m.id,
    m.participant_id,
    p.instance_id,
    p.full_name AS participant_name,
    m.name,
    m.dose,
    m.route,
    m.instructions,
    m.start_date,
    m.end_date,
    m.times,
    m.prn,
    m.min_interval_hours,
    m.max_doses_per_24h,
    m.created_at,
    m.updated_at
   FROM public.participant_medications m
     JOIN public.participants p ON p.id = m.participant_id AND p.deleted_at IS NULL
  WHERE m.deleted_at IS NULL;
grant select on table reporting.participant_medications to camp_reporting;
comment on view reporting.participant_medications is 'Care data (roles granted --care only): the live medications of live participants; times are local to the instance''s time zone.';

create view reporting.participants with (security_invoker=true) as
 SELECT p.id,
    p.instance_id,
    i.name AS instance_name,
    p.user_id,
    p.first_name,
    p.surname,
    p.full_name,
    p.gender,
    p.status,
    p.date_of_birth,
    date_part('year'::text, age(i.start_date::timestamp without time zone, p.date_of_birth::timestamp without time zone))::integer AS age_at_start,
    p.school_year,
    p.rank,
    p.unit_name,
    p.school_institute,
    p.arrival_date,
    p.departure_date,
    p.super_group_id,
    sg.name AS supergroup_name,
    p.sub_group_id,
    sub.name AS subgroup_name,
    p.block_id,
    b.name AS block_name,
    p.room_id,
    COALESCE(r.room_number, p.room_number) AS room_number,
    r.name AS room_name,
    p.created_at,
    p.updated_at
   FROM public.participants p
     JOIN public.instances i ON i.id = p.instance_id AND i.deleted_at IS NULL
     LEFT JOIN public.supergroups sg ON sg.id = p.super_group_id AND sg.deleted_at IS NULL
     LEFT JOIN public.subgroups sub ON sub.id = p.sub_group_id AND sub.deleted_at IS NULL
     LEFT JOIN public.blocks b ON b.id = p.block_id AND b.deleted_at IS NULL
     LEFT JOIN public.rooms r ON r.id = p.room_id AND r.deleted_at IS NULL
  WHERE p.deleted_at IS NULL;
grant select on table reporting.participants to authenticated;
grant select on table reporting.participants to camp_reporting;
comment on view reporting.participants is 'Live participants of live instances, with their instance, supergroup, subgroup, block and room names.';

create view reporting.presence with (security_invoker=true) as
 SELECT p.id AS participant_id,
    p.instance_id,
    i.name AS instance_name,
    p.full_name AS participant_name,
    p.presence,
    p.presence_since,
    sg.name AS supergroup_name,
    sub.name AS subgroup_name,
    b.name AS block_name,
    COALESCE(r.room_number, p.room_number) AS room_number
   FROM public.participants p
     JOIN public.instances i ON i.id = p.instance_id AND i.deleted_at IS NULL
     LEFT JOIN public.supergroups sg ON sg.id = p.super_group_id AND sg.deleted_at IS NULL
     LEFT JOIN public.subgroups sub ON sub.id = p.sub_group_id AND sub.deleted_at IS NULL
     LEFT JOIN public.blocks b ON b.id = p.block_id AND b.deleted_at IS NULL
     LEFT JOIN public.rooms r ON r.id = p.room_id AND r.deleted_at IS NULL
  WHERE p.deleted_at IS NULL;
grant select on table reporting.presence to authenticated;
grant select on table reporting.presence to camp_reporting;
comment on view reporting.presence is 'Who is here now: every live participant of a live instance with its presence (in, out, null when never recorded) and presence_since, the recorded_at of its last movement; group by instance, supergroup or room to count.';

create view reporting.room_occupancy with (security_invoker=true) as
 SELECT r.instance_id,
    i.name AS instance_name,
    r.block_id,
    b.name AS block_name,
    r.id AS room_id,
    r.room_number,
    r.name AS room_name,
    r.capacity,
    COALESCE(c.occupants, 0::bigint) AS occupants,
        CASE
            WHEN r.capacity IS NOT NULL THEN GREATEST(r.capacity - COALESCE(c.occupants, 0::bigint), 0::bigint)
            ELSE NULL::bigint
        END AS free_places,
    COALESCE(c.occupants, 0::bigint) > r.capacity AS over_capacity
   FROM public.rooms r
     JOIN public.blocks b ON b.id = r.block_id AND b.deleted_at IS NULL
     JOIN public.instances i ON i.id = r.instance_id AND i.deleted_at IS NULL
     LEFT JOIN ( SELECT p.room_id,
            count(*) AS occupants
           FROM public.participants p
          WHERE p.deleted_at IS NULL AND p.room_id IS NOT NULL
          GROUP BY p.room_id) c ON c.room_id = r.id
  WHERE r.deleted_at IS NULL;
grant select on table reporting.room_occupancy to authenticated;
grant select on table reporting.room_occupancy to camp_reporting;
comment on view reporting.room_occupancy is 'One row per live room: live participants assigned to it against its capacity.';

create view reporting.subgroup_counts with (security_invoker=true) as
 SELECT s.instance_id,
    i.name AS instance_name,
    s.parent_supergroup_id AS supergroup_id,
    sg.name AS supergroup_name,
    s.id AS subgroup_id,
    s.name AS subgroup_name,
    s.type,
    COALESCE(c.participants, 0::bigint) AS participants,
    COALESCE(c.active, 0::bigint) AS active,
    COALESCE(c.inactive, 0::bigint) AS inactive,
    COALESCE(c.male, 0::bigint) AS male,
    COALESCE(c.female, 0::bigint) AS female,
    COALESCE(c.other_gender, 0::bigint) AS other_gender,
    COALESCE(c.gender_unknown, 0::bigint) AS gender_unknown
   FROM public.subgroups s
     JOIN public.supergroups sg ON sg.id = s.parent_supergroup_id AND sg.deleted_at IS NULL
     JOIN public.instances i ON i.id = s.instance_id AND i.deleted_at IS NULL
     LEFT JOIN ( SELECT p.sub_group_id,
            count(*) AS participants,
            count(*) FILTER (WHERE p.status = 'active'::text) AS active,
            count(*) FILTER (WHERE p.status = 'inactive'::text) AS inactive,
            count(*) FILTER (WHERE p.gender = 'Male'::text) AS male,
            count(*) FILTER (WHERE p.gender = 'Female'::text) AS female,
            count(*) FILTER (WHERE p.gender = 'Other'::text) AS other_gender,
            count(*) FILTER (WHERE p.gender IS NULL) AS gender_unknown
           FROM public.participants p
          WHERE p.deleted_at IS NULL AND p.sub_group_id IS NOT NULL
          GROUP BY p.sub_group_id) c ON c.sub_group_id = s.id
  WHERE s.deleted_at IS NULL;
grant select on table reporting.subgroup_counts to authenticated;
grant select on table reporting.subgroup_counts to camp_reporting;
comment on view reporting.subgroup_counts is 'One row per live subgroup (also empty ones), with its supergroup: its live participants by status and by gender.';

create view reporting.supergroup_counts with (security_invoker=true) as
 SELECT sg.instance_id,
    i.name AS instance_name,
    sg.id AS supergroup_id,
    sg.name AS supergroup_name,
    sg.type,
    COALESCE(s.subgroups, 0::bigint) AS subgroups,
    COALESCE(c.participants, 0::bigint) AS participants,
    COALESCE(c.active, 0::bigint) AS active,
    COALESCE(c.inactive, 0::bigint) AS inactive,
    COALESCE(c.male, 0::bigint) AS male,
    COALESCE(c.female, 0::bigint) AS female,
    COALESCE(c.other_gender, 0::bigint) AS other_gender,
    COALESCE(c.gender_unknown, 0::bigint) AS gender_unknown
   FROM public.supergroups sg
     JOIN public.instances i ON i.id = sg.instance_id AND i.deleted_at IS NULL
     LEFT JOIN ( SELECT subgroups.parent_supergroup_id,
            count(*) AS subgroups
           FROM public.subgroups
          WHERE subgroups.deleted_at IS NULL
          GROUP BY subgroups.parent_supergroup_id) s ON s.parent_supergroup_id = sg.id
     LEFT JOIN ( SELECT p.super_group_id,
            count(*) AS participants,
            count(*) FILTER (WHERE p.status = 'active'::text) AS active,
            count(*) FILTER (WHERE p.status = 'inactive'::text) AS inactive,
            count(*) FILTER (WHERE p.gender = 'Male'::text) AS male,
            count(*) FILTER (WHERE p.gender = 'Female'::text) AS female,
            count(*) FILTER (WHERE p.gender = 'Other'::text) AS other_gender,
            count(*) FILTER (WHERE p.gender IS NULL) AS gender_unknown
           FROM public.participants p
          WHERE p.deleted_at IS NULL AND p.super_group_id IS NOT NULL
          GROUP BY p.super_group_id) c ON c.super_group_id = sg.id
  WHERE sg.deleted_at IS NULL;
grant select on table reporting.supergroup_counts to authenticated;
grant select on table reporting.supergroup_counts to camp_reporting;
comment on view reporting.supergroup_counts is 'One row per live supergroup (also empty ones): its live subgroups, and its live participants by status and by gender.';
