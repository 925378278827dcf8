-- =============================================================================
-- On site: roll_call.closed carries the roll call's counts
--
-- A receiver of roll_call.closed should know at once whether anyone is
-- missing, without reading the roll call back. The event carries the counts
-- frozen at closing ({expected, present, absent, excused, missing}): figures,
-- never a name or an id of a child, so the feed and webhooks stay thin.
--
-- The counts are frozen on the roll call when it closes (marks cannot change
-- afterwards, but erasure removes a person's marks and places in expected),
-- so the close's audit event holds them as [null, n], and the event is
-- derived from that audit event like every other (*_events.sql). An event's
-- figures are kept in events.data and copied into its webhook deliveries.
-- =============================================================================

alter table public.roll_calls
  add column expected_count int,
  add column present_count  int,
  add column absent_count   int,
  add column excused_count  int;
comment on column public.roll_calls.missing_count is
  'Frozen when closed, with expected_count, present_count, absent_count and excused_count: the counts roll_call.closed carries.';

-- Closed roll calls of before this migration: their counts as they read now.
update public.roll_calls r
set expected_count = (select count(*) from public.roll_call_expected e where e.roll_call_id = r.id),
    present_count = (select count(*) from public.roll_call_marks m where m.roll_call_id = r.id and m.mark = 'present'),
    absent_count = (select count(*) from public.roll_call_marks m where m.roll_call_id = r.id and m.mark = 'absent'),
    excused_count = (select count(*) from public.roll_call_marks m where m.roll_call_id = r.id and m.mark = 'excused')
where r.status = 'closed';

-- As before (*_roll_calls.sql), freezing every count.
create or replace function private.roll_call_close(p_id uuid) returns jsonb
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_call public.roll_calls;
  v_counts jsonb;
begin
  perform private.attendance_gate();
  v_call := private.open_roll_call(p_id);
  v_counts := private.roll_call_json(p_id) -> 'counts';
  update public.roll_calls
  set status = 'closed', closed_at = now(), closed_by = (private.audit_actor() ->> 'sub')::uuid,
      expected_count = (v_counts ->> 'expected')::int,
      present_count = (v_counts ->> 'present')::int,
      absent_count = (v_counts ->> 'absent')::int,
      excused_count = (v_counts ->> 'excused')::int,
      missing_count = (v_counts ->> 'missing')::int
  where id = v_call.id;
  return private.roll_call_json(p_id);
end
$$;

-- The figures an event carries besides its record's id, from the audit
-- event it is derived from; null for every type but roll_call.closed.
create function private.event_data_of(p_type text, p_changes jsonb) returns jsonb
  language sql immutable
  set search_path = ''
as $$
  select case when p_type = 'roll_call.closed' then
    jsonb_build_object('counts', jsonb_build_object(
      'expected', (p_changes -> 'expected_count' ->> 1)::int,
      'present', (p_changes -> 'present_count' ->> 1)::int,
      'absent', (p_changes -> 'absent_count' ->> 1)::int,
      'excused', (p_changes -> 'excused_count' ->> 1)::int,
      'missing', (p_changes -> 'missing_count' ->> 1)::int))
  end
$$;
revoke all on function private.event_data_of(text, jsonb) from public;

alter table public.events add column data jsonb;
comment on column public.events.data is
  'Figures the event carries besides the record''s id (roll_call.closed: {counts}); never a name or a value of a person. Null for most types.';

alter table public.webhook_deliveries add column data jsonb;
comment on column public.webhook_deliveries.data is 'The event''s figures (public.events.data), copied with its ids.';

create or replace function private.derive_events() returns trigger
  language plpgsql
  security definer
  set search_path = ''
as $$
begin
  insert into public.events (tenant_id, xact_id, id, type, resource_id, occurred_at, data)
  select n.tenant_id, pg_current_xact_id(), n.id, t.type, n.resource_id, n.occurred_at, private.event_data_of(t.type, n.changes)
  from new_rows n
  cross join lateral (select private.event_type_of(n.resource_type, n.action, n.changes) as type) t
  where t.type is not null;
  return null;
end
$$;

-- roll_call.closed events of before this migration: the counts frozen above.
update public.events e
set data = jsonb_build_object('counts', jsonb_build_object('expected', r.expected_count, 'present', r.present_count,
  'absent', r.absent_count, 'excused', r.excused_count, 'missing', r.missing_count))
from public.roll_calls r
where e.type = 'roll_call.closed' and r.id = e.resource_id and e.data is null;
update public.webhook_deliveries d
set data = e.data
from public.events e
where d.event_type = 'roll_call.closed' and e.tenant_id = d.tenant_id and e.id = d.event_id and d.data is null;

-- As before (*_webhooks.sql), copying the event's figures.
create or replace function private.dispatch_webhook_events(p_limit int) returns int
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_xmin xid8 := pg_snapshot_xmin(pg_current_snapshot());
  v_endpoint record;
  v_queued int;
  v_total int := 0;
begin
  for v_endpoint in
    select d.endpoint_id, d.tenant_id, d.xact_id, d.event_id, w.types
    from private.webhook_dispatch d
    join public.webhook_endpoints w on w.id = d.endpoint_id and w.enabled and w.deleted_at is null
    where exists (
      select from public.events e
      where e.tenant_id = d.tenant_id and (e.xact_id, e.id) > (d.xact_id, d.event_id) and e.xact_id < v_xmin)
    for update of d skip locked
  loop
    with batch as (
      select e.xact_id, e.id, e.type, e.resource_id, e.occurred_at, e.data from public.events e
      where e.tenant_id = v_endpoint.tenant_id
        and (e.xact_id, e.id) > (v_endpoint.xact_id, v_endpoint.event_id)
        and e.xact_id < v_xmin
      order by e.xact_id, e.id
      limit p_limit
    ), queued as (
      insert into public.webhook_deliveries (tenant_id, endpoint_id, event_id, event_type, resource_id, occurred_at, data)
      select v_endpoint.tenant_id, v_endpoint.endpoint_id, b.id, b.type, b.resource_id, b.occurred_at, b.data
      from batch b
      where v_endpoint.types is null or b.type = any (v_endpoint.types)
      on conflict (endpoint_id, event_id) do nothing
      returning 1
    ), moved as (
      update private.webhook_dispatch d set xact_id = l.xact_id, event_id = l.id
      from (select b.xact_id, b.id from batch b order by b.xact_id desc, b.id desc limit 1) l
      where d.endpoint_id = v_endpoint.endpoint_id
      returning 1
    )
    select count(*) into v_queued from queued;
    v_total := v_total + v_queued;
  end loop;
  return v_total;
end
$$;

-- As before (*_webhook_fairness.sql), answering the event's figures too.
drop function private.claim_webhook_deliveries(int, interval, int, int);

create function private.claim_webhook_deliveries(p_limit int, p_lease interval, p_per_endpoint int, p_per_tenant int)
  returns table (
    id uuid, tenant_id uuid, endpoint_id uuid, url text, event_id bigint, event_type text, resource_id uuid,
    occurred_at timestamptz, tries int, cycle_started_at timestamptz, lease_token uuid, secrets text[], data jsonb)
  language plpgsql
  security definer
  set search_path = ''
as $$
begin
  perform pg_advisory_xact_lock(hashtextextended('webhook claims', 0));
  return query
  with busy as (
    select f.tenant_id, f.endpoint_id, count(*)::int as n
    from public.webhook_deliveries f
    where f.status = 'pending' and f.lease_token is not null and f.next_attempt_at > now()
    group by f.tenant_id, f.endpoint_id
  ), tenants as (
    select x.tenant_id, max(x.last_claimed_at) as last_claimed_at,
           p_per_tenant - coalesce((select sum(b.n) from busy b where b.tenant_id = x.tenant_id), 0)::int as free
    from private.webhook_dispatch x
    group by x.tenant_id
  ), ready as (
    select w.id, w.tenant_id, x.last_claimed_at, t.last_claimed_at as tenant_last, t.free as tenant_free,
           (case when x.slow_failures > 0 then 1 else p_per_endpoint end) - coalesce(b.n, 0) as free
    from public.webhook_endpoints w
    join private.webhook_dispatch x on x.endpoint_id = w.id
    join tenants t on t.tenant_id = w.tenant_id
    left join busy b on b.endpoint_id = w.id
    where w.enabled and w.deleted_at is null and t.free > 0 and (x.paused_until is null or x.paused_until <= now())
  ), candidates as (
    select c.id, c.next_attempt_at, r.tenant_last, r.tenant_free,
           row_number() over (partition by r.tenant_id
                              order by c.nth, r.last_claimed_at nulls first, c.next_attempt_at) as turn
    from ready r
    cross join lateral (
      select d.id, d.next_attempt_at, row_number() over (order by d.next_attempt_at) as nth
      from public.webhook_deliveries d
      where d.endpoint_id = r.id and d.status = 'pending' and d.next_attempt_at <= now()
      order by d.next_attempt_at
      limit greatest(r.free, 0)) c
  ), picked as (
    select d.id, d.lease_token as old_lease, d.leased_at as old_leased_at
    from public.webhook_deliveries d
    join candidates c on c.id = d.id
    where c.turn <= c.tenant_free and d.status = 'pending' and d.next_attempt_at <= now()
    order by c.turn, c.tenant_last nulls first, c.next_attempt_at
    limit p_limit
    for update of d skip locked
  ), interrupted as (
    insert into public.webhook_attempts (tenant_id, delivery_id, started_at, error)
    select d.tenant_id, d.id, p.old_leased_at, 'interrupted: the worker stopped before an answer; sent again'
    from picked p join public.webhook_deliveries d on d.id = p.id
    where p.old_lease is not null
  ), leased as (
    update public.webhook_deliveries d
    set lease_token = gen_random_uuid(), leased_at = now(), next_attempt_at = now() + p_lease,
        tries = d.tries + 1, cycle_started_at = coalesce(d.cycle_started_at, now())
    from picked p where d.id = p.id
    returning d.*
  ), turns as (
    update private.webhook_dispatch x set last_claimed_at = clock_timestamp()
    where x.endpoint_id in (select l.endpoint_id from leased l)
  )
  select l.id, l.tenant_id, l.endpoint_id, w.url, l.event_id, l.event_type, l.resource_id, l.occurred_at, l.tries,
         l.cycle_started_at, l.lease_token,
         array(select s.secret from private.webhook_secrets s
               where s.endpoint_id = l.endpoint_id and (s.expires_at is null or s.expires_at > now())
               order by s.created_at desc),
         l.data
  from leased l join public.webhook_endpoints w on w.id = l.endpoint_id;
end
$$;
revoke all on function private.claim_webhook_deliveries(int, interval, int, int) from public;
