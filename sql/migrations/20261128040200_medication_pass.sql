-- =============================================================================
-- Health centre, part 3: the medication pass and overdue doses
--
-- A scheduled medication is due at each of its times of day, in its
-- instance's time zone, on every local day between its start and end dates.
-- The pass lists the doses due in a window around a moment for every live
-- participant of an instance, each with its state:
--   * charted: an entry that stands (no correction amends it) charts that
--     dose (due_at, set when it was charted, *_medication_administrations.sql);
--   * overdue: not charted, and the grace period (60 minutes) after its due
--     time has passed;
--   * due: otherwise.
-- An overdue dose raises one event, medication.overdue (thin: the
-- medication's id), written by a sweep (private.raise_overdue_doses, run by
-- the webhook worker every minute and by `camp health sweep`). Raising is
-- idempotent: a dose is raised once, recorded in private.overdue_doses.
-- =============================================================================

-- The doses due between p_from and p_to of the scheduled, live medications
-- of the instance's live participants (or of every tenant's instances when
-- p_instance is null, for the sweep), with the entry that charts each.
-- Runs as its caller's owner: the pass door and the sweep, both security definer.
create function private.scheduled_doses(p_instance uuid, p_from timestamptz, p_to timestamptz)
  returns table (tenant_id uuid, instance_id uuid, participant_id uuid, participant_name text, medication_id uuid,
                 medication_name text, dose text, route text, due_at timestamptz, entry public.medication_administrations)
  language sql
  stable
  set search_path = ''
as $$
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
$$;
revoke all on function private.scheduled_doses(uuid, timestamptz, timestamptz) from public;

-- The pass: the instance's doses due within p_window_minutes either side of
-- p_at, in due order. Care read access; every participant listed is recorded
-- as a care read (resource medications) in the reading transaction.
create function private.medication_pass(p_instance uuid, p_at timestamptz, p_window_minutes int) returns jsonb
  language plpgsql
  security definer
  set search_path = ''
as $$
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
$$;
revoke all on function private.medication_pass(uuid, timestamptz, int) from public;
grant execute on function private.medication_pass(uuid, timestamptz, int) to camp_api;

-- -----------------------------------------------------------------------------
-- Overdue doses: one event each
-- -----------------------------------------------------------------------------

-- The doses raised as overdue: a dose is raised once, whoever sweeps.
create table private.overdue_doses (
  tenant_id     uuid not null references public.tenants (id) on delete cascade,
  medication_id uuid not null,
  due_at        timestamptz not null,
  raised_at     timestamptz not null default now(),
  primary key (medication_id, due_at)
);
comment on table private.overdue_doses is
  'Scheduled doses raised as medication.overdue (one event each); kept 7 days (private.raise_overdue_doses prunes).';

-- Raises every scheduled dose due in the 24 hours before p_now less the grace
-- period that no standing entry charts and that was not raised before: one
-- medication.overdue event each (resource: the medication), in this
-- transaction. Older uncharted doses are not raised (a first sweep after a
-- long pause does not flood the feed). Returns how many it raised.
create function private.raise_overdue_doses(p_now timestamptz default now()) returns int
  language plpgsql
  security definer
  set search_path = ''
as $$
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
$$;
revoke all on function private.raise_overdue_doses(timestamptz) from public;
comment on function private.raise_overdue_doses(timestamptz) is
  'The overdue sweep: one medication.overdue event per scheduled dose left uncharted past its 60-minute grace period (due within the last day), raised once. Run by the webhook worker every minute and by camp health sweep.';
