-- Rate limits, counted in the database so that every server process and
-- Edge Function isolate shares one count per API key (or per user, for Bearer
-- callers). A fixed window per minute: one row per caller per window, its
-- hits added by each request with its weight.
--
-- Unlogged: counts are not worth a WAL write each, and after a crash
-- starting every window afresh is harmless.
create unlogged table private.rate_counters (
  subject      text not null,
  window_start timestamptz not null,
  hits         int not null,
  primary key (subject, window_start)
);

comment on table private.rate_counters is
  'Requests per caller (key:<api key id> or user:<user id>) per rate-limit window. Old windows are deleted by private.rate_hit now and then.';

-- Adds `p_weight` hits to the caller's current window and says what is left.
-- Called in its own statement, outside the request's transaction, so the
-- counter row is locked only for the moment of the increment.
create function private.rate_hit(p_subject text, p_weight int, p_limit int, p_window_seconds int)
  returns table (rate_limit int, remaining int, reset_seconds int)
  language plpgsql
  set search_path = ''
as $$
declare
  v_now timestamptz := clock_timestamp();
  v_start timestamptz := to_timestamp(floor(extract(epoch from v_now) / p_window_seconds) * p_window_seconds);
  v_hits int;
begin
  insert into private.rate_counters as c (subject, window_start, hits)
  values (p_subject, v_start, p_weight)
  on conflict (subject, window_start) do update set hits = c.hits + excluded.hits
  returning c.hits into v_hits;
  -- About one call in a hundred clears windows that have ended.
  if random() < 0.01 then
    delete from private.rate_counters where window_start < v_start;
  end if;
  rate_limit := p_limit;
  remaining := p_limit - v_hits;
  reset_seconds := greatest(1, ceil(extract(epoch from (v_start + make_interval(secs => p_window_seconds) - v_now))))::int;
  return next;
end
$$;

-- The same for the live API key with this hash; nothing for an unknown key,
-- so made-up keys cannot fill the table.
create function private.rate_hit_key(p_key_hash bytea, p_weight int, p_limit int, p_window_seconds int)
  returns table (rate_limit int, remaining int, reset_seconds int)
  language sql
  set search_path = ''
as $$
  select h.*
  from public.api_keys k
  cross join lateral private.rate_hit('key:' || k.id::text, p_weight, p_limit, p_window_seconds) h
  where k.key_hash = p_key_hash and k.revoked_at is null
$$;

revoke all on function private.rate_hit(text, int, int, int) from public;
revoke all on function private.rate_hit_key(bytea, int, int, int) from public;
