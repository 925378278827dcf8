-- =============================================================================
-- Events: the change feed (GET /api/v1/events) and the source of webhooks
--
-- An event is derived from the audit trail by a trigger on audit_events, in
-- the writing transaction, so every path that writes the trail (API, bulk,
-- CSV, CLI, SQL by hand) makes its events too. Events are thin: the type, the
-- record's id and the time, never a value of the record (a client fetches the
-- record through an authenticated, audited GET).
--
-- Commit order: each event carries the id of the transaction that wrote it
-- (pg_current_xact_id()), and the feed serves only events whose transaction id
-- is below the xmin of the reading statement's snapshot. Every transaction
-- below xmin has ended, so no event can appear later behind a served one:
-- a client that pages by (xact_id, id) sees every committed event exactly
-- once. The price: a transaction that stays open anywhere on the cluster
-- holds xmin back, and with it the feed of every tenant (docs/events.md says
-- how an operator sees it).
-- =============================================================================

-- Which audit events become events, and their type. Records of the camp only:
-- users, keys and webhook endpoints are administration (the audit trail has
-- them), and safeguarding records (contacts, care, consents) and reads never
-- become events: even a bare "care record changed" says something about a
-- child. A participant update that changed only its stored photo is a photo
-- event. Immutable: the type is decided once, when the event is written.
create function private.event_type_of(p_resource_type text, p_action text, p_changes jsonb) returns text
  language sql immutable
  set search_path = ''
as $$
  select case
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

create table public.events (
  tenant_id   uuid not null references public.tenants (id) on delete cascade,
  -- The writing transaction: the feed's order and cursor.
  xact_id     xid8 not null,
  -- The audit event it was derived from.
  id          bigint not null,
  type        text not null,
  resource_id uuid not null,
  occurred_at timestamptz not null,
  primary key (tenant_id, xact_id, id)
);

comment on table public.events is
  'The change feed: one row per created, updated, deleted or erased camp record, derived from audit_events in the writing transaction; ids and type only. Kept 30 days (private.prune_events).';

-- Retention deletes by time; a BRIN index costs almost nothing to keep on an append-only table.
create index events_occurred_at on public.events using brin (occurred_at);

alter table public.events enable row level security;
create policy "API callers read the events of their tenant" on public.events
  for select to camp_api
  using (tenant_id = (select private.request_tenant_id()));
grant select on public.events to camp_api;

-- One statement per audit insert: a bulk create of a thousand rows writes its
-- thousand events in one insert.
create function private.derive_events() returns trigger
  language plpgsql
  security definer
  set search_path = ''
as $$
begin
  insert into public.events (tenant_id, xact_id, id, type, resource_id, occurred_at)
  select n.tenant_id, pg_current_xact_id(), n.id, t.type, n.resource_id, n.occurred_at
  from new_rows n
  cross join lateral (select private.event_type_of(n.resource_type, n.action, n.changes) as type) t
  where t.type is not null;
  return null;
end
$$;

create trigger audit_events_derive_events after insert on public.audit_events
  referencing new table as new_rows for each statement execute function private.derive_events();

-- The newest transaction id whose events retention has removed: a cursor at
-- or below it may have missed events and is refused (the client resyncs).
create table private.event_horizon (
  only_row boolean primary key default true constraint event_horizon_one_row check (only_row),
  xact_id  xid8 not null
);
insert into private.event_horizon (xact_id) values ('0'::xid8);
grant select on private.event_horizon to camp_api;

-- Retention: events older than p_before go, at most p_batch at a time, and the
-- horizon moves past them. Run by the webhook worker (and camp events prune).
create function private.prune_events(p_before timestamptz, p_batch int default 10000) returns bigint
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_count bigint;
  v_newest xid8;
begin
  with gone as (
    delete from public.events e
    where (e.tenant_id, e.xact_id, e.id) in (
      select o.tenant_id, o.xact_id, o.id from public.events o where o.occurred_at < p_before limit p_batch)
    returning e.xact_id
  )
  select count(*), max(xact_id) into v_count, v_newest from gone;
  if v_newest is not null then
    update private.event_horizon set xact_id = greatest(xact_id, v_newest);
  end if;
  return v_count;
end
$$;
revoke all on function private.prune_events(timestamptz, int) from public;

-- The last 30 days of the trail written before this migration become events
-- too, in the order of their ids, as if one transaction (this one) wrote them.
insert into public.events (tenant_id, xact_id, id, type, resource_id, occurred_at)
select a.tenant_id, pg_current_xact_id(), a.id, t.type, a.resource_id, a.occurred_at
from public.audit_events a
cross join lateral (select private.event_type_of(a.resource_type, a.action, a.changes) as type) t
where a.occurred_at > now() - interval '30 days' and t.type is not null;
