-- Rate limits per person, leased to the server processes in batches.
--
-- A user's requests, through any of their API keys or Bearer tokens, share
-- one budget per minute (subject 'user:<user id>'), so a new key from
-- `regenerate` is no new budget. Every server process and Edge isolate
-- takes hits from that budget in leases: a lease adds its hits to the
-- shared count at once, and the process then spends them locally, request
-- by request, without writing anything until they are gone. A lease is only
-- granted from what is left, so the processes together never admit more
-- than the limit in a window; what a process holds unspent when the window
-- ends is lost (a caller may be refused slightly early). Leases shrink as
-- the budget runs out (an eighth of what is left), so little can be held
-- unspent near the end. See docs/architecture.md, "Rate limits".

-- private.rate_hit and private.rate_hit_key stay for the servers of the
-- previous release while a rolling deploy replaces them (they count per key,
-- in rows of their own subjects, key:<id>); a later migration drops them.
comment on table private.rate_counters is
  'Hits leased per caller (user:<user id>) per rate-limit window. Old windows are deleted by private.rate_lease now and then.';

-- Leases hits of `p_subject`'s current window: `p_weight` for the request at
-- hand, plus up to `p_want - p_weight` to spend later, never more than an
-- eighth of what is left (and never more than is left). When not even
-- `p_weight` is left it writes nothing and raises CA429, with the seconds
-- until the window ends as its detail and the subject as its hint, so that the statements sent after it
-- in the same round trip do not run.
-- Called in a statement of its own, committed at once: a lease outlives the
-- request that took it, and its row is locked only for the increment.
create function private.rate_lease(p_subject text, p_weight int, p_want int, p_limit int, p_window_seconds int)
  returns table (granted int, remaining int, window_ms int)
  language plpgsql
  set search_path = ''
as $$
declare
  v_now timestamptz := clock_timestamp();
  v_start timestamptz := to_timestamp(floor(extract(epoch from v_now) / p_window_seconds) * p_window_seconds);
  v_end timestamptz := v_start + make_interval(secs => p_window_seconds);
  v_hits int;
  v_left int;
begin
  -- The window's row, locked: concurrent leases of one caller take turns.
  insert into private.rate_counters (subject, window_start, hits)
  values (p_subject, v_start, 0)
  on conflict (subject, window_start) do nothing;
  select c.hits into v_hits
  from private.rate_counters c
  where c.subject = p_subject and c.window_start = v_start
  for update;
  v_left := p_limit - v_hits;
  if v_left < p_weight then
    raise exception 'rate limit spent' using errcode = 'CA429', hint = p_subject,
      detail = greatest(1, ceil(extract(epoch from (v_end - v_now))))::int::text;
  end if;
  granted := least(p_want, v_left, greatest(p_weight, v_left / 8));
  remaining := v_left - granted;
  update private.rate_counters c
  set hits = v_hits + granted
  where c.subject = p_subject and c.window_start = v_start;
  -- About one lease in a hundred clears windows that have ended.
  if random() < 0.01 then
    delete from private.rate_counters where window_start < v_start;
  end if;
  window_ms := greatest(1, floor(extract(epoch from (v_end - v_now)) * 1000))::int;
  return next;
end
$$;

-- The same for the owner of the live API key with this hash (live as
-- private.authenticate_api_key has it: not revoked, not expired, its user
-- active); nothing for any other key, so made-up keys cannot fill the table
-- and a 429 is only ever the answer to a key that works.
create function private.rate_lease_key(p_key_hash bytea, p_weight int, p_want int, p_limit int, p_window_seconds int)
  returns table (user_id uuid, granted int, remaining int, window_ms int)
  language sql
  set search_path = ''
as $$
  select k.user_id, h.*
  from public.api_keys k
  join public.users u on u.id = k.user_id and u.active
  cross join lateral private.rate_lease('user:' || k.user_id::text, p_weight, p_want, p_limit, p_window_seconds) h
  where k.key_hash = p_key_hash and k.revoked_at is null and (k.expires_at is null or k.expires_at > now())
$$;

revoke all on function private.rate_lease(text, int, int, int, int) from public;
revoke all on function private.rate_lease_key(bytea, int, int, int, int) from public;
