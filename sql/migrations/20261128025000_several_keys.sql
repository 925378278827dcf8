-- =============================================================================
-- Several live keys per user, each named (issue 40)
--
-- A user may hold several live keys (a script's, a dashboard's read-only one,
-- a care key), each with a name unique among that user's live keys, its own
-- scopes and expiry. The one-live-key index goes; what it held is now held
-- by the trigger that already guards every issue (private.guard_key_issue),
-- whoever writes (the API, the CLI, SQL by hand):
--   * the user is active (as before);
--   * the name is not used by another live key of the user (case-insensitive;
--     a partial unique index cannot say "live", which depends on now());
--   * the user holds fewer than 50 live keys: an admin's script cannot mint
--     thousands (docs/security.md).
-- The trigger locks the user row (it used to share-lock it), so two issues
-- for one user are taken one after the other and the second sees the first:
-- the name and the cap hold under concurrency, and `generate` (still 409 for
-- a user with a live key, functions/api-keys/data.ts issueFirstKey) checks
-- again after its insert. A deactivation waits for, or is waited for by, an
-- issue as before. Authentication never reads or locks the user row this way.
-- =============================================================================

drop index public.api_keys_one_active_per_user;

-- The trigger's lookups and a user's key listing: live keys by user.
create index api_keys_live_by_user on public.api_keys (user_id) where revoked_at is null;

create or replace function private.guard_key_issue() returns trigger
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_live int;
begin
  if not exists (select from public.users u where u.id = new.user_id and u.active for no key update) then
    raise exception 'a key cannot be issued to a deactivated user'
      using errcode = 'CA409', column = 'email';
  end if;
  if new.revoked_at is not null then
    return new;
  end if;
  if new.name is not null and exists (
    select from public.api_keys k
    where k.user_id = new.user_id and k.revoked_at is null and (k.expires_at is null or k.expires_at > now())
      and lower(k.name) = lower(new.name)
  ) then
    raise exception 'the user already has a live key with this name'
      using errcode = 'CA409', column = 'name';
  end if;
  select count(*) into v_live from public.api_keys k
  where k.user_id = new.user_id and k.revoked_at is null and (k.expires_at is null or k.expires_at > now());
  if v_live >= 50 then
    raise exception 'the user already holds 50 live keys, the most one user may; revoke one first'
      using errcode = 'CA409', column = 'user_id';
  end if;
  return new;
end
$$;
