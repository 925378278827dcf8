-- =============================================================================
-- Health centre, part 4b: incidents at erasure, with and without a retention
-- period, and the erased child's name out of the incidents' text
--
-- An incident names children by link (incident_participants), but its text
-- (description, actions taken, location, who told the guardians, the
-- amendments' values and reasons) may name them too. Erasing a child:
--   * removes its links, and writes "[erased]" over each of its names
--     (first name, surname, full name, whole words, any case) in the text of
--     every incident it was linked to, that incident's amendments and their
--     audit values: an incident shared with other children stays, without
--     the erased child;
--   * an incident left with no participant goes (*_incidents.sql), unless
--     the tenant keeps health and incident records for a period: then it
--     stays, detached from any name, until retained_until, and the retention
--     sweep deletes it (private.sweep_retained_incidents).
-- The retention period's own migration calls
-- private.retain_incidents_of_participant from its erasure step (before the
-- participant's row is blanked) and private.sweep_retained_incidents from its
-- sweep.
-- =============================================================================

-- p_text with each of p_names (whole words, any case) replaced by [erased].
-- Names shorter than two characters are left alone (they would blank letters).
create function private.scrub_names(p_text text, p_names text[]) returns text
  language sql
  immutable
  set search_path = ''
as $$
  select case when p_text is null then null else (
    select coalesce(
      (select regexp_replace(p_text,
                             '\m(' || string_agg(regexp_replace(n, '([.\\+*?\[^\]$(){}=!<>|:#/-])', '\\\1', 'g'), '|'
                                                 order by char_length(n) desc) || ')\M',
                             '[erased]', 'gi')
       from unnest(p_names) n
       where char_length(btrim(n)) >= 2),
      p_text)) end
$$;

-- A jsonb value with every string in it scrubbed.
create function private.scrub_names_json(p_value jsonb, p_names text[]) returns jsonb
  language sql
  immutable
  set search_path = ''
as $$
  select case jsonb_typeof(p_value)
    when 'string' then to_jsonb(private.scrub_names(p_value #>> '{}', p_names))
    when 'array' then (select coalesce(jsonb_agg(private.scrub_names_json(e, p_names) order by o), '[]'::jsonb)
                       from jsonb_array_elements(p_value) with ordinality as x(e, o))
    when 'object' then (select coalesce(jsonb_object_agg(k, private.scrub_names_json(v, p_names)), '{}'::jsonb)
                        from jsonb_each(p_value) as x(k, v))
    else p_value end
$$;

-- Writes [erased] over p_names in the text of the incidents, their
-- amendments and their audit events. Runs inside erasure only (it sets the
-- rewrite flags for its own statements).
create function private.scrub_incident_names(p_tenant uuid, p_incidents uuid[], p_names text[]) returns void
  language plpgsql
  security definer
  set search_path = ''
as $$
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
$$;
revoke all on function private.scrub_incident_names(uuid, uuid[], text[]) from public;

-- The erasure trigger (as in *_incidents.sql), with the names scrubbed from
-- the incidents that stay: the trigger sees the names in OLD, before the
-- row was blanked.
create or replace function private.erase_incidents_on_erasure() returns trigger
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_linked uuid[];
begin
  v_linked := array(select l.incident_id from public.incident_participants l where l.participant_id = new.id);
  perform private.scrub_incident_names(new.tenant_id, v_linked, array[old.first_name, old.surname, old.full_name]);
  perform private.erase_incidents_of_participant(new.tenant_id, new.id);
  return null;
end
$$;

-- Under a retention period: called by erasure before the participant's row
-- is blanked. Removes the participant's links and scrubs its names from the
-- incidents' text; an incident left with no participant is kept until
-- p_until (retained_until) instead of deleted, its audit values "erased".
-- Returns how many incidents were kept that way.
create function private.retain_incidents_of_participant(p_tenant uuid, p_participant uuid, p_until timestamptz) returns int
  language plpgsql
  security definer
  set search_path = ''
as $$
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
$$;
revoke all on function private.retain_incidents_of_participant(uuid, uuid, timestamptz) from public;

-- The retention sweep's part: kept incidents whose period has ended go, with
-- their amendments. Returns how many incidents it deleted.
create function private.sweep_retained_incidents(p_now timestamptz default now()) returns int
  language plpgsql
  security definer
  set search_path = ''
as $$
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
$$;
revoke all on function private.sweep_retained_incidents(timestamptz) from public;
comment on function private.sweep_retained_incidents(timestamptz) is
  'The retention sweep for incidents: deletes incidents kept (detached) after an erasure once their retained_until has passed.';

create index incidents_retained on public.incidents (retained_until) where retained_until is not null;
alter table public.incidents add constraint incidents_retained_until_check
  check (retained_until is null or retained_until > recorded_at);

-- reporting.incidents without private functions: a reporting role may not
-- use the private schema, which the SQL functions' bodies name. The current
-- values are computed in the view itself, as private.incident_current does.
create or replace view reporting.incidents with (security_invoker = true) as
select i.id, i.instance_id,
       array(select l.participant_id from public.incident_participants l where l.incident_id = i.id order by l.participant_id)
         as participant_ids,
       (c.v ->> 'occurred_at')::timestamptz as occurred_at, c.v ->> 'location' as location, c.v ->> 'category' as category,
       c.v ->> 'severity' as severity, c.v ->> 'description' as description, c.v ->> 'actions_taken' as actions_taken,
       (c.v ->> 'guardian_notified_at')::timestamptz as guardian_notified_at, c.v ->> 'guardian_notified_by' as guardian_notified_by,
       c.v ->> 'status' as status,
       (select count(*)::int from public.incident_amendments a where a.incident_id = i.id) as amendments,
       i.reported_by_email, i.recorded_at
from public.incidents i
cross join lateral (
  select jsonb_build_object(
           'occurred_at', i.occurred_at, 'location', i.location, 'category', i.category, 'severity', i.severity,
           'description', i.description, 'actions_taken', i.actions_taken, 'guardian_notified_at', i.guardian_notified_at,
           'guardian_notified_by', i.guardian_notified_by, 'status', 'open')
         || coalesce((select jsonb_object_agg(ch.key, ch.value order by a.recorded_at, a.id)
                      from public.incident_amendments a cross join lateral jsonb_each(a.changes) ch
                      where a.incident_id = i.id), '{}'::jsonb) as v
) c
where i.category <> 'safeguarding';
