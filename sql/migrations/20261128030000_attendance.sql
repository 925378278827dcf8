-- =============================================================================
-- On site, part 1: check-in, check-out and who is here now
--
-- A movement (a participant checked in or out) is a record of something that
-- happened: never updated by a caller, never deleted but by erasure. Staff
-- record them one at a time (POST /attendance) or in batches recorded
-- offline (POST /attendance/sync); both go through the doors below, which
-- decide from the request's claims whether the caller may record
-- (private.attendance_access) and hold the pickup rule. The API role holds
-- no write privilege on these tables.
--
-- The timeline rule (DECISIONS.md, "On site and health centre"): movements
-- are ordered by (recorded_at, nonce), the device's clock and the client's
-- nonce, never by arrival. A participant's presence is the direction of the
-- last movement in that order, and a movement is a conflict when it
-- contradicts its predecessor in that order (an out after an out, an out
-- with nothing before it, a security code that is not the check-in's). Both
-- are recomputed from the whole timeline whenever a movement is added
-- (private.attendance_settle), so the same set of movements gives the same
-- history and presence whatever order they arrived in.
-- =============================================================================

-- -----------------------------------------------------------------------------
-- Who may record movements
-- -----------------------------------------------------------------------------

-- 'write' for a Bearer token of an active user (the user may do everything
-- its role allows) and for a live key with the write or attendance scope;
-- 'read' for a live key with read only; 'none' otherwise (no claims, an
-- unknown user, a dead key). From the rows the claims name, never from a
-- claim of scopes.
create function private.attendance_access() returns text
  language plpgsql
  stable
  security definer
  set search_path = ''
as $$
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
$$;
comment on function private.attendance_access() is
  'The caller''s access to movements and roll calls (none, read, write): a Bearer token of an active user, or a live key with the write or attendance scope, records; a read key reads.';
revoke all on function private.attendance_access() from public;
grant execute on function private.attendance_access() to camp_api;

-- Whether the claims' user is an active admin of the claims' tenant (by the
-- users table, not by a claim of role): only admins override a pickup.
create function private.caller_is_admin() returns boolean
  language sql
  stable
  security definer
  set search_path = ''
as $$
  select exists (
    select from public.users u
    where u.id = (private.audit_actor() ->> 'sub')::uuid
      and u.tenant_id = private.request_tenant_id() and u.role = 'admin' and u.active)
$$;
revoke all on function private.caller_is_admin() from public;
grant execute on function private.caller_is_admin() to camp_api;

-- -----------------------------------------------------------------------------
-- Tables
-- -----------------------------------------------------------------------------

-- One check-in or check-out, as the device recorded it.
create table public.attendance_movements (
  id                uuid primary key default gen_random_uuid(),
  tenant_id         uuid not null default private.request_tenant_id(),
  -- The participant's instance when the movement was recorded (lists filter by it).
  instance_id       uuid not null,
  participant_id    uuid not null,
  direction         text not null constraint attendance_movements_direction_check check (direction in ('in', 'out')),
  -- The device's clock: the timeline's order. received_at is the service's.
  recorded_at       timestamptz not null,
  received_at       timestamptz not null default now(),
  -- The user whose credential recorded it (null: an operator).
  recorded_by       uuid,
  location          text constraint attendance_movements_location_check check (char_length(location) <= 200),
  -- The contact who collected the participant (a check-out), checked by the door when recorded.
  pickup_contact_id uuid,
  -- An admin's reason for a check-out without an authorised pickup.
  override_reason   text constraint attendance_movements_override_reason_check
                    check (char_length(btrim(override_reason)) between 1 and 2000),
  -- The client's id of the record: a second upload with it is a duplicate.
  nonce             uuid not null,
  -- Why the movement contradicts its predecessor in the timeline (null: it does not).
  conflict_reason   text,
  conflict          boolean not null generated always as (conflict_reason is not null) stored,
  constraint attendance_movements_nonce_key unique (tenant_id, nonce),
  constraint attendance_movements_override_check check (override_reason is null or direction = 'out'),
  constraint attendance_movements_participant_id_fkey foreign key (tenant_id, participant_id)
    references public.participants (tenant_id, id)
);
create index attendance_movements_timeline on public.attendance_movements (participant_id, recorded_at, nonce);
create index attendance_movements_by_instance on public.attendance_movements (instance_id, recorded_at, nonce);
create index attendance_movements_by_tenant on public.attendance_movements (tenant_id, recorded_at, nonce);
comment on table public.attendance_movements is
  'Check-ins and check-outs, append-only (only erasure removes rows): the device''s recorded_at orders them, conflict_reason says when one contradicts its predecessor. Written only through private.attendance_record.';

-- Security codes: the one a check-in issued, and the one a check-out
-- presented. Apart from the movements so that neither the audit trail nor a
-- reader of movements ever sees them; nobody but the doors reads them.
create table public.attendance_codes (
  movement_id uuid primary key references public.attendance_movements (id) on delete cascade,
  tenant_id   uuid not null default private.request_tenant_id(),
  code        text not null constraint attendance_codes_code_check check (code ~ '^[A-Z0-9]{4,8}$')
);
comment on table public.attendance_codes is
  'The security code a check-in issued or a check-out presented. Read only by the attendance doors; never returned but once, in the check-in''s answer.';

-- Who is here now, on the participant itself (so its reads, list filter,
-- ETag and change feed follow): the direction of its last movement in the
-- timeline and that movement's recorded_at. Only the attendance doors set
-- them (participants_guard_presence).
alter table public.participants
  add column presence text constraint participants_presence_check check (presence in ('in', 'out')),
  add column presence_since timestamptz;
comment on column public.participants.presence is
  'in or out: the direction of the participant''s last movement by recorded_at (null: none recorded). Set only by the attendance doors.';
create index participants_presence on public.participants (instance_id, presence) where deleted_at is null;

create function private.guard_presence() returns trigger
  language plpgsql
  set search_path = ''
as $$
begin
  -- The doors run as the migrations' owner; a caller writing participants directly is refused.
  if current_user = 'camp_api' then
    raise exception 'presence is set by check-in and check-out only' using errcode = 'CA400', column = 'presence';
  end if;
  return new;
end
$$;
create trigger participants_guard_presence before update of presence, presence_since on public.participants
  for each row when (new.presence is distinct from old.presence or new.presence_since is distinct from old.presence_since)
  execute function private.guard_presence();
create trigger participants_guard_presence_insert before insert on public.participants
  for each row when (new.presence is not null or new.presence_since is not null)
  execute function private.guard_presence();

-- Erasure clears the presence in the erasing update itself (a later update would be an event of its own).
create function private.clear_presence_of_erased() returns trigger
  language plpgsql
  set search_path = ''
as $$
begin
  new.presence := null;
  new.presence_since := null;
  return new;
end
$$;
create trigger participants_erase_presence before update of erased_at on public.participants
  for each row when (old.erased_at is null and new.erased_at is not null)
  execute function private.clear_presence_of_erased();

-- The code of each present participant's check-in, when the service issued
-- one: unique among the instance's present participants.
create table public.attendance_present_codes (
  participant_id uuid primary key,
  tenant_id      uuid not null,
  instance_id    uuid not null,
  movement_id    uuid not null references public.attendance_movements (id) on delete cascade,
  code           text not null,
  constraint attendance_present_codes_code_key unique (instance_id, code),
  constraint attendance_present_codes_participant_id_fkey foreign key (tenant_id, participant_id)
    references public.participants (tenant_id, id)
);
create index attendance_present_codes_tenant_id on public.attendance_present_codes (tenant_id);
comment on table public.attendance_present_codes is
  'The security code of each present participant''s check-in, unique within the instance; maintained by the attendance doors, read by nobody else.';

alter table public.attendance_movements enable row level security;
alter table public.attendance_codes enable row level security;
alter table public.attendance_present_codes enable row level security;

create policy "API callers read the movements of their tenant" on public.attendance_movements
  for select to camp_api
  using (tenant_id = (select private.request_tenant_id()));
grant select on public.attendance_movements to camp_api;

-- attendance_codes and attendance_present_codes: no policy and no grant for
-- the API role. A code proves who holds the guardian's slip.

-- Supabase's default grants to anon and authenticated on new tables in public.
revoke all on public.attendance_movements, public.attendance_codes, public.attendance_present_codes from anon, authenticated;

-- No movement outlives an erasure (*_erasure_holds.sql): each write holds
-- the participant's row, and erasure deletes them (below). The doors lock the
-- row themselves first, so these only confirm it.
create trigger attendance_movements_hold_live_participant
  before insert or update on public.attendance_movements
  for each row execute function private.hold_live_participant();
create trigger attendance_present_codes_hold_live_participant
  before insert or update on public.attendance_present_codes
  for each row execute function private.hold_live_participant();

-- Every movement and its later conflict flag are in the audit trail.
create trigger attendance_movements_audit_insert after insert on public.attendance_movements
  referencing new table as new_rows for each statement execute function private.audit_changes('movement');
create trigger attendance_movements_audit_update after update on public.attendance_movements
  referencing old table as old_rows new table as new_rows for each statement execute function private.audit_changes('movement');

-- -----------------------------------------------------------------------------
-- The timeline
-- -----------------------------------------------------------------------------

-- Judges every movement of the participant against its predecessor in
-- (recorded_at, nonce) order and sets the presence from the last one. Only
-- rows whose judgement changed are written.
create function private.attendance_settle(p_participant uuid) returns void
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_last record;
  v_instance uuid;
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
  update public.attendance_movements m set conflict_reason = j.reason
  from judged j
  where m.id = j.id and j.reason is distinct from j.was;

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
$$;
revoke all on function private.attendance_settle(uuid) from public;

-- A short code for the guardian's slip, without letters and digits that
-- read alike (0/O, 1/I/L, 2/Z, 5/S, 6/G, 8/B).
create function private.new_security_code() returns text
  language sql
  volatile
  set search_path = ''
as $$
  select string_agg(substr('ACDEFHJKMNPQRTUVWXY3479', 1 + floor(random() * 23)::int, 1), '')
  from generate_series(1, 4)
$$;
revoke all on function private.new_security_code() from public;

-- A movement as the API writes it.
create function private.movement_json(m public.attendance_movements) returns jsonb
  language sql
  stable
  set search_path = ''
as $$
  select jsonb_build_object(
    'id', m.id, 'participant_id', m.participant_id, 'instance_id', m.instance_id, 'direction', m.direction,
    'recorded_at', private.iso_time(m.recorded_at), 'received_at', private.iso_time(m.received_at),
    'recorded_by', m.recorded_by, 'location', m.location, 'pickup_contact_id', m.pickup_contact_id,
    'override_reason', m.override_reason, 'nonce', m.nonce, 'conflict', m.conflict, 'conflict_reason', m.conflict_reason)
$$;
grant execute on function private.movement_json(public.attendance_movements) to camp_api;

-- -----------------------------------------------------------------------------
-- The door: one movement
-- -----------------------------------------------------------------------------

-- Records one movement p = {participant_id, direction, recorded_at?,
-- location?, pickup_contact_id?, security_code?, override_reason?, nonce?}.
--
-- p_sync false (POST /attendance): a refusal raises (CA400, CA403, CA404,
-- CA409) and nothing is kept; the movement must not contradict the current
-- presence nor be recorded before the participant's last movement, and a
-- check-in gets a security code. Answers {outcome: "accepted", movement,
-- security_code}.
--
-- p_sync true (one record of POST /attendance/sync): never raises for the
-- record's content; answers {outcome, reason?, movement?} with outcome
-- accepted, duplicate (the nonce is stored already), conflict (kept, and
-- flagged in the history) or invalid (not kept). A record is judged against
-- the timeline by its recorded_at, wherever that falls.
--
-- Either way, a check-out names a live contact of that participant with
-- authorised_pickup, or carries an admin's override_reason; a check-in of a
-- soft-deleted participant or in an archived instance is refused.
create function private.attendance_record(p jsonb, p_sync boolean) returns jsonb
  language plpgsql
  security definer
  set search_path = ''
as $$
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
$$;
revoke all on function private.attendance_record(jsonb, boolean) from public;
grant execute on function private.attendance_record(jsonb, boolean) to camp_api;

-- -----------------------------------------------------------------------------
-- Erasure takes the movements with it
-- -----------------------------------------------------------------------------

-- When private.erase_participant erases a participant, its movements (and
-- their codes) and presence go, and the values of their audit events are
-- replaced by "erased", in the same transaction. A movement being recorded
-- meanwhile holds the participant's row (attendance_record locks it), so it
-- either committed before (and is deleted here) or finds the participant
-- erased.
create function private.erase_attendance_of_participant() returns trigger
  language plpgsql
  security definer
  set search_path = ''
as $$
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
$$;
revoke all on function private.erase_attendance_of_participant() from public;

create trigger participants_erase_attendance after update of erased_at on public.participants
  for each row when (old.erased_at is null and new.erased_at is not null)
  execute function private.erase_attendance_of_participant();
