-- =============================================================================
-- The key check every request makes, in one lookup
--
-- Every request checks its API key against the database (revocation is
-- immediate), so the check is on the path of every read. It was a data-
-- modifying CTE (the record of use, last_used_at, written in the same
-- statement as the lookup), and the read's check (api_key_caller) called
-- the lookup function from a second one. Now:
--   * private.live_api_keys says once what a live key is;
--   * each of the two checks is one PL/pgSQL function that reads it once
--     (the plan cached per connection) and writes last_used_at in a
--     statement of its own only when the recorded use is a minute old, which
--     is rare on a busy key: a read stays a read.
-- =============================================================================

-- A key that works: not revoked, not expired, its user active; with what a
-- request needs of its owner.
create view private.live_api_keys as
  select k.id as key_id, k.tenant_id, k.user_id, u.email, u.role, k.scopes, k.key_hash, k.last_used_at
  from public.api_keys k
  join public.users u on u.id = k.user_id
  where k.revoked_at is null and (k.expires_at is null or k.expires_at > now()) and u.active;
revoke all on private.live_api_keys from public;
comment on view private.live_api_keys is
  'API keys that authenticate: not revoked, not expired, their user active; with the owner''s e-mail and role.';

-- The owner of the live key with this hash, or no row. Definer: the lookup
-- happens before any tenant is known, so no policy could admit it.
create or replace function private.authenticate_api_key(p_key_hash bytea)
  returns table (key_id uuid, tenant_id uuid, user_id uuid, email text, role text, scopes text[])
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_last_used timestamptz;
begin
  select l.key_id, l.tenant_id, l.user_id, l.email, l.role, l.scopes, l.last_used_at
  into key_id, tenant_id, user_id, email, role, scopes, v_last_used
  from private.live_api_keys l
  where l.key_hash = p_key_hash;
  if not found then
    return;
  end if;
  if v_last_used is null or v_last_used < now() - interval '1 minute' then
    update public.api_keys k set last_used_at = now() where k.id = authenticate_api_key.key_id;
  end if;
  return next;
end
$$;

-- The same check for a read whose key check travels with its query in one
-- text (functions/db/database.ts): a key that is not live must stop the text
-- before the query runs without its scope, so this raises (CA401) where
-- authenticate_api_key returns no row; Postgres runs nothing after an error
-- in a multi-statement text. Definer now too: it reads the keys itself.
-- Its body is authenticate_api_key's but for the not-found branch: each is on
-- the path of every request, so neither calls the other (a nested PL/pgSQL
-- call costs more than the lookup).
create or replace function private.api_key_caller(p_key_hash bytea)
  returns table (key_id uuid, tenant_id uuid, user_id uuid, email text, role text, scopes text[])
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_last_used timestamptz;
begin
  select l.key_id, l.tenant_id, l.user_id, l.email, l.role, l.scopes, l.last_used_at
  into key_id, tenant_id, user_id, email, role, scopes, v_last_used
  from private.live_api_keys l
  where l.key_hash = p_key_hash;
  if not found then
    raise exception 'no live API key with this hash' using errcode = 'CA401';
  end if;
  if v_last_used is null or v_last_used < now() - interval '1 minute' then
    update public.api_keys k set last_used_at = now() where k.id = api_key_caller.key_id;
  end if;
  return next;
end
$$;
revoke all on function private.api_key_caller(bytea) from public;

-- The rate lease of a key's owner, on the same definition of a live key.
create or replace function private.rate_lease_key(p_key_hash bytea, p_weight int, p_want int, p_limit int, p_window_seconds int)
  returns table (user_id uuid, granted int, remaining int, window_ms int)
  language sql
  set search_path = ''
as $$
  select l.user_id, h.*
  from private.live_api_keys l
  cross join lateral private.rate_lease('user:' || l.user_id::text, p_weight, p_want, p_limit, p_window_seconds) h
  where l.key_hash = p_key_hash
$$;
