-- =============================================================================
-- On site, part 5: events
--
-- A movement becomes participant.checked_in or participant.checked_out (its
-- id the movement's, which names the participant), and closing a roll call
-- becomes roll_call.closed (its id the roll call's, which holds who is
-- missing). Thin like every event: no names, no values; the client reads the
-- record through an authenticated GET. Derived from the audit trail as every
-- other event (*_events.sql), so webhooks deliver them.
-- =============================================================================

create or replace function private.event_type_of(p_resource_type text, p_action text, p_changes jsonb) returns text
  language sql immutable
  set search_path = ''
as $$
  select case
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
  end
$$;
