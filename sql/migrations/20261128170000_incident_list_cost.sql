-- =============================================================================
-- Incidents: the list's cost follows its page, not the tenant's incidents
--
-- The list computed every visible incident's current values
-- (private.incident_current) before counting and paging, even with no filter
-- on them, and built each page row with private.incident_json_of. Each of
-- those calls ran its own queries of incident_amendments and
-- incident_participants, and every such query evaluated the tables' policies
-- afresh: their (select private.care_access()) and
-- (select private.is_safeguarding_lead()) are once per statement, and a
-- function called per row is a statement per row. The list's cost grew with
-- the tenant's incidents (bench/features/incidents.ts).
--
-- Now the list counts and pages on the incidents' own columns, and computes
-- current values only for the page, unless a filter reads them (category,
-- severity, status, occurred_*, needs_attention), when it computes them for
-- the candidates. Either way the amendments and participants are read inside
-- the list's one statement, so each policy's checks run once.
-- incident_json_of keeps its shape: it hands its two reads to
-- private.incident_json_from, which the list calls with reads of its own.
--
-- incident_original, incident_json_from and incident_amendment_json are
-- plpgsql: a SQL function that Postgres cannot inline (these pin their
-- search_path) sets up the SQL functions it calls (iso_time,
-- incident_attention) again on every call, while plpgsql keeps them for the
-- transaction. The list turns JIT off for its own statements, as the
-- medication pass does (*_medication_pass_jit.sql): a filter on current
-- values is estimated past jit_above_cost and compiled for far longer than it
-- runs.
-- =============================================================================

-- As before (*_incidents.sql), in plpgsql (see the banner); create or replace keeps its grants.
create or replace function private.incident_original(i public.incidents) returns jsonb
  language plpgsql
  stable
  set search_path = ''
as $$
begin
  return jsonb_build_object(
    'occurred_at', private.iso_time(i.occurred_at), 'location', i.location, 'category', i.category, 'severity', i.severity,
    'description', i.description, 'actions_taken', i.actions_taken,
    'guardian_notified_at', private.iso_time(i.guardian_notified_at), 'guardian_notified_by', i.guardian_notified_by,
    'status', 'open');
end
$$;

-- An incident as the API shows it, from its row, its current values, its
-- participants' ids and its amendments (as jsonb arrays); no query of its own.
create function private.incident_json_from(i public.incidents, p_current jsonb, p_participant_ids jsonb, p_amendments jsonb,
                                           p_hours int, p_now timestamptz) returns jsonb
  language plpgsql
  stable
  set search_path = ''
as $$
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
$$;
revoke all on function private.incident_json_from(public.incidents, jsonb, jsonb, jsonb, int, timestamptz) from public;
grant execute on function private.incident_json_from(public.incidents, jsonb, jsonb, jsonb, int, timestamptz)
  to camp_care, camp_reporting;

-- An amendment as the API shows it (inside an incident's amendments).
create function private.incident_amendment_json(a public.incident_amendments) returns jsonb
  language plpgsql
  stable
  set search_path = ''
as $$
begin
  return jsonb_build_object('id', a.id, 'changes', a.changes, 'reason', a.reason, 'recorded_by', a.recorded_by,
                            'recorded_by_email', a.recorded_by_email, 'recorded_at', private.iso_time(a.recorded_at));
end
$$;
revoke all on function private.incident_amendment_json(public.incident_amendments) from public;
grant execute on function private.incident_amendment_json(public.incident_amendments) to camp_care, camp_reporting;

-- As before (*_incidents.sql); create or replace keeps its grants.
create or replace function private.incident_json_of(i public.incidents, p_current jsonb, p_hours int, p_now timestamptz)
  returns jsonb
  language sql
  stable
  set search_path = ''
as $$
  select private.incident_json_from(
    i, p_current,
    (select jsonb_agg(p.participant_id order by p.participant_id) from public.incident_participants p where p.incident_id = i.id),
    (select jsonb_agg(private.incident_amendment_json(a) order by a.recorded_at, a.id)
     from public.incident_amendments a where a.incident_id = i.id),
    p_hours, p_now)
$$;

-- As before (*_incident_list_reads.sql) for the caller; create or replace
-- keeps its owner (camp_care) and grants. The current values below are
-- private.incident_current's, written out so that they are read in this
-- statement.
create or replace function private.incidents(p jsonb, p_limit int, p_offset int) returns jsonb
  language plpgsql
  security definer
  set search_path = ''
  set jit = off
as $$
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
        and (v_participant is null or i.id in (
              select ip.incident_id from public.incident_participants ip where ip.participant_id = v_participant))
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
      and (v_participant is null or i.id in (
            select ip.incident_id from public.incident_participants ip where ip.participant_id = v_participant));
    v_ids := array(
      select i.id from public.incidents i
      where (v_instance is null or i.instance_id = v_instance)
        and (v_participant is null or i.id in (
              select ip.incident_id from public.incident_participants ip where ip.participant_id = v_participant))
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
$$;
