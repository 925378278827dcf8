-- =============================================================================
-- Webhooks: endpoints an admin registers, and the queue that delivers each
-- event (public.events) to each enabled endpoint of its tenant whose types
-- match, signed per Standard Webhooks, retried for about three days.
--
-- The queue is derived from the feed, not written beside it: a dispatcher
-- (private.dispatch_webhook_events) follows each endpoint's cursor through the
-- events with the feed's commit-order rule, and enqueues a delivery per
-- matching event in the transaction that moves the cursor, so no event is
-- skipped or enqueued twice. Workers (the Node server, `camp worker`, the
-- Edge Function's scheduled drain) lease due deliveries with
-- `for update skip locked`, send them outside any transaction, and record the
-- answer; a lease that runs out (a worker killed mid-delivery) makes the
-- delivery due again. See docs/events.md.
-- =============================================================================

-- The caller's role in its tenant, from the claims (admin or staff); null without claims.
create function private.request_app_role() returns text
  language plpgsql stable
  set search_path = ''
as $$
begin
  return nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'app_role';
end
$$;
grant execute on function private.request_app_role() to camp_api;

-- -----------------------------------------------------------------------------
-- webhook_endpoints
-- -----------------------------------------------------------------------------

create table public.webhook_endpoints (
  id                uuid primary key default gen_random_uuid(),
  tenant_id         uuid not null default private.request_tenant_id() references public.tenants (id),
  -- https (http only with WEBHOOK_ALLOW_PRIVATE_NETWORKS=true, which the service checks).
  url               text not null constraint webhook_endpoints_url_check check (url ~ '^https?://' and char_length(url) <= 2000),
  description       text constraint webhook_endpoints_description_check check (char_length(description) <= 2000),
  -- The event types sent; null sends every type.
  types             text[] constraint webhook_endpoints_types_check check (types is null or cardinality(types) between 1 and 50),
  enabled           boolean not null default true,
  -- Why the service disabled it (persistent failure); cleared when an admin enables it.
  disabled_reason   text constraint webhook_endpoints_disabled_reason_check check (char_length(disabled_reason) <= 300),
  secret_rotated_at timestamptz,
  created_at        timestamptz not null default now(),
  updated_at        timestamptz not null default now(),
  deleted_at        timestamptz,
  constraint webhook_endpoints_tenant_id_id_key unique (tenant_id, id)
);

comment on table public.webhook_endpoints is
  'Where a tenant''s events are delivered. Managed by the tenant''s admins; the signing secrets are in private.webhook_secrets, never here.';

create index webhook_endpoints_by_tenant on public.webhook_endpoints (tenant_id, created_at, id) where deleted_at is null;

create trigger webhook_endpoints_touch_updated_at before update on public.webhook_endpoints
  for each row execute function private.touch_updated_at();

alter table public.webhook_endpoints enable row level security;
-- Admins only, held by the database too: a staff caller's route that forgot its check still sees nothing.
create policy "Admins read the webhook endpoints of their tenant" on public.webhook_endpoints
  for select to camp_api
  using (tenant_id = (select private.request_tenant_id()) and (select private.request_app_role()) = 'admin');
create policy "Admins add webhook endpoints to their tenant" on public.webhook_endpoints
  for insert to camp_api
  with check (tenant_id = (select private.request_tenant_id()) and (select private.request_app_role()) = 'admin');
create policy "Admins change the webhook endpoints of their tenant" on public.webhook_endpoints
  for update to camp_api
  using (tenant_id = (select private.request_tenant_id()) and (select private.request_app_role()) = 'admin')
  with check (tenant_id = (select private.request_tenant_id()) and (select private.request_app_role()) = 'admin');
grant select on public.webhook_endpoints to camp_api;
grant insert (tenant_id, url, description, types, enabled) on public.webhook_endpoints to camp_api;
grant update (url, description, types, enabled, disabled_reason, secret_rotated_at, deleted_at) on public.webhook_endpoints to camp_api;

-- At most 20 live endpoints per tenant: each event is sent once per endpoint,
-- so endpoints multiply the work a tenant's writes cause. The tenant row is
-- locked so that two concurrent creates cannot both pass the count.
create function private.guard_webhook_endpoint_count() returns trigger
  language plpgsql
  security definer
  set search_path = ''
as $$
begin
  perform from public.tenants where id = new.tenant_id for update;
  if (select count(*) from public.webhook_endpoints where tenant_id = new.tenant_id and deleted_at is null) >= 20 then
    raise exception 'a tenant has at most 20 webhook endpoints' using errcode = 'CA409';
  end if;
  return new;
end
$$;
create trigger webhook_endpoints_guard_count before insert on public.webhook_endpoints
  for each row execute function private.guard_webhook_endpoint_count();

-- Every change of an endpoint is in the audit trail (the secret never is: it is not in this table).
create trigger webhook_endpoints_audit_insert after insert on public.webhook_endpoints
  referencing new table as new_rows for each statement execute function private.audit_changes('webhook_endpoint');
create trigger webhook_endpoints_audit_update after update on public.webhook_endpoints
  referencing old table as old_rows new table as new_rows for each statement execute function private.audit_changes('webhook_endpoint');

-- -----------------------------------------------------------------------------
-- Signing secrets: readable by the owner (the workers) only
-- -----------------------------------------------------------------------------

-- The current secret has no expiry; a rotated-out one signs beside it until it
-- expires (Standard Webhooks: several signatures in webhook-signature), so a
-- receiver can switch secrets without missing a delivery.
create table private.webhook_secrets (
  endpoint_id uuid not null references public.webhook_endpoints (id) on delete cascade,
  secret      text not null constraint webhook_secrets_secret_check check (secret ~ '^whsec_[A-Za-z0-9+/]{40,100}={0,2}$'),
  created_at  timestamptz not null default now(),
  expires_at  timestamptz
);
create unique index webhook_secrets_one_current on private.webhook_secrets (endpoint_id) where expires_at is null;
comment on table private.webhook_secrets is
  'Webhook signing secrets (whsec_...). Plain, as HMAC signing needs them; no role but the owner reads them. Deleted with their endpoint.';

-- Sets an endpoint's new secret; the one it replaces stays valid for p_grace.
-- The endpoint must be the calling admin's tenant's (RLS decides the update).
create function private.set_webhook_secret(p_endpoint uuid, p_secret text, p_grace interval) returns void
  language plpgsql
  security definer
  set search_path = ''
as $$
begin
  if not exists (
    select from public.webhook_endpoints
    where id = p_endpoint and tenant_id = private.request_tenant_id() and deleted_at is null
  ) or private.request_app_role() is distinct from 'admin' then
    raise exception 'webhook endpoint not found' using errcode = 'CA404';
  end if;
  -- At most two secrets sign: the new one and the one it replaces; older ones end now.
  delete from private.webhook_secrets where endpoint_id = p_endpoint and expires_at is not null;
  update private.webhook_secrets set expires_at = now() + p_grace where endpoint_id = p_endpoint and expires_at is null;
  delete from private.webhook_secrets where endpoint_id = p_endpoint and expires_at <= now();
  insert into private.webhook_secrets (endpoint_id, secret) values (p_endpoint, p_secret);
end
$$;
revoke all on function private.set_webhook_secret(uuid, text, interval) from public;
grant execute on function private.set_webhook_secret(uuid, text, interval) to camp_api;

-- A deleted endpoint keeps no secret, and what it still had to receive fails.
create function private.forget_deleted_webhook_endpoints() returns trigger
  language plpgsql
  security definer
  set search_path = ''
as $$
begin
  delete from private.webhook_secrets s using new_rows n where s.endpoint_id = n.id and n.deleted_at is not null;
  update public.webhook_deliveries d set status = 'failed', lease_token = null, leased_at = null
  from new_rows n where d.endpoint_id = n.id and n.deleted_at is not null and d.status = 'pending';
  return null;
end
$$;
create trigger webhook_endpoints_forget_deleted after update on public.webhook_endpoints
  referencing new table as new_rows for each statement execute function private.forget_deleted_webhook_endpoints();

-- -----------------------------------------------------------------------------
-- Dispatch: each endpoint's cursor through the events, and its health
-- -----------------------------------------------------------------------------

create table private.webhook_dispatch (
  endpoint_id   uuid primary key references public.webhook_endpoints (id) on delete cascade,
  tenant_id     uuid not null,
  -- The feed position up to which events have been enqueued for this endpoint.
  xact_id       xid8 not null,
  event_id      bigint not null,
  -- Since when every attempt has failed (null: the last one succeeded).
  failing_since timestamptz,
  last_delivered_at timestamptz,
  -- When a worker last leased one of its deliveries: endpoints take turns.
  last_claimed_at timestamptz
);
comment on table private.webhook_dispatch is
  'Per webhook endpoint: the feed cursor up to which its deliveries are enqueued, and since when it has been failing.';

-- What an endpoint's record shows of the private side: since when it has
-- been failing, and until when a rotated-out secret still signs. Only for an
-- endpoint of the calling admin's tenant.
create function private.webhook_endpoint_state(p_endpoint uuid)
  returns table (failing_since timestamptz, previous_secret_expires_at timestamptz)
  language sql stable
  security definer
  set search_path = ''
as $$
  select d.failing_since,
         (select max(s.expires_at) from private.webhook_secrets s where s.endpoint_id = w.id and s.expires_at > now())
  from public.webhook_endpoints w
  left join private.webhook_dispatch d on d.endpoint_id = w.id
  where w.id = p_endpoint and w.tenant_id = private.request_tenant_id() and private.request_app_role() = 'admin'
$$;
revoke all on function private.webhook_endpoint_state(uuid) from public;
grant execute on function private.webhook_endpoint_state(uuid) to camp_api;

-- A new endpoint, or one enabled again, starts at the head of the feed: it
-- gets the events that commit from now on, not the backlog of its silence.
create function private.start_webhook_dispatch() returns trigger
  language plpgsql
  security definer
  set search_path = ''
as $$
begin
  if tg_op = 'INSERT' or (new.enabled and not old.enabled) then
    insert into private.webhook_dispatch (endpoint_id, tenant_id, xact_id, event_id)
    values (new.id, new.tenant_id, pg_snapshot_xmin(pg_current_snapshot()), 0)
    on conflict (endpoint_id) do update set xact_id = excluded.xact_id, event_id = 0, failing_since = null;
  end if;
  return null;
end
$$;
create trigger webhook_endpoints_start_dispatch after insert or update of enabled on public.webhook_endpoints
  for each row execute function private.start_webhook_dispatch();

-- -----------------------------------------------------------------------------
-- Deliveries and their attempts
-- -----------------------------------------------------------------------------

create table public.webhook_deliveries (
  id               uuid primary key default gen_random_uuid(),
  tenant_id        uuid not null references public.tenants (id),
  endpoint_id      uuid not null,
  -- The event, copied (ids and type only) so that a delivery outlives the feed's retention.
  event_id         bigint not null,
  event_type       text not null,
  resource_id      uuid not null,
  occurred_at      timestamptz not null,
  status           text not null default 'pending'
                   constraint webhook_deliveries_status_check check (status in ('pending', 'delivered', 'failed')),
  -- Attempts in the current cycle (a redelivery starts a new one) and when it began.
  tries            int not null default 0,
  cycle_started_at timestamptz,
  next_attempt_at  timestamptz not null default now(),
  -- Set while a worker holds the delivery; next_attempt_at is then the lease's end.
  lease_token      uuid,
  leased_at        timestamptz,
  created_at       timestamptz not null default now(),
  updated_at       timestamptz not null default now(),
  constraint webhook_deliveries_once unique (endpoint_id, event_id),
  constraint webhook_deliveries_endpoint_fkey foreign key (tenant_id, endpoint_id)
    references public.webhook_endpoints (tenant_id, id) on delete cascade
);
comment on table public.webhook_deliveries is
  'One event to one endpoint: pending until a 2xx answer (delivered) or retries run out (failed). Kept 30 days.';

create index webhook_deliveries_due on public.webhook_deliveries (endpoint_id, next_attempt_at) where status = 'pending';
create index webhook_deliveries_by_endpoint on public.webhook_deliveries (tenant_id, endpoint_id, created_at desc, id desc);
create index webhook_deliveries_retention on public.webhook_deliveries using brin (created_at);

create trigger webhook_deliveries_touch_updated_at before update on public.webhook_deliveries
  for each row execute function private.touch_updated_at();

alter table public.webhook_deliveries enable row level security;
create policy "Admins read the webhook deliveries of their tenant" on public.webhook_deliveries
  for select to camp_api
  using (tenant_id = (select private.request_tenant_id()) and (select private.request_app_role()) = 'admin');
grant select on public.webhook_deliveries to camp_api;

create table public.webhook_attempts (
  id           bigint generated always as identity primary key,
  tenant_id    uuid not null references public.tenants (id),
  delivery_id  uuid not null references public.webhook_deliveries (id) on delete cascade,
  started_at   timestamptz not null,
  duration_ms  int,
  -- The receiver's status; null when there was no answer (error says why).
  status_code  int,
  error        text constraint webhook_attempts_error_check check (char_length(error) <= 300),
  -- The start of the receiver's answer, for its admins to debug with.
  response     text constraint webhook_attempts_response_check check (char_length(response) <= 256)
);
comment on table public.webhook_attempts is
  'Each attempt to deliver: when, how long, the status or the error. Deleted with its delivery.';
create index webhook_attempts_by_delivery on public.webhook_attempts (delivery_id, id desc);

alter table public.webhook_attempts enable row level security;
create policy "Admins read the webhook attempts of their tenant" on public.webhook_attempts
  for select to camp_api
  using (tenant_id = (select private.request_tenant_id()) and (select private.request_app_role()) = 'admin');
grant select on public.webhook_attempts to camp_api;

-- An admin's redelivery: due now, a new cycle of retries. Refused while a
-- worker holds it or when the endpoint is disabled or deleted.
create function private.redeliver_webhook(p_endpoint uuid, p_delivery uuid) returns text
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_delivery public.webhook_deliveries;
  v_enabled boolean;
begin
  if private.request_app_role() is distinct from 'admin' then
    return 'not_found';
  end if;
  select w.enabled into v_enabled from public.webhook_endpoints w
  where w.id = p_endpoint and w.tenant_id = private.request_tenant_id() and w.deleted_at is null;
  if not found then
    return 'not_found';
  end if;
  select * into v_delivery from public.webhook_deliveries
  where id = p_delivery and endpoint_id = p_endpoint and tenant_id = private.request_tenant_id()
  for update;
  if not found then
    return 'not_found';
  elsif not v_enabled then
    return 'disabled';
  elsif v_delivery.lease_token is not null and v_delivery.next_attempt_at > now() then
    return 'in_flight';
  end if;
  update public.webhook_deliveries
  set status = 'pending', tries = 0, cycle_started_at = null, next_attempt_at = now(), lease_token = null, leased_at = null
  where id = p_delivery;
  return 'queued';
end
$$;
revoke all on function private.redeliver_webhook(uuid, uuid) from public;
grant execute on function private.redeliver_webhook(uuid, uuid) to camp_api;

-- -----------------------------------------------------------------------------
-- The workers' side (owner only)
-- -----------------------------------------------------------------------------

-- Moves every enabled endpoint's cursor through the events that can no longer
-- change (the feed's rule: transaction id below the snapshot's xmin), at most
-- p_limit events per endpoint, enqueueing a delivery for each event whose
-- type the endpoint takes. Cursors another worker holds are skipped.
create function private.dispatch_webhook_events(p_limit int) returns int
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
      select e.xact_id, e.id, e.type, e.resource_id, e.occurred_at from public.events e
      where e.tenant_id = v_endpoint.tenant_id
        and (e.xact_id, e.id) > (v_endpoint.xact_id, v_endpoint.event_id)
        and e.xact_id < v_xmin
      order by e.xact_id, e.id
      limit p_limit
    ), queued as (
      insert into public.webhook_deliveries (tenant_id, endpoint_id, event_id, event_type, resource_id, occurred_at)
      select v_endpoint.tenant_id, v_endpoint.endpoint_id, b.id, b.type, b.resource_id, b.occurred_at
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
revoke all on function private.dispatch_webhook_events(int) from public;

-- Leases up to p_limit due deliveries of enabled endpoints for p_lease. Fair
-- between endpoints: each offers at most p_per_endpoint of its oldest due
-- deliveries, none while it has p_per_endpoint in flight (one slow receiver
-- cannot take every worker), and endpoints take turns, the one served longest
-- ago first (a tenant's backlog cannot starve the others). A delivery whose
-- lease ran out (its worker died) gets an attempt recorded as interrupted,
-- and is leased again.
create function private.claim_webhook_deliveries(p_limit int, p_lease interval, p_per_endpoint int)
  returns table (
    id uuid, tenant_id uuid, endpoint_id uuid, url text, event_id bigint, event_type text, resource_id uuid,
    occurred_at timestamptz, tries int, cycle_started_at timestamptz, lease_token uuid, secrets text[])
  language plpgsql
  security definer
  set search_path = ''
as $$
begin
  return query
  with ready as (
    select w.id, x.last_claimed_at
    from public.webhook_endpoints w
    join private.webhook_dispatch x on x.endpoint_id = w.id
    where w.enabled and w.deleted_at is null
      and (select count(*) from public.webhook_deliveries f
           where f.endpoint_id = w.id and f.status = 'pending' and f.lease_token is not null
             and f.next_attempt_at > now()) < p_per_endpoint
  ), candidates as (
    select c.id, c.next_attempt_at, c.nth, r.last_claimed_at
    from ready r
    cross join lateral (
      select d.id, d.next_attempt_at, row_number() over (order by d.next_attempt_at) as nth
      from public.webhook_deliveries d
      where d.endpoint_id = r.id and d.status = 'pending' and d.next_attempt_at <= now()
      order by d.next_attempt_at
      limit p_per_endpoint) c
  ), picked as (
    select d.id, d.lease_token as old_lease, d.leased_at as old_leased_at
    from public.webhook_deliveries d
    join candidates c on c.id = d.id
    where d.status = 'pending' and d.next_attempt_at <= now()
    order by c.nth, c.last_claimed_at nulls first, c.next_attempt_at
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
    update private.webhook_dispatch x set last_claimed_at = now()
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
revoke all on function private.claim_webhook_deliveries(int, interval, int) from public;

-- Records an attempt's outcome, if the lease is still the caller's (a worker
-- that outlived its lease records nothing: the delivery is another's now).
-- p_retry_at null on a failure means the retries are spent: the delivery
-- fails, and if its endpoint has not succeeded since this delivery's cycle
-- began, the endpoint is disabled (an audit event says so) and its pending
-- deliveries fail with it.
create function private.finish_webhook_attempt(
  p_delivery uuid, p_lease uuid, p_started timestamptz, p_duration_ms int, p_status_code int, p_error text,
  p_response text, p_delivered boolean, p_retry_at timestamptz)
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
revoke all on function private.finish_webhook_attempt(uuid, uuid, timestamptz, int, int, text, text, boolean, timestamptz) from public;

-- Retention: deliveries (and their attempts) older than p_before.
create function private.prune_webhook_deliveries(p_before timestamptz, p_batch int default 10000) returns bigint
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_count bigint;
begin
  -- Pending ones too (an endpoint disabled for a month): past the three days of retries, none is still worth sending.
  delete from public.webhook_deliveries
  where id in (
    select d.id from public.webhook_deliveries d
    where d.created_at < p_before and (d.lease_token is null or d.next_attempt_at < now())
    limit p_batch);
  get diagnostics v_count = row_count;
  return v_count;
end
$$;
revoke all on function private.prune_webhook_deliveries(timestamptz, int) from public;

-- Housekeeping (retention of events and deliveries) runs at most once an hour,
-- by whichever worker finds it due first.
create table private.webhook_housekeeping (
  only_row boolean primary key default true constraint webhook_housekeeping_one_row check (only_row),
  last_run timestamptz not null
);
insert into private.webhook_housekeeping (last_run) values ('-infinity');
