-- =============================================================================
-- The incident list plans each call for its own filters
--
-- private.incidents filters with `v_instance is null or i.instance_id =
-- v_instance` (and the same for the participant). Requests run with
-- plan_cache_mode = force_generic_plan, which reaches PL/pgSQL's statements:
-- a generic plan keeps both sides of each `or`, so no index could serve the
-- total, which read every tenant's incidents (bench:explain at 100,000
-- participants). Planned for the call's own values, the `is null` tests fold
-- away: an instance's or a participant's incidents come through their
-- indexes. A participant's incidents are looked up first, as an array the
-- incidents' primary key serves: a subquery under an `or` is never made a join.
-- Otherwise as in *_incident_list_cost.sql.
-- =============================================================================

create or replace function private.incidents(p jsonb, p_limit int, p_offset int) returns jsonb
  language plpgsql
  security definer
  set search_path = ''
  set jit = off
  set plan_cache_mode = force_custom_plan
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
$$;
