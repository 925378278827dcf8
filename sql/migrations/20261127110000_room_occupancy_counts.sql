-- =============================================================================
-- Room capacity: kept on a count per room
--
-- The rule is the one of *_room_capacity.sql: a room's live participants
-- never outnumber its capacity, judged on the state the transaction commits,
-- an admin's override excepted. What changes is how it is judged. The
-- deferred check of each placement counted the room's participants at commit,
-- under an advisory lock: every create or move into a room with a capacity
-- paid a lock, a count and a deferred trigger event.
--
-- Now each room has a row in private.room_occupancy holding its live
-- participants and (a copy of) its capacity, kept by row triggers on
-- participants and rooms. A placement adds or takes one in the same
-- statement, and the row lock of that UPDATE, held to the end of the
-- transaction, is what makes the count race-safe: of two transactions
-- filling one room, the second waits for the first to end and then adds to
-- what the first committed. The deferred check is queued only when a count
-- rises past the capacity (or the capacity drops below the count), and reads
-- the count again at commit: a swap between two full rooms passes through
-- "one too many" and is judged on the state that commits, as before.
-- =============================================================================

create table private.room_occupancy (
  room_id   uuid primary key references public.rooms (id) on delete cascade,
  -- The room's capacity while it is live; null when unlimited or soft-deleted
  -- (a deleted room is not checked).
  capacity  integer,
  -- Live participants (deleted_at is null) placed in the room.
  occupancy integer not null default 0 constraint room_occupancy_not_negative check (occupancy >= 0)
);
comment on table private.room_occupancy is
  'One row per room: its live participants and capacity, kept by triggers on participants and rooms; the capacity rule is judged on it.';
-- Only the triggers' definer functions touch it.
alter table private.room_occupancy enable row level security;
revoke all on private.room_occupancy from public;

-- -----------------------------------------------------------------------------
-- Keeping the counts
-- -----------------------------------------------------------------------------

-- A room's row, created with the room and following its capacity and deletion.
create function private.track_room_capacity() returns trigger
  language plpgsql
  security definer
  set search_path = ''
as $$
begin
  if tg_op = 'INSERT' then
    insert into private.room_occupancy (room_id, capacity)
    values (new.id, case when new.deleted_at is null then new.capacity end);
  else
    update private.room_occupancy
    set capacity = case when new.deleted_at is null then new.capacity end
    where room_id = new.id;
  end if;
  return null;
end
$$;

create trigger rooms_track_capacity_insert after insert on public.rooms
  for each row execute function private.track_room_capacity();
create trigger rooms_track_capacity_update after update of capacity, deleted_at on public.rooms
  for each row when (new.capacity is distinct from old.capacity or new.deleted_at is distinct from old.deleted_at)
  execute function private.track_room_capacity();

-- A participant entering or leaving a room (placed, moved, soft-deleted,
-- restored, deleted): one UPDATE of at most two rows. The primary key scan
-- of an IN list visits them in id order, so two movers between the same two
-- rooms lock them in the same order and never deadlock on them.
create function private.count_room_placement() returns trigger
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_left uuid;
  v_entered uuid;
begin
  if tg_op <> 'INSERT' and old.deleted_at is null then
    v_left := old.room_id;
  end if;
  if tg_op <> 'DELETE' and new.deleted_at is null then
    v_entered := new.room_id;
  end if;
  if v_left is not distinct from v_entered then
    return null;
  end if;
  update private.room_occupancy o
  set occupancy = o.occupancy + case when o.room_id = v_entered then 1 else -1 end
  where o.room_id in (v_left, v_entered);
  return null;
end
$$;

create trigger participants_count_room_insert after insert on public.participants
  for each row when (new.room_id is not null and new.deleted_at is null)
  execute function private.count_room_placement();
create trigger participants_count_room_update after update of room_id, deleted_at on public.participants
  for each row when ((new.room_id is distinct from old.room_id or (new.deleted_at is null) <> (old.deleted_at is null))
                     and ((old.room_id is not null and old.deleted_at is null) or (new.room_id is not null and new.deleted_at is null)))
  execute function private.count_room_placement();
create trigger participants_count_room_delete after delete on public.participants
  for each row when (old.room_id is not null and old.deleted_at is null)
  execute function private.count_room_placement();

create function private.reset_room_occupancy() returns trigger
  language plpgsql
  security definer
  set search_path = ''
as $$
begin
  update private.room_occupancy set occupancy = 0 where occupancy <> 0;
  return null;
end
$$;

create trigger participants_count_room_truncate after truncate on public.participants
  for each statement execute function private.reset_room_occupancy();

-- The rooms already there, counted once the triggers keep every later
-- change (a room the triggers created meanwhile is left as they keep it).
insert into private.room_occupancy (room_id, capacity, occupancy)
select r.id, case when r.deleted_at is null then r.capacity end,
       (select count(*) from public.participants p where p.room_id = r.id and p.deleted_at is null)
from public.rooms r
on conflict (room_id) do nothing;

-- -----------------------------------------------------------------------------
-- The rule on the counts
-- -----------------------------------------------------------------------------

-- Queued only by an update that leaves a room over its capacity, and rising
-- (a count that grew, or a capacity set or lowered): leaving an over-full
-- room (one filled under the override) is never refused. At commit it reads
-- the count again, which this transaction's row lock has kept its own.
create function private.check_room_occupancy() returns trigger
  language plpgsql
  security definer
  set search_path = ''
as $$
begin
  perform private.assert_room_capacity(array[new.room_id],
    case when new.capacity is distinct from old.capacity then 'capacity' else 'room_id' end);
  return null;
end
$$;

create constraint trigger room_occupancy_within_capacity
  after update on private.room_occupancy
  deferrable initially deferred
  for each row when (new.occupancy > new.capacity
                     and (new.occupancy > old.occupancy or old.capacity is null or new.capacity < old.capacity))
  execute function private.check_room_occupancy();

-- The rooms of the list over capacity, as this transaction sees them, read
-- from the counts. Locks their rows in id order, so what it reports holds
-- until the transaction ends (the rows this transaction changed it holds
-- already).
create or replace function private.rooms_over_capacity(p_rooms uuid[])
  returns table (room_id uuid, room_number text, capacity integer, occupancy bigint)
  language plpgsql
  security definer
  set search_path = ''
as $$
begin
  return query
    select o.room_id, r.room_number, o.capacity, o.occupancy::bigint
    from private.room_occupancy o
    join public.rooms r on r.id = o.room_id
    where o.room_id = any (p_rooms) and o.occupancy > o.capacity
    order by o.room_id
    for update of o;
end
$$;

-- The per-placement checks and the capacity check they replace.
drop trigger participants_room_capacity_insert on public.participants;
drop trigger participants_room_capacity_update on public.participants;
drop trigger rooms_capacity_lowered on public.rooms;
drop function private.check_participant_room_capacity();
drop function private.check_room_capacity();

-- The override's audit note, its WHEN inlined: every audit insert evaluates it.
drop trigger audit_events_note_capacity_override on public.audit_events;
create trigger audit_events_note_capacity_override before insert on public.audit_events
  for each row when (current_setting('camp.room_capacity_override', true) = 'on' and new.resource_type = 'participant')
  execute function private.note_capacity_override();
