-- =============================================================================
-- Webhooks, fair between tenants (issue 38).
--
-- Two slots per endpoint let a tenant with 20 endpoints whose receivers never
-- answer hold every slot of every worker, so other tenants' deliveries waited
-- for its timeouts, one after another. Now:
--
-- * tenants take turns: a claim gives each tenant with something due its first
--   delivery before any tenant its second, the tenant served longest ago first;
-- * a tenant holds at most p_per_tenant deliveries in flight, over all workers
--   (a worker passes half its slots), so one tenant leaves the other half free;
-- * an endpoint whose attempts keep failing slowly (no answer, or one after
--   half the timeout) is tried once at a time, and after its n-th such attempt
--   in a row not again for the timeout × 2^(n−1) (at most × 64): a receiver that
--   hangs costs a slot for a shrinking share of the time. Any quick answer
--   resets it.
--
-- Claims are serialised by a transaction-scoped advisory lock, so the counts
-- of deliveries in flight a claim reads are the ones it leaves: two workers
-- cannot each take a tenant's last slot. A claim is one short statement.
-- See docs/events.md ("Fair between tenants") and docs/security.md.
-- =============================================================================

alter table private.webhook_dispatch
  -- Attempts in a row that failed slowly (held their slot for at least half the timeout).
  add column slow_failures int not null default 0,
  -- Not claimed again before this (after a slow failure).
  add column paused_until timestamptz;

-- The deliveries in flight (leased, lease not yet run out): few, so counting them per claim is cheap.
create index webhook_deliveries_in_flight on public.webhook_deliveries (tenant_id, endpoint_id)
  where status = 'pending' and lease_token is not null;

drop function private.claim_webhook_deliveries(int, interval, int);

-- Leases up to p_limit due deliveries of enabled endpoints for p_lease.
-- An endpoint offers at most p_per_endpoint of its oldest due deliveries
-- (one while it is failing slowly, none while paused) less those in flight;
-- a tenant at most p_per_tenant less those in flight; tenants take turns (the
-- one served longest ago first), and within a tenant its endpoints do. A
-- delivery whose lease ran out (its worker died) gets an attempt recorded as
-- interrupted, and is leased again.
create function private.claim_webhook_deliveries(p_limit int, p_lease interval, p_per_endpoint int, p_per_tenant int)
  returns table (
    id uuid, tenant_id uuid, endpoint_id uuid, url text, event_id bigint, event_type text, resource_id uuid,
    occurred_at timestamptz, tries int, cycle_started_at timestamptz, lease_token uuid, secrets text[])
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
               order by s.created_at desc)
  from leased l join public.webhook_endpoints w on w.id = l.endpoint_id;
end
$$;
revoke all on function private.claim_webhook_deliveries(int, interval, int, int) from public;

drop function private.finish_webhook_attempt(uuid, uuid, timestamptz, int, int, text, text, boolean, timestamptz);

-- Records an attempt's outcome, if the lease is still the caller's (a worker
-- that outlived its lease records nothing: the delivery is another's now).
-- p_retry_at null on a failure means the retries are spent: the delivery
-- fails, and if its endpoint has not succeeded since this delivery's cycle
-- began, the endpoint is disabled (an audit event says so) and its pending
-- deliveries fail with it. p_slow (the worker's timeout) when the attempt
-- failed slowly: the endpoint is paused for p_slow × 2^(n−1), n its slow
-- failures in a row (at most × 64); null resets the count.
create function private.finish_webhook_attempt(
  p_delivery uuid, p_lease uuid, p_started timestamptz, p_duration_ms int, p_status_code int, p_error text,
  p_response text, p_delivered boolean, p_retry_at timestamptz, p_slow interval)
  returns text
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_delivery public.webhook_deliveries;
  v_failing_since timestamptz;
  v_last_delivered timestamptz;
begin
  select * into v_delivery from public.webhook_deliveries where id = p_delivery and lease_token = p_lease for update;
  if not found then
    return 'lost_lease';
  end if;
  insert into public.webhook_attempts (tenant_id, delivery_id, started_at, duration_ms, status_code, error, response)
  values (v_delivery.tenant_id, p_delivery, p_started, p_duration_ms, p_status_code, left(p_error, 300), left(p_response, 256));
  if p_slow is null then
    update private.webhook_dispatch set slow_failures = 0, paused_until = null
    where endpoint_id = v_delivery.endpoint_id and slow_failures > 0;
  else
    update private.webhook_dispatch
    set slow_failures = slow_failures + 1,
        paused_until = greatest(paused_until, now() + p_slow * power(2, least(slow_failures, 6)))
    where endpoint_id = v_delivery.endpoint_id;
  end if;
  if p_delivered then
    update public.webhook_deliveries set status = 'delivered', lease_token = null, leased_at = null where id = p_delivery;
    update private.webhook_dispatch set failing_since = null, last_delivered_at = now() where endpoint_id = v_delivery.endpoint_id;
    return 'delivered';
  end if;
  update private.webhook_dispatch set failing_since = coalesce(failing_since, p_started)
  where endpoint_id = v_delivery.endpoint_id
  returning failing_since, last_delivered_at into v_failing_since, v_last_delivered;
  if p_retry_at is not null then
    update public.webhook_deliveries set next_attempt_at = p_retry_at, lease_token = null, leased_at = null where id = p_delivery;
    return 'retry';
  end if;
  update public.webhook_deliveries set status = 'failed', lease_token = null, leased_at = null where id = p_delivery;
  -- Nothing delivered to the endpoint since this delivery's first attempt: it is down, not unlucky.
  if v_last_delivered is null or v_last_delivered < v_delivery.cycle_started_at then
    -- The audit trail records this change as the operator's, with the worker as its request.
    perform set_config('request.jwt.claims', json_build_object('via', 'operator', 'request_id', 'webhook-worker')::text, true);
    update public.webhook_endpoints
    set enabled = false,
        disabled_reason = 'disabled after every delivery failed since ' || to_char(v_failing_since at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
    where id = v_delivery.endpoint_id and enabled;
    update public.webhook_deliveries set status = 'failed', lease_token = null, leased_at = null
    where endpoint_id = v_delivery.endpoint_id and status = 'pending';
    return 'disabled';
  end if;
  return 'failed';
end
$$;
revoke all on function private.finish_webhook_attempt(uuid, uuid, timestamptz, int, int, text, text, boolean, timestamptz, interval) from public;

-- An endpoint enabled again starts afresh: at the head of the feed, not failing, not paused.
create or replace function private.start_webhook_dispatch() returns trigger
  language plpgsql
  security definer
  set search_path = ''
as $$
begin
  if tg_op = 'INSERT' or (new.enabled and not old.enabled) then
    insert into private.webhook_dispatch (endpoint_id, tenant_id, xact_id, event_id)
    values (new.id, new.tenant_id, pg_snapshot_xmin(pg_current_snapshot()), 0)
    on conflict (endpoint_id) do update
      set xact_id = excluded.xact_id, event_id = 0, failing_since = null, slow_failures = 0, paused_until = null;
  end if;
  return null;
end
$$;
