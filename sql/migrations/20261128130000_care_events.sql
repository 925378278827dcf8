-- =============================================================================
-- Care events only for callers with care access (issue 42)
--
-- medication.overdue (*_medication_pass.sql) was the first event about care
-- data, and the feed and webhooks served it to every caller of the tenant:
-- thin as it is, it says that a child's medication was not given, and its id
-- is what the care routes answer for. Events whose type is about care data
-- (private.is_care_event: medication.*, incident.*, and the care records'
-- own kinds should they ever raise events) now follow the audit trail's rule
-- for care resources:
--   * the feed (public.events, under RLS) shows them only to a caller with
--     care access (the user's care_access and, with a key, its care scope);
--   * a webhook endpoint gets them only when its `types` names them (an
--     endpoint of every type, types null, gets every other type; a trigger
--     on webhook_deliveries skips the rest), and only a
--     caller with care access may name them or point such an endpoint
--     elsewhere (its url) or turn it back on;
--   * the deliveries of care events are listed only to admins with care access.
-- =============================================================================

-- Whether an event type is about care data. Decided by the type's resource
-- (the part before the dot), so that new care events (incident.* of the
-- incident report) are covered by their name alone.
create function private.is_care_event(p_type text) returns boolean
  language sql
  immutable
  set search_path = ''
as $$
  select split_part(p_type, '.', 1) in
    ('medication', 'medication_administration', 'incident', 'care_record', 'contact', 'consent', 'care_flag')
$$;
revoke all on function private.is_care_event(text) from public;
grant execute on function private.is_care_event(text) to camp_api, camp_care, camp_reporting;
comment on function private.is_care_event(text) is
  'Whether an event type is about care data (medication.*, incident.*, ...): shown in the feed and webhook deliveries only to callers with care access, and sent only to webhook endpoints whose types name it.';

drop policy "API callers read the events of their tenant" on public.events;
create policy "API callers read the events of their tenant" on public.events
  for select to camp_api
  using (tenant_id = (select private.request_tenant_id())
         and (not private.is_care_event(type) or (select private.care_access()) in ('read', 'write')));

drop policy "Admins read the webhook deliveries of their tenant" on public.webhook_deliveries;
create policy "Admins read the webhook deliveries of their tenant" on public.webhook_deliveries
  for select to camp_api
  using (tenant_id = (select private.request_tenant_id()) and (select private.request_app_role()) = 'admin'
         and (not private.is_care_event(event_type) or (select private.care_access()) in ('read', 'write')));

-- An endpoint that names care events may be created, re-aimed (url), given
-- its types or turned back on only by a caller with care access. Turning it
-- off, describing or deleting it is any admin's, and the worker (no caller)
-- disables failing endpoints.
create function private.guard_care_webhook_endpoint() returns trigger
  language plpgsql
  set search_path = ''
as $$
begin
  if new.deleted_at is null
     and exists (select from unnest(new.types) t where private.is_care_event(t))
     and (tg_op = 'INSERT' or new.url is distinct from old.url or new.types is distinct from old.types
          or (new.enabled and not old.enabled))
     and private.care_access() = 'none' then
    raise exception 'an endpoint that receives care events (%) needs care access: the user''s care_access and, with an API key, its care scope',
      (select string_agg(t, ', ') from unnest(new.types) t where private.is_care_event(t))
      using errcode = 'CA403', column = 'types';
  end if;
  return new;
end
$$;
revoke all on function private.guard_care_webhook_endpoint() from public;

create trigger webhook_endpoints_guard_care before insert or update on public.webhook_endpoints
  for each row execute function private.guard_care_webhook_endpoint();

-- An endpoint of every type (types null) skips care events: a delivery of
-- one is queued only for an endpoint whose types name it. A trigger rather
-- than a condition in private.dispatch_webhook_events, so that the rule
-- holds whichever migration redefines the dispatch (and for any other way a
-- delivery is queued).
create function private.skip_unnamed_care_deliveries() returns trigger
  language plpgsql
  security definer
  set search_path = ''
as $$
begin
  if private.is_care_event(new.event_type)
     and not exists (select from public.webhook_endpoints w
                     where w.id = new.endpoint_id and new.event_type = any (w.types)) then
    return null;
  end if;
  return new;
end
$$;
revoke all on function private.skip_unnamed_care_deliveries() from public;

create trigger webhook_deliveries_care_only_when_named before insert on public.webhook_deliveries
  for each row execute function private.skip_unnamed_care_deliveries();
