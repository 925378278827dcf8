-- =============================================================================
-- Room capacity: a rule the database keeps
--
-- A room's live participants (deleted_at is null) never outnumber its
-- capacity (null: no limit), whatever writes them: the API's single and bulk
-- writes, the CSV import, the CLI, SQL by hand.
--
-- Checked on the final state of the transaction, not per statement: the
-- checks are constraint triggers, DEFERRABLE INITIALLY DEFERRED, so they run
-- at COMMIT (or at SET CONSTRAINTS ... IMMEDIATE). Two people swapping between
-- two full rooms in one transaction pass through a state where one room
-- holds one too many; only the state that commits is judged. Each write that
-- could fill a room (a participant created in it, moved into it, or brought
-- back from a soft delete; a room's capacity lowered) queues one check of
-- that room; the check counts the room's live participants when it runs.
--
-- Race-safe by construction: the check takes a transaction-scoped advisory
-- lock on the room before it counts, so two transactions filling the same
-- room are judged one after the other. In READ COMMITTED (every request's
-- level) the count, a statement after the lock was granted, sees every
-- transaction that held the lock before, committed: of two requests for the
-- last bed, the second counts the first's participant and is refused. An
-- advisory lock rather than `select ... for update` on the room row: a
-- participant write already holds the room row FOR SHARE (the reference
-- guards of *_participants.sql), so two writers into one room that each then
-- asked for FOR UPDATE would wait on each other's share lock: a deadlock on
-- every race. The advisory lock conflicts with nothing but itself.
--
-- Refusals are SQLSTATE CA409 with constraint `room_capacity` and, in
-- DETAIL, a JSON array of every room found over: {room_id, room_number,
-- capacity, occupancy}, occupancy being the live participants the room would
-- hold had the transaction committed (db/pg-errors.ts makes it the 409's
-- details).
--
-- The override (an admin placing someone over capacity on purpose): a
-- transaction that called private.override_room_capacity() is not checked.
-- Only an admin's request or an operator (no claims: the CLI, SQL by hand)
-- may call it; the audit event of each participant placed over capacity in
-- such a transaction records it (see the audit part below).
-- =============================================================================

-- Every room of p_rooms whose live participants outnumber its capacity, as
-- they stand now in this transaction. Locks each room's capacity check
-- (in id order, so two callers never wait on each other in a cycle) before
-- counting, so what it reports stays true until this transaction ends.
-- Definer: the count must see every live participant of the room, whatever
-- the caller's row-level security would show.
create function private.rooms_over_capacity(p_rooms uuid[])
  returns table (room_id uuid, room_number text, capacity integer, occupancy bigint)
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_room uuid;
begin
  for v_room in select distinct r from unnest(p_rooms) r where r is not null order by 1 loop
    perform pg_advisory_xact_lock(hashtextextended('room capacity ' || v_room::text, 0));
  end loop;
  -- A statement of its own, after the locks: in READ COMMITTED its snapshot
  -- holds every transaction that held a lock before this one.
  return query
    select r.id, r.room_number, r.capacity, c.occupancy
    from public.rooms r
    cross join lateral (
      select count(*) as occupancy from public.participants p where p.room_id = r.id and p.deleted_at is null
    ) c
    where r.id = any (p_rooms) and r.deleted_at is null and r.capacity is not null and c.occupancy > r.capacity
    order by r.id;
end
$$;
revoke all on function private.rooms_over_capacity(uuid[]) from public;
grant execute on function private.rooms_over_capacity(uuid[]) to camp_api;

comment on function private.rooms_over_capacity(uuid[]) is
  'The rooms of the list holding more live participants than their capacity, as this transaction sees them; locks their capacity checks until the transaction ends.';

-- Whether this transaction placed people over capacity on purpose (private.override_room_capacity).
create function private.room_capacity_overridden() returns boolean
  language sql stable
  set search_path = ''
as $$
  select coalesce(current_setting('camp.room_capacity_override', true), '') = 'on'
$$;
grant execute on function private.room_capacity_overridden() to camp_api;

-- Refuses with every room of p_rooms that is over capacity (CA409, constraint
-- room_capacity, the rooms in DETAIL), unless the transaction overrides
-- capacity. p_field names what the client sent that caused it: room_id for
-- a participant's placement, capacity for a room's.
create function private.assert_room_capacity(p_rooms uuid[], p_field text default 'room_id') returns void
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_over jsonb;
begin
  if private.room_capacity_overridden() then
    return;
  end if;
  select jsonb_agg(jsonb_build_object('room_id', o.room_id, 'room_number', o.room_number,
                                      'capacity', o.capacity, 'occupancy', o.occupancy) order by o.room_id)
  into v_over
  from private.rooms_over_capacity(p_rooms) o;
  if v_over is null then
    return;
  end if;
  raise exception 'room % is over capacity: % places, % participants',
      v_over -> 0 ->> 'room_number', v_over -> 0 ->> 'capacity', v_over -> 0 ->> 'occupancy'
    using errcode = 'CA409', column = p_field, constraint = 'room_capacity', detail = v_over::text;
end
$$;
revoke all on function private.assert_room_capacity(uuid[], text) from public;
grant execute on function private.assert_room_capacity(uuid[], text) to camp_api;

comment on function private.assert_room_capacity(uuid[], text) is
  'Refuses (CA409, constraint room_capacity, every offending room as JSON in DETAIL) when a room of the list holds more live participants than its capacity, unless this transaction overrides capacity.';

-- The override: this transaction may leave rooms over capacity. An admin's
-- request or an operator only; staff (and reporting roles) are refused.
create function private.override_room_capacity() returns void
  language plpgsql
  set search_path = ''
as $$
begin
  if current_setting('request.jwt.claims', true) is not null
     and current_setting('request.jwt.claims', true) <> ''
     and coalesce(private.request_app_role(), '') <> 'admin' then
    raise exception 'only an admin may place participants over a room''s capacity'
      using errcode = 'CA403', column = 'override_capacity';
  end if;
  perform set_config('camp.room_capacity_override', 'on', true);
end
$$;
revoke all on function private.override_room_capacity() from public;
grant execute on function private.override_room_capacity() to camp_api;

-- -----------------------------------------------------------------------------
-- The checks: deferred constraint triggers
-- -----------------------------------------------------------------------------

create function private.check_participant_room_capacity() returns trigger
  language plpgsql
  security definer
  set search_path = ''
as $$
begin
  perform private.assert_room_capacity(array[new.room_id], 'room_id');
  return null;
end
$$;

create function private.check_room_capacity() returns trigger
  language plpgsql
  security definer
  set search_path = ''
as $$
begin
  perform private.assert_room_capacity(array[new.id], 'capacity');
  return null;
end
$$;

-- A participant created in a room, moved into one, or brought back into one
-- from a soft delete. (Leaving a room never fills one.)
create constraint trigger participants_room_capacity_insert
  after insert on public.participants
  deferrable initially deferred
  for each row when (new.room_id is not null and new.deleted_at is null)
  execute function private.check_participant_room_capacity();
create constraint trigger participants_room_capacity_update
  after update of room_id, deleted_at on public.participants
  deferrable initially deferred
  for each row when (new.room_id is not null and new.deleted_at is null
                     and (new.room_id is distinct from old.room_id or old.deleted_at is not null))
  execute function private.check_participant_room_capacity();

-- A room's capacity set or lowered.
create constraint trigger rooms_capacity_lowered
  after update of capacity on public.rooms
  deferrable initially deferred
  for each row when (new.capacity is not null and (old.capacity is null or new.capacity < old.capacity))
  execute function private.check_room_capacity();

-- -----------------------------------------------------------------------------
-- The override in the audit trail
-- -----------------------------------------------------------------------------

-- Set on a participant's event when the write placed it in a room over
-- capacity under the override: the room, its capacity and its occupancy
-- then. The event's actor is who overrode.
alter table public.audit_events add column capacity_override jsonb;
comment on column public.audit_events.capacity_override is
  'Set when the change placed the participant in a room over its capacity under an admin''s override: {room_id, room_number, capacity, occupancy} as the write left it; the actor is who overrode.';

-- Row trigger, but only in a transaction that overrides capacity (its WHEN):
-- every other audit insert, a bulk create's thousand events included, pays
-- nothing but the WHEN.
create function private.note_capacity_override() returns trigger
  language plpgsql
  security definer
  set search_path = ''
as $$
begin
  select jsonb_build_object('room_id', r.id, 'room_number', r.room_number, 'capacity', r.capacity, 'occupancy', c.occupancy)
  into new.capacity_override
  from public.participants p
  join public.rooms r on r.id = p.room_id
  cross join lateral (
    select count(*) as occupancy from public.participants o where o.room_id = r.id and o.deleted_at is null
  ) c
  where p.id = new.resource_id and p.deleted_at is null and r.capacity is not null and c.occupancy > r.capacity
    and (new.action = 'create' or new.changes ? 'room_id' or new.changes ? 'deleted_at');
  return new;
end
$$;

create trigger audit_events_note_capacity_override before insert on public.audit_events
  for each row when (private.room_capacity_overridden() and new.resource_type = 'participant')
  execute function private.note_capacity_override();

grant select (capacity_override) on public.audit_events to camp_reporting;

create or replace view reporting.audit_events with (security_invoker = true) as
  select id, occurred_at, actor_user_id, actor_email, actor_via, actor_key_id, request_id, action, resource_type, resource_id,
         private.audit_changes_of(action, changes) as changes, capacity_override
  from public.audit_events;
comment on view reporting.audit_events is
  'Who changed what and when in the tenant: one row per created, updated, deleted or erased record; changes as {field: [before, after]}; capacity_override when an admin placed a participant over a room''s capacity.';
