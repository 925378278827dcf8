-- =============================================================================
-- Whether the caller a request's claims name still may call (issue 38).
--
-- A credential is checked once per request, when it arrives; a feed request
-- that waits (GET /events?wait=, up to 30 s) looks at the feed again every
-- second, and answered events for up to 30 s after its key was revoked or its
-- user deactivated. Each look now asks this in the same statement, and the
-- request answers 401 once it is false.
-- =============================================================================

-- The user the claims name is active in the claims' tenant, and, for a key,
-- the key the claims name is live (private.live_api_keys) and that user's.
-- security definer: camp_api may not read key rows of other users.
create function private.caller_is_live() returns boolean
  language plpgsql
  stable
  security definer
  set search_path = ''
as $$
declare
  v_claims jsonb := nullif(current_setting('request.jwt.claims', true), '')::jsonb;
begin
  if v_claims is null or not v_claims ? 'sub' or not v_claims ? 'tenant_id' then
    return false;
  end if;
  if v_claims ->> 'key_id' is not null then
    return exists (
      select from private.live_api_keys k
      where k.key_id = (v_claims ->> 'key_id')::uuid
        and k.user_id = (v_claims ->> 'sub')::uuid
        and k.tenant_id = (v_claims ->> 'tenant_id')::uuid);
  end if;
  return exists (
    select from public.users u
    where u.id = (v_claims ->> 'sub')::uuid and u.tenant_id = (v_claims ->> 'tenant_id')::uuid and u.active);
end
$$;
revoke all on function private.caller_is_live() from public;
grant execute on function private.caller_is_live() to camp_api;
comment on function private.caller_is_live() is
  'Whether the user (and, for a key, the key) the request''s claims name may still call: active, not revoked, not expired.';
