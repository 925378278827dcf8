-- =============================================================================
-- Keys keep their limits, whoever writes (the API, the CLI, SQL by hand)
--
-- * No key is issued to a deactivated user: it would come alive the moment
--   the user is reactivated.
-- * A revoked key stays revoked.
-- * The last-active-admin rule keeps an admin who can still administer.
-- (A replacement key keeping the replaced key's name, scopes and expiry is
-- functions/api-keys/data.ts's replaceKey, the one way both `regenerate` and
-- `camp keys issue --replace` rotate a key.)
-- =============================================================================

-- "Can administer" means: an active admin who can make changes, that is who
-- holds a live (unrevoked, unexpired) key with the write scope, or who has
-- signed in with a Bearer token (auth_subject is linked; a token carries every
-- scope of its user's role). An admin whose only key is read-only, whose key
-- has expired, or who has neither key nor sign-in, cannot: such an admin can
-- read but not manage users or keys. A key that expires later counts until it
-- expires; time passing and revoking a key are never refused (a leaked key
-- must die at once), so the operator's `camp keys issue` is the way back for a
-- tenant whose admins lost every means.
create function private.can_administer(p_user_id uuid) returns boolean
  language sql stable
  security definer
  set search_path = ''
as $$
  select exists (
    select from public.users u
    where u.id = p_user_id and u.active and u.role = 'admin'
      and (u.auth_subject is not null
           or exists (select from public.api_keys k
                      where k.user_id = u.id and k.revoked_at is null
                        and (k.expires_at is null or k.expires_at > now())
                        and 'write' = any (k.scopes)))
  )
$$;
comment on function private.can_administer(uuid) is
  'Whether the user is an active admin who can make changes: a live read-write key, or a linked Bearer identity.';
revoke all on function private.can_administer(uuid) from public;

-- Deactivating a user revokes their keys in the same transaction. The last
-- active admin of a tenant can be neither demoted nor deactivated, and
-- neither can the last admin who can administer (above) while they still
-- can. The tenant row is locked first, so two admins demoting each other at
-- once are taken one after the other and the second sees the first.
create or replace function private.guard_user_change() returns trigger
  language plpgsql
  security definer
  set search_path = ''
as $$
begin
  if old.role = 'admin' and old.active and (new.role <> 'admin' or not new.active) then
    perform from public.tenants where id = old.tenant_id for update;
    if not exists (
      select from public.users u
      where u.tenant_id = old.tenant_id and u.id <> old.id and u.role = 'admin' and u.active
    ) then
      raise exception 'the last active admin of a tenant cannot be demoted or deactivated'
        using errcode = 'CA409', column = case when not new.active then 'active' else 'role' end;
    end if;
    if private.can_administer(old.id) and not exists (
      select from public.users u
      where u.tenant_id = old.tenant_id and u.id <> old.id and private.can_administer(u.id)
    ) then
      raise exception 'the last admin who can administer (with a read-write key or a sign-in) cannot be demoted or deactivated'
        using errcode = 'CA409', column = case when not new.active then 'active' else 'role' end;
    end if;
  end if;
  if old.active and not new.active then
    update public.api_keys set revoked_at = now() where user_id = old.id and revoked_at is null;
  end if;
  return new;
end
$$;

-- A key is issued to an active user only. The user row is locked in share
-- mode, so a concurrent deactivation waits for this insert and then revokes
-- the key it made, or goes first and this insert sees the user inactive.
create function private.guard_key_issue() returns trigger
  language plpgsql
  security definer
  set search_path = ''
as $$
begin
  if not exists (select from public.users u where u.id = new.user_id and u.active for share) then
    raise exception 'a key cannot be issued to a deactivated user'
      using errcode = 'CA409', column = 'email';
  end if;
  return new;
end
$$;

create trigger api_keys_guard_issue before insert on public.api_keys
  for each row execute function private.guard_key_issue();

-- Revocation is final: the API's grant on revoked_at would otherwise let a
-- revoked key (a deactivated user's, a leaked one) be brought back.
create function private.guard_key_revocation() returns trigger
  language plpgsql
  set search_path = ''
as $$
begin
  if old.revoked_at is not null and new.revoked_at is distinct from old.revoked_at then
    raise exception 'a revoked key stays revoked' using errcode = 'CA409', column = 'revoked_at';
  end if;
  return new;
end
$$;

create trigger api_keys_guard_revocation before update of revoked_at on public.api_keys
  for each row execute function private.guard_key_revocation();
