-- =============================================================================
-- On site: what a synced record costs (issue 41, bench:attendance)
--
-- A sync of 1,000 records took 6–8 s on the development machine under load,
-- half of the API's 15 s statement timeout: a device uploading a full batch
-- on a busy morning would have been cancelled, and cancelled again on every
-- retry. Per record, most of the time went to work that changed nothing:
--
-- * private.attendance_settle ran its conflict UPDATE for every record,
--   though it mostly changes no row; a statement-level trigger fires for an
--   UPDATE of no rows too, so each record paid an empty audit_changes and an
--   empty derive_events. The UPDATE now runs only when a judgement changed.
-- * private.derive_events called private.event_type_of three times per audit
--   row (the lateral subquery was flattened into the select list and the
--   WHERE clause, and a function with SET search_path is never inlined), and
--   private.event_data_of for every row. The type is now computed once
--   (OFFSET 0 keeps the subquery whole), the figures only for a closed roll
--   call.
--
-- * private.event_type_of was an SQL function that Postgres cannot inline
--   (it sets search_path), so every trigger call planned its body afresh; in
--   PL/pgSQL the plan is kept for the session. The same CASE as before
--   (*_attendance_events.sql).
--
-- Same rules, same answers; figures in bench/README.md.
-- =============================================================================

create or replace function private.attendance_settle(p_participant uuid) returns void
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_last record;
  v_instance uuid;
  v_ids uuid[];
  v_reasons text[];
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
  select array_agg(j.id), array_agg(j.reason) into v_ids, v_reasons
  from judged j
  where j.reason is distinct from j.was;
  if v_ids is not null then
    update public.attendance_movements m set conflict_reason = c.reason
    from unnest(v_ids, v_reasons) as c(id, reason)
    where m.id = c.id;
  end if;

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

create or replace function private.derive_events() returns trigger
  language plpgsql
  security definer
  set search_path = ''
as $$
begin
  insert into public.events (tenant_id, xact_id, id, type, resource_id, occurred_at, data)
  select n.tenant_id, pg_current_xact_id(), n.id, t.type, n.resource_id, n.occurred_at,
         case when t.type = 'roll_call.closed' then private.event_data_of(t.type, n.changes) end
  from new_rows n
  cross join lateral (select private.event_type_of(n.resource_type, n.action, n.changes) as type offset 0) t
  where t.type is not null;
  return null;
end
$$;

create or replace function private.event_type_of(p_resource_type text, p_action text, p_changes jsonb) returns text
  language plpgsql immutable
  set search_path = ''
as $$
begin
  return case
      when p_resource_type = 'movement' then
        case when p_action = 'create' then
          case p_changes ->> 'direction' when 'in' then 'participant.checked_in' when 'out' then 'participant.checked_out' end
        end
      when p_resource_type = 'roll_call' then
        case when p_action = 'update' and p_changes -> 'status' ->> 1 = 'closed' then 'roll_call.closed' end
      when p_resource_type not in ('instance', 'supergroup', 'subgroup', 'block', 'room', 'participant')
        or p_action not in ('create', 'update', 'delete', 'erase') then null
      when p_action = 'erase' and p_resource_type <> 'participant' then null
      when p_resource_type = 'participant' and p_action = 'update' and p_changes ? 'photo_key'
        and not exists (select from jsonb_object_keys(p_changes) k where k not like 'photo\_%')
        then case when p_changes -> 'photo_key' ->> 1 is null then 'photo.removed' else 'photo.replaced' end
      else p_resource_type || '.' || case p_action
        when 'create' then 'created' when 'update' then 'updated' when 'delete' then 'deleted' else 'erased' end
    end;
end
$$;
