-- =============================================================================
-- Incidents kept for the retention period too (issue 42, item 6)
--
-- The incident report's own detaching and sweeping (*_incident_retention.sql:
-- private.retain_incidents_of_participant, private.sweep_retained_incidents)
-- joins the health records' (*_health_retention.sql): erasure under a
-- retention period keeps the incidents left with no participant, detached,
-- and answers how many; the sweep deletes them when the period ends. This
-- migration sorts after both, so it is the one that joins them.
-- =============================================================================

create or replace function private.retain_health_records(p_tenant uuid, p_participant uuid, p_until timestamptz) returns jsonb
  language plpgsql
  security definer
  set search_path = ''
as $$
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
$$;
revoke all on function private.retain_health_records(uuid, uuid, timestamptz) from public;

create or replace function private.sweep_retained_health_records(p_now timestamptz default now()) returns int
  language plpgsql
  security definer
  set search_path = ''
as $$
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
$$;
revoke all on function private.sweep_retained_health_records(timestamptz) from public;
comment on function private.sweep_retained_health_records(timestamptz) is
  'The retention sweep: deletes the medication administration entries and incidents of erased participants kept past their tenant''s retention period; returns how many of both. Run by the webhook workers'' hourly housekeeping and by camp health sweep.';
