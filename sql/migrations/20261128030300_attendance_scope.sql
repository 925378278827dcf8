-- =============================================================================
-- On site, part 4: the attendance scope
--
-- A key with `attendance` records movements and runs roll calls (the doors
-- of *_attendance.sql and *_roll_calls.sql admit it through
-- private.attendance_access) and reads authorised pickups' names in the
-- roster (private.pickup_names_visible); with `read` as well it reads like a
-- read key, and `["attendance"]` alone reaches nothing else (the API refuses
-- its other routes). Nothing else that `write` allows: besides the API's own
-- check, the database refuses such a key any write to participants.
-- =============================================================================

-- Stored in this order (functions/api-keys/scopes.ts): read, write, care, attendance.
alter table public.api_keys drop constraint api_keys_scopes_check;
alter table public.api_keys add constraint api_keys_scopes_check
  check (scopes in (
    '{read}', '{read,write}', '{read,care}', '{read,write,care}',
    '{attendance}', '{read,attendance}', '{read,write,attendance}', '{read,care,attendance}', '{read,write,care,attendance}'));
comment on column public.api_keys.scopes is
  'What the key may do: {read} (GET and HEAD only) or {read,write} (everything its user''s role allows), each optionally with care (the user''s care access) and attendance (movements, roll calls, pickups'' names in the roster); {attendance} alone reaches only movements, roll calls, presence, rosters and the event feed.';

-- Whether the request may write the camp's records beyond movements and
-- roll calls: a Bearer token (no key_id), or a live key with the write scope.
-- From the key's row, never from a claim of scopes.
create function private.key_may_write() returns boolean
  language plpgsql
  stable
  security definer
  set search_path = ''
as $$
declare
  v_key text := private.audit_actor() ->> 'key_id';
begin
  if v_key is null then
    return true;
  end if;
  return exists (
    select from public.api_keys k
    where k.id = v_key::uuid and k.revoked_at is null and (k.expires_at is null or k.expires_at > now())
      and 'write' = any (k.scopes));
end
$$;
revoke all on function private.key_may_write() from public;
grant execute on function private.key_may_write() to camp_api;
comment on function private.key_may_write() is
  'False for a request made with a key that lacks the write scope (a read or attendance key): it changes no participant, whatever the route.';

create policy "Keys without the write scope add no participant" on public.participants
  as restrictive for insert to camp_api
  with check ((select private.key_may_write()));
create policy "Keys without the write scope change no participant" on public.participants
  as restrictive for update to camp_api
  using ((select private.key_may_write()))
  with check ((select private.key_may_write()));
