-- =============================================================================
-- Health centre, part 1: instance time zones and medications as records
--
-- A medication a child takes at camp is a record of its own (what, how much,
-- how, when), so that a dose can be charted against it (part 2) and the
-- medication pass can say what is due (part 3). The care record's
-- `medications` list moves here: each element becomes a record, and the care
-- record answers the list from these records (read-only).
--
-- Medications are care data, held like the care records
-- (*_care_records.sql): camp_api holds no privilege on the table; the doors
-- below (private.medication*) pass private.care_gate (care access, the
-- participant live in the tenant, a write needs a writable instance), record
-- every read in the audit trail, and run as camp_care, whose policies still
-- require the tenant and care access.
-- =============================================================================

-- -----------------------------------------------------------------------------
-- instances.time_zone
-- -----------------------------------------------------------------------------

-- The IANA zone the camp's clock reads in: a medication's `times` are times of
-- day there. Checked against the server's zone database (pg_timezone_names),
-- so Postgres can always convert with it; POSIX strings and abbreviations
-- (`EST`, `UTC+3`) are refused.
alter table public.instances add column time_zone text not null default 'UTC';
comment on column public.instances.time_zone is
  'IANA time zone of the camp (default UTC): medication times are local times there.';

create function private.guard_instance_time_zone() returns trigger
  language plpgsql
  set search_path = ''
as $$
begin
  if new.time_zone <> 'UTC' and (
    new.time_zone !~ '^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+){1,2}$'
    or not exists (select from pg_catalog.pg_timezone_names z where z.name = new.time_zone)
  ) then
    raise exception 'is not an IANA time zone (e.g. Europe/London)' using errcode = 'CA400', column = 'time_zone';
  end if;
  return new;
end
$$;

create trigger instances_guard_time_zone before insert or update of time_zone on public.instances
  for each row execute function private.guard_instance_time_zone();

-- -----------------------------------------------------------------------------
-- participant_medications
-- -----------------------------------------------------------------------------

-- One medication of a participant. A schedule is fixed times of day
-- (`times`, local to the instance's time zone), or as needed (`prn`, with an
-- optional least interval between doses and most doses in any 24 hours), or
-- none (migrated from the care record's free text, kept in instructions).
create table public.participant_medications (
  id                 uuid primary key default gen_random_uuid(),
  tenant_id          uuid not null default private.request_tenant_id(),
  participant_id     uuid not null,
  name               text not null constraint participant_medications_name_check check (char_length(btrim(name)) between 1 and 200),
  dose               text constraint participant_medications_dose_check check (char_length(dose) <= 200),
  route              text constraint participant_medications_route_check check (char_length(route) <= 200),
  instructions       text constraint participant_medications_instructions_check check (char_length(instructions) <= 2000),
  start_date         date,
  end_date           date,
  -- Sorted, distinct 'HH:MM' (the API sorts them).
  times              text[] constraint participant_medications_times_check check (
                       cardinality(times) between 1 and 24
                       and array_to_string(times, ',') ~ '^([01][0-9]|2[0-3]):[0-5][0-9](,([01][0-9]|2[0-3]):[0-5][0-9])*$'),
  prn                boolean not null default false,
  min_interval_hours numeric(5, 2) constraint participant_medications_min_interval_hours_check check (min_interval_hours > 0 and min_interval_hours <= 168),
  max_doses_per_24h  int constraint participant_medications_max_doses_per_24h_check check (max_doses_per_24h between 1 and 48),
  created_at         timestamptz not null default now(),
  updated_at         timestamptz not null default now(),
  deleted_at         timestamptz,
  constraint participant_medications_dates_check check (end_date >= start_date),
  constraint participant_medications_schedule_check check (not (prn and times is not null)),
  constraint participant_medications_prn_limits_check check (prn or (min_interval_hours is null and max_doses_per_24h is null)),
  constraint participant_medications_participant_id_fkey foreign key (tenant_id, participant_id)
    references public.participants (tenant_id, id),
  constraint participant_medications_tenant_id_id_key unique (tenant_id, id)
);
create index participant_medications_by_participant on public.participant_medications (participant_id, created_at, id);
create index participant_medications_scheduled on public.participant_medications (tenant_id) include (participant_id)
  where deleted_at is null and times is not null;
create trigger participant_medications_touch_updated_at before update on public.participant_medications
  for each row execute function private.touch_updated_at();
comment on table public.participant_medications is
  'Medications of a participant: name, dose, route, instructions, dates and schedule (times of day in the instance''s time zone, or as needed). Care data: reached only through private.medication*.';

alter table public.participant_medications enable row level security;
create policy "Care functions read medications with care access" on public.participant_medications
  for select to camp_care
  using (tenant_id = (select private.request_tenant_id()) and (select private.care_access()) in ('read', 'write'));
create policy "Care functions add medications with care write access" on public.participant_medications
  for insert to camp_care
  with check (tenant_id = (select private.request_tenant_id()) and (select private.care_access()) = 'write');
create policy "Care functions change medications with care write access" on public.participant_medications
  for update to camp_care
  using (tenant_id = (select private.request_tenant_id()) and (select private.care_access()) = 'write')
  with check (tenant_id = (select private.request_tenant_id()) and (select private.care_access()) = 'write');
grant select,
  insert (participant_id, name, dose, route, instructions, start_date, end_date, times, prn, min_interval_hours, max_doses_per_24h),
  update (name, dose, route, instructions, start_date, end_date, times, prn, min_interval_hours, max_doses_per_24h, deleted_at)
  on public.participant_medications to camp_care;
revoke all on public.participant_medications from anon, authenticated;

create trigger participant_medications_audit_insert after insert on public.participant_medications
  referencing new table as new_rows for each statement execute function private.audit_changes('medication');
create trigger participant_medications_audit_update after update on public.participant_medications
  referencing old table as old_rows new table as new_rows for each statement execute function private.audit_changes('medication');

create or replace function private.is_care_resource(p_type text) returns boolean
  language sql
  immutable
  set search_path = ''
as $$
  select p_type in ('contact', 'care_record', 'consent', 'contacts', 'consents', 'care_flag', 'medication', 'medications')
$$;

-- -----------------------------------------------------------------------------
-- The care record's medications move into records
-- -----------------------------------------------------------------------------

-- Each {name, dose, schedule} becomes a record; the free-text schedule is kept
-- as its instructions (no times, not as needed: such a medication is never
-- due in a pass until someone gives it a schedule).
insert into public.participant_medications (tenant_id, participant_id, name, dose, instructions, created_at, updated_at)
select r.tenant_id, r.id, left(btrim(m.value ->> 'name'), 200), left(m.value ->> 'dose', 200), left(m.value ->> 'schedule', 2000),
       r.updated_at + (m.ordinality || ' microseconds')::interval, r.updated_at
from public.participant_care r
cross join lateral jsonb_array_elements(r.medications) with ordinality as m(value, ordinality)
where char_length(btrim(coalesce(m.value ->> 'name', ''))) > 0;

drop view reporting.participant_care;
alter table public.participant_care drop column medications;

-- A medication as the care record lists it, as before the move ({name, dose,
-- schedule}, schedule as text), with the record's id.
create function private.medication_schedule_text(m public.participant_medications) returns text
  language sql
  immutable
  set search_path = ''
as $$
  select case when m.prn then 'as needed' when m.times is not null then array_to_string(m.times, ', ') else m.instructions end
$$;
grant execute on function private.medication_schedule_text(public.participant_medications) to camp_care, camp_reporting;

create or replace function private.care_record_json(p_participant uuid, r public.participant_care) returns jsonb
  language sql
  stable
  set search_path = ''
as $$
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
$$;

-- As before, without medications (the API refuses them: they are records now).
create or replace function private.care_record_write(p_participant uuid, p jsonb, p_replace boolean, p_versions text[]) returns jsonb
  language plpgsql
  security definer
  set search_path = ''
as $$
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
$$;

create policy "Reporting roles granted care read their tenant's medications" on public.participant_medications
  for select to camp_reporting
  using (tenant_id = (select private.reporting_tenant_id()) and (select private.reporting_care()));
grant select (id, participant_id, name, dose, route, instructions, start_date, end_date, times, prn, min_interval_hours,
  max_doses_per_24h, created_at, updated_at, deleted_at) on public.participant_medications to camp_reporting;

-- As before: the care record's medications, now from the records.
create view reporting.participant_care with (security_invoker = true) as
select r.id as participant_id, p.instance_id, p.full_name as participant_name, r.allergies, r.severe_allergy,
       r.dietary_requirements, r.medical_conditions,
       coalesce((select jsonb_agg(jsonb_build_object('name', m.name, 'dose', m.dose, 'schedule', private.medication_schedule_text(m))
                                  order by m.created_at, m.id)
                 from public.participant_medications m where m.participant_id = r.id and m.deleted_at is null), '[]'::jsonb)
         as medications,
       r.care_notes, r.created_at, r.updated_at
from public.participant_care r
join public.participants p on p.id = r.id and p.deleted_at is null;
comment on view reporting.participant_care is
  'Care data (roles granted --care only): allergies [{name, severity}], dietary requirements, medical conditions, medications [{name, dose, schedule}] (from reporting.participant_medications) and care notes of live participants.';

create view reporting.participant_medications with (security_invoker = true) as
select m.id, m.participant_id, p.instance_id, p.full_name as participant_name, m.name, m.dose, m.route, m.instructions,
       m.start_date, m.end_date, m.times, m.prn, m.min_interval_hours, m.max_doses_per_24h, m.created_at, m.updated_at
from public.participant_medications m
join public.participants p on p.id = m.participant_id and p.deleted_at is null
where m.deleted_at is null;
comment on view reporting.participant_medications is
  'Care data (roles granted --care only): the live medications of live participants; times are local to the instance''s time zone.';

revoke all on reporting.participant_care, reporting.participant_medications from public, anon, authenticated;
grant select on reporting.participant_care, reporting.participant_medications to camp_reporting;

-- -----------------------------------------------------------------------------
-- The doors
-- -----------------------------------------------------------------------------

create function private.medication_json(m public.participant_medications) returns jsonb
  language sql
  stable
  set search_path = ''
as $$
  select jsonb_build_object(
    'id', m.id, 'participant_id', m.participant_id, 'name', m.name, 'dose', m.dose, 'route', m.route,
    'instructions', m.instructions, 'start_date', m.start_date, 'end_date', m.end_date,
    'times', to_jsonb(m.times), 'prn', m.prn, 'min_interval_hours', m.min_interval_hours::float8,
    'max_doses_per_24h', m.max_doses_per_24h,
    'created_at', private.iso_time(m.created_at), 'updated_at', private.iso_time(m.updated_at),
    'deleted_at', private.iso_time(m.deleted_at))
$$;
grant execute on function private.medication_json(public.participant_medications) to camp_care;

-- A participant's medications in creation order. At most 100 per participant
-- (deleted ones included), so the whole list is small.
create function private.medications(p_participant uuid, p_include_deleted boolean) returns jsonb
  language plpgsql
  security definer
  set search_path = ''
as $$
begin
  perform private.care_gate(p_participant, 'read');
  perform private.audit_care_read('medications', p_participant);
  return (
    select coalesce(jsonb_agg(private.medication_json(m) order by m.created_at, m.id), '[]'::jsonb)
    from public.participant_medications m
    where m.participant_id = p_participant and (p_include_deleted or m.deleted_at is null)
  );
end
$$;

create function private.medication(p_participant uuid, p_medication uuid) returns jsonb
  language plpgsql
  security definer
  set search_path = ''
as $$
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
$$;

create function private.medication_create(p_participant uuid, p jsonb) returns jsonb
  language plpgsql
  security definer
  set search_path = ''
as $$
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
$$;

-- Changes the fields present in p. CA412 when p_versions (an If-Match) no
-- longer matches, CA404 when there is no such live medication.
create function private.medication_update(p_participant uuid, p_medication uuid, p jsonb, p_versions text[]) returns jsonb
  language plpgsql
  security definer
  set search_path = ''
as $$
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
$$;

-- Soft delete: its doses on the record still name it.
create function private.medication_delete(p_participant uuid, p_medication uuid, p_versions text[]) returns void
  language plpgsql
  security definer
  set search_path = ''
as $$
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
$$;

do $$
declare
  f text;
begin
  foreach f in array array[
    'private.medications(uuid, boolean)', 'private.medication(uuid, uuid)', 'private.medication_create(uuid, jsonb)',
    'private.medication_update(uuid, uuid, jsonb, text[])', 'private.medication_delete(uuid, uuid, text[])'
  ]
  loop
    execute format('alter function %s owner to camp_care', f);
    execute format('revoke all on function %s from public', f);
    execute format('grant execute on function %s to camp_api', f);
  end loop;
end
$$;

-- -----------------------------------------------------------------------------
-- Erasure takes the medications with it
-- -----------------------------------------------------------------------------

-- As the care tables (private.erase_care_of_participant): the rows go and
-- the values in their audit events become "erased", in the erasing transaction.
create function private.erase_medications_of_participant() returns trigger
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_ids uuid[];
begin
  v_ids := array(select m.id from public.participant_medications m where m.participant_id = new.id);
  delete from public.participant_medications where participant_id = new.id;
  perform set_config('camp.audit_rewrite', 'on', true);
  update public.audit_events e
  set changes = (
    select coalesce(jsonb_object_agg(f.key, case when e.action = 'create' then '"erased"'::jsonb else '["erased", "erased"]'::jsonb end), '{}')
    from jsonb_each(e.changes) f)
  where e.tenant_id = new.tenant_id
    and e.resource_type = 'medication'
    and e.resource_id = any (v_ids)
    and e.changes <> '{}'::jsonb;
  perform set_config('camp.audit_rewrite', 'off', true);
  return null;
end
$$;

create trigger participants_erase_medications after update of erased_at on public.participants
  for each row when (old.erased_at is null and new.erased_at is not null)
  execute function private.erase_medications_of_participant();
