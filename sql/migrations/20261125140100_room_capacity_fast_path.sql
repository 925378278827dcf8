-- =============================================================================
-- Room capacity: the per-placement check's fast path
--
-- The deferred check of a participant's placement (*_room_capacity.sql) runs
-- once per placed row at commit: a bulk create of 1,000 runs it 1,000 times.
-- It went through three nested PL/pgSQL functions and built JSON each time;
-- it now takes the room's lock and reads capacity and occupancy in one
-- statement, and builds the refusal (private.assert_room_capacity, which
-- names every room) only when the room is over. Same rule, same lock order
-- (the lock before the count, so the count sees every earlier holder's
-- commit), fewer statements per row.
-- =============================================================================

create or replace function private.check_participant_room_capacity() returns trigger
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_capacity integer;
  v_occupancy bigint;
begin
  if private.room_capacity_overridden() then
    return null;
  end if;
  perform pg_advisory_xact_lock(hashtextextended('room capacity ' || new.room_id::text, 0));
  -- A statement after the lock: its snapshot holds every earlier holder's commit.
  select r.capacity,
         case when r.capacity is not null then
           (select count(*) from public.participants p where p.room_id = r.id and p.deleted_at is null)
         end
  into v_capacity, v_occupancy
  from public.rooms r
  where r.id = new.room_id and r.deleted_at is null;
  if v_occupancy > v_capacity then
    perform private.assert_room_capacity(array[new.room_id], 'room_id');
  end if;
  return null;
end
$$;
