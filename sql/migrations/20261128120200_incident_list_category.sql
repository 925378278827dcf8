-- =============================================================================
-- Incidents: the list's category filter reads the current category
--
-- An amendment may change an incident's category (between categories other
-- than safeguarding); the list filtered on the category as first reported,
-- while docs/api.md says every value filter reads the current values.
-- As before (*_incidents.sql) otherwise; create or replace keeps its owner
-- (camp_care) and grants.
-- =============================================================================

create or replace function private.incidents(p jsonb, p_limit int, p_offset int) returns jsonb
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
      and (p ->> 'category' is null or cur.value ->> 'category' = p ->> 'category')
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
