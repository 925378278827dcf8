-- =============================================================================
-- Incidents: the list records its reads in one statement
--
-- The list recorded each incident on its page as a care read with one insert
-- per incident, and each insert ran the audit trail's statement triggers
-- (the feed's derivation) again: a page of 100 cost 100 inserts
-- (bench/features/incidents.ts). One insert of the page's reads now, as the
-- medication pass does (*_medication_pass.sql). Otherwise as before
-- (*_incident_list_category.sql).
-- =============================================================================

-- The reads of incidents as one insert: p_reads is [[incident id, audit type], ...].
-- security definer: camp_care writes no audit_events itself.
create function private.audit_incident_reads(p_reads jsonb) returns void
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_actor jsonb := private.audit_actor();
begin
  insert into public.audit_events
    (tenant_id, actor_user_id, actor_email, actor_via, actor_key_id, request_id, action, resource_type, resource_id)
  select private.request_tenant_id(), (v_actor ->> 'sub')::uuid, v_actor ->> 'email', coalesce(v_actor ->> 'via', 'operator'),
         (v_actor ->> 'key_id')::uuid, v_actor ->> 'request_id', 'read', r ->> 1, (r ->> 0)::uuid
  from jsonb_array_elements(p_reads) r;
end
$$;
revoke all on function private.audit_incident_reads(jsonb) from public;
grant execute on function private.audit_incident_reads(jsonb) to camp_care;

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
  )
  select jsonb_build_object(
    'total', (select count(*) from matching),
    'rows', coalesce((select jsonb_agg(private.incident_json_of(pg.row, pg.current, v_hours, v_now)
                                       order by pg.recorded_at desc, pg.id desc) from page pg), '[]'::jsonb),
    'read', (select coalesce(jsonb_agg(jsonb_build_array(pg.id, private.incident_audit_type(pg.category))), '[]'::jsonb)
             from page pg))
  into v_found;
  perform private.audit_incident_reads(v_found -> 'read');
  return v_found - 'read';
end
$$;
