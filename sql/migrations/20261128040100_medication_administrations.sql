-- =============================================================================
-- Health centre, part 2: the medication administration record
--
-- Every dose charted, given or not (refused, missed, held, unavailable), by
-- whom and when. The record is append-only, held by the database:
--   * camp_api holds no privilege on the table (its way in is the doors
--     below, which only insert and read), and camp_care, the doors' owner,
--     holds SELECT and INSERT only: no UPDATE, DELETE or TRUNCATE grant, and
--     no policy for them;
--   * a trigger refuses every UPDATE, DELETE and TRUNCATE, for every role,
--     the owner included, except erasure's and the retention sweep's own
--     (private.health_records_rewrite(), set by those functions alone for
--     their statement).
-- A correction is a new entry naming the one it amends (`amends`) with a
-- reason; readers see both. An as-needed dose within the medication's least
-- interval, or past its most doses in 24 hours, is refused unless the entry
-- carries an override_reason, which stays on it. A client nonce makes an
-- offline re-upload return the entry already stored.
-- =============================================================================

-- Medications are written while holding their participant (*_erasure_holds.sql).
create trigger participant_medications_hold_live_participant
  before insert or update on public.participant_medications
  for each row execute function private.hold_live_participant();

create table public.medication_administrations (
  id                uuid primary key default gen_random_uuid(),
  tenant_id         uuid not null default private.request_tenant_id(),
  -- Null only once detached from an erased participant whose tenant keeps health records (part 5).
  participant_id    uuid,
  medication_id     uuid,
  -- What was charted, as the medication read then: the entry stays readable when the medication changes or goes.
  medication_name   text not null constraint medication_administrations_medication_name_check check (char_length(medication_name) <= 200),
  outcome           text not null constraint medication_administrations_outcome_check
                    check (outcome in ('given', 'refused', 'missed', 'held', 'unavailable')),
  -- When it happened, by the charting device's clock.
  administered_at   timestamptz not null,
  -- The scheduled dose it charts (a time of the medication's schedule), null for an as-needed one.
  due_at            timestamptz,
  dose_given        text constraint medication_administrations_dose_given_check check (char_length(dose_given) <= 200),
  notes             text constraint medication_administrations_notes_check check (char_length(notes) <= 2000),
  nonce             text constraint medication_administrations_nonce_check check (char_length(nonce) between 1 and 200),
  amends            uuid,
  reason            text constraint medication_administrations_reason_check check (char_length(btrim(reason)) between 1 and 2000),
  override_reason   text constraint medication_administrations_override_reason_check
                    check (char_length(btrim(override_reason)) between 1 and 2000),
  recorded_by       uuid,
  recorded_by_email text,
  recorded_at       timestamptz not null default clock_timestamp(),
  -- Until when a detached entry is kept (part 5); null while it names a participant.
  retained_until    timestamptz,
  constraint medication_administrations_amends_reason_check check ((amends is null) = (reason is null)),
  constraint medication_administrations_participant_id_fkey foreign key (tenant_id, participant_id)
    references public.participants (tenant_id, id),
  constraint medication_administrations_medication_id_fkey foreign key (tenant_id, medication_id)
    references public.participant_medications (tenant_id, id),
  constraint medication_administrations_tenant_id_id_key unique (tenant_id, id),
  constraint medication_administrations_amends_fkey foreign key (tenant_id, amends)
    references public.medication_administrations (tenant_id, id),
  constraint medication_administrations_nonce_key unique (tenant_id, nonce)
);
create index medication_administrations_by_participant on public.medication_administrations (participant_id, recorded_at, id);
create index medication_administrations_by_medication on public.medication_administrations (medication_id, administered_at);
create index medication_administrations_by_due on public.medication_administrations (tenant_id, due_at) where due_at is not null;
create index medication_administrations_amends on public.medication_administrations (amends) where amends is not null;
comment on table public.medication_administrations is
  'The medication administration record: every dose charted (given, refused, missed, held, unavailable), append-only; a correction is a new entry naming what it amends. Care data: reached only through private.medication_administration*.';

-- The one way to change or remove entries: erasure and the retention sweep
-- set it for their own statements. Transaction-local; camp_api and camp_care
-- could set it too, but hold no UPDATE or DELETE privilege on these tables.
create function private.health_records_rewrite() returns boolean
  language sql
  stable
  set search_path = ''
as $$
  select coalesce(current_setting('camp.health_rewrite', true), '') = 'on'
$$;

create function private.guard_append_only() returns trigger
  language plpgsql
  set search_path = ''
as $$
begin
  if not private.health_records_rewrite() then
    raise exception '% is append-only: a correction is a new entry that names what it amends', tg_table_name
      using errcode = '42501';
  end if;
  return case when tg_op = 'DELETE' then old else new end;
end
$$;

create trigger medication_administrations_append_only before update or delete on public.medication_administrations
  for each row execute function private.guard_append_only();
create trigger medication_administrations_no_truncate before truncate on public.medication_administrations
  for each statement execute function private.guard_append_only();
create trigger medication_administrations_hold_live_participant before insert on public.medication_administrations
  for each row execute function private.hold_live_participant();
create trigger medication_administrations_audit_insert after insert on public.medication_administrations
  referencing new table as new_rows for each statement execute function private.audit_changes('medication_administration');

alter table public.medication_administrations enable row level security;
create policy "Care functions read the administration record with care access" on public.medication_administrations
  for select to camp_care
  using (tenant_id = (select private.request_tenant_id()) and (select private.care_access()) in ('read', 'write'));
create policy "Care functions chart doses with care write access" on public.medication_administrations
  for insert to camp_care
  with check (tenant_id = (select private.request_tenant_id()) and (select private.care_access()) = 'write');
grant select, insert (participant_id, medication_id, medication_name, outcome, administered_at, due_at, dose_given, notes, nonce,
  amends, reason, override_reason, recorded_by, recorded_by_email)
  on public.medication_administrations to camp_care;
revoke all on public.medication_administrations from anon, authenticated;

create or replace function private.is_care_resource(p_type text) returns boolean
  language sql
  immutable
  set search_path = ''
as $$
  select p_type in ('contact', 'care_record', 'consent', 'contacts', 'consents', 'care_flag', 'medication', 'medications',
                    'medication_administration', 'medication_administrations')
$$;

-- -----------------------------------------------------------------------------
-- Reading
-- -----------------------------------------------------------------------------

-- An entry as the API writes it, with the entries that amend it (newest
-- last) and whether it stands (current: nothing amends it).
create function private.administration_json(a public.medication_administrations) returns jsonb
  language sql
  stable
  set search_path = ''
as $$
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
$$;
grant execute on function private.administration_json(public.medication_administrations) to camp_care;

-- The entry a chain of corrections starts from, for ordering: a correction
-- is listed right after what it amends.
create function private.administration_root(p_entry uuid) returns uuid
  language sql
  stable
  set search_path = ''
as $$
  with recursive chain(id, amends, depth) as (
    select a.id, a.amends, 0 from public.medication_administrations a where a.id = p_entry
    union all
    select a.id, a.amends, c.depth + 1 from public.medication_administrations a join chain c on a.id = c.amends
    where c.depth < 100
  )
  select id from chain order by depth desc limit 1
$$;
grant execute on function private.administration_root(uuid) to camp_care;

-- A participant's entries, optionally of one medication and within a time
-- range of administered_at, each chain (an entry and its corrections) together,
-- chains in the order their first entry was recorded.
create function private.medication_administrations(p_participant uuid, p_medication uuid, p_from timestamptz, p_to timestamptz)
  returns jsonb
  language plpgsql
  security definer
  set search_path = ''
as $$
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
$$;

create function private.medication_administration(p_participant uuid, p_entry uuid) returns jsonb
  language plpgsql
  security definer
  set search_path = ''
as $$
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
$$;

-- -----------------------------------------------------------------------------
-- Charting
-- -----------------------------------------------------------------------------

-- The scheduled time of day, in the instance's zone, nearest to p_at (within
-- three hours), or null: the dose an entry without due_at charts.
create function private.nearest_due(p_times text[], p_zone text, p_at timestamptz) returns timestamptz
  language sql
  stable
  set search_path = ''
as $$
  select d.due
  from (
    select ((((p_at at time zone p_zone)::date + day_offset) + t::time) at time zone p_zone) as due
    from unnest(p_times) as t, generate_series(-1, 1) as day_offset
  ) d
  where abs(extract(epoch from d.due - p_at)) <= 3 * 3600
  order by abs(extract(epoch from d.due - p_at)), d.due
  limit 1
$$;
grant execute on function private.nearest_due(text[], text, timestamptz) to camp_care;

-- The time zone of a participant's instance (in the claims' tenant). security
-- definer: camp_care reads neither participants nor instances.
create function private.participant_time_zone(p_participant uuid) returns text
  language sql
  stable
  security definer
  set search_path = ''
as $$
  select i.time_zone from public.participants pt join public.instances i on i.id = pt.instance_id
  where pt.id = p_participant and pt.tenant_id = private.request_tenant_id()
$$;
revoke all on function private.participant_time_zone(uuid) from public;
grant execute on function private.participant_time_zone(uuid) to camp_care;

-- Charts one entry from p ({medication_id, outcome, administered_at?, due_at?,
-- dose_given?, notes?, nonce?, amends?, reason?, override_reason?}), by the
-- claims' user. Returns {record, created}: created is false when the nonce
-- was seen before (the entry stored then). Refusals: CA400 naming the field,
-- CA409 (constraint prn_limit, DETAIL the last doses as JSON) for an
-- as-needed dose too soon or too many without override_reason.
create function private.medication_administration_create(p_participant uuid, p jsonb) returns jsonb
  language plpgsql
  security definer
  set search_path = ''
as $$
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
$$;

do $$
declare
  f text;
begin
  foreach f in array array[
    'private.medication_administrations(uuid, uuid, timestamptz, timestamptz)',
    'private.medication_administration(uuid, uuid)',
    'private.medication_administration_create(uuid, jsonb)'
  ]
  loop
    execute format('alter function %s owner to camp_care', f);
    execute format('revoke all on function %s from public', f);
    execute format('grant execute on function %s to camp_api', f);
  end loop;
end
$$;

-- -----------------------------------------------------------------------------
-- Erasure takes the record with it (part 5 adds keeping it, detached)
-- -----------------------------------------------------------------------------

create or replace function private.erase_medications_of_participant() returns trigger
  language plpgsql
  security definer
  set search_path = ''
as $$
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
$$;
