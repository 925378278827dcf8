-- =============================================================================
-- Safeguarding, part 1: who may reach care data (need to know)
--
-- Care data (a child's contacts, care record and consents) is reached only by
-- a caller whose access the database itself can establish:
--   * the user named by the claims' `sub`, active, in the claims' tenant, has
--     a care_access level (none, read, write) that only an admin (or an
--     operator) can change;
--   * a request made with an API key reaches care data only if that key,
--     looked up by the claims' key_id, is live and has the `care` scope (and
--     `write` to change anything);
--   * a request without a key is a Bearer token of the user: the user's level.
-- private.care_access() computes the level from those rows; the tables and
-- functions of *_care_records.sql allow nothing beyond it. No handler passes
-- a flag: a route that forgets a check still gets nothing.
-- =============================================================================

-- -----------------------------------------------------------------------------
-- users.care_access
-- -----------------------------------------------------------------------------

-- Filled on insert by the user's role when not given (admins write, staff
-- none); existing admins get write, as new ones would.
alter table public.users add column care_access text not null default 'none'
  constraint users_care_access_check check (care_access in ('none', 'read', 'write'));
update public.users set care_access = 'write' where role = 'admin';
alter table public.users alter column care_access drop default;
comment on column public.users.care_access is
  'How far the user may reach children''s contacts, care records and consents: none, read or write. Default by role on insert (admin: write, staff: none); only an admin or an operator changes it.';

create function private.fill_user_care_access() returns trigger
  language plpgsql
  set search_path = ''
as $$
begin
  new.care_access := coalesce(new.care_access, case when new.role = 'admin' then 'write' else 'none' end);
  return new;
end
$$;

create trigger users_fill_care_access before insert on public.users
  for each row execute function private.fill_user_care_access();

-- Only an admin of the tenant (by the users table, not by a claim of role)
-- or an operator (no claims: the CLI, SQL by hand) changes anyone's care
-- access: a staff user cannot raise their own through any route.
create function private.guard_care_access_change() returns trigger
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_claims jsonb := private.audit_actor();
begin
  if v_claims ? 'sub' and not exists (
    select from public.users u
    where u.id = (v_claims ->> 'sub')::uuid and u.tenant_id = new.tenant_id and u.role = 'admin' and u.active
  ) then
    raise exception 'only an admin can change care_access' using errcode = 'CA403', column = 'care_access';
  end if;
  return new;
end
$$;

create trigger users_guard_care_access before update of care_access on public.users
  for each row when (old.care_access is distinct from new.care_access)
  execute function private.guard_care_access_change();

grant update (care_access) on public.users to camp_api;

-- -----------------------------------------------------------------------------
-- api_keys.scopes: `care`
-- -----------------------------------------------------------------------------

-- Stored in this order, so a key's scopes compare as one of four values.
alter table public.api_keys drop constraint api_keys_scopes_check;
alter table public.api_keys add constraint api_keys_scopes_check
  check (scopes in ('{read}', '{read,write}', '{read,care}', '{read,write,care}'));
comment on column public.api_keys.scopes is
  'What the key may do: {read} (GET and HEAD only) or {read,write} (everything its user''s role allows), each optionally with care (the user''s care access; without it, no care data at all).';

-- -----------------------------------------------------------------------------
-- The caller's care access
-- -----------------------------------------------------------------------------

-- none, read or write, from the rows the claims name (see the banner). Stable
-- and called as (select private.care_access()), so once per statement.
-- security definer: camp_care reads neither users nor api_keys.
create function private.care_access() returns text
  language plpgsql
  stable
  security definer
  set search_path = ''
as $$
declare
  v_claims jsonb := nullif(current_setting('request.jwt.claims', true), '')::jsonb;
  v_level text;
  v_scopes text[];
begin
  if v_claims is null or not v_claims ? 'sub' or not v_claims ? 'tenant_id' then
    return 'none';
  end if;
  select u.care_access into v_level
  from public.users u
  where u.id = (v_claims ->> 'sub')::uuid and u.tenant_id = (v_claims ->> 'tenant_id')::uuid and u.active;
  if v_level is null or v_level = 'none' then
    return 'none';
  end if;
  if v_claims ->> 'key_id' is not null then
    select k.scopes into v_scopes
    from public.api_keys k
    where k.id = (v_claims ->> 'key_id')::uuid
      and k.user_id = (v_claims ->> 'sub')::uuid
      and k.revoked_at is null
      and (k.expires_at is null or k.expires_at > now());
    if v_scopes is null or not 'care' = any (v_scopes) then
      return 'none';
    end if;
    -- A read-only key reads, whatever its user may do.
    if v_level = 'write' and not 'write' = any (v_scopes) then
      return 'read';
    end if;
    return v_level;
  end if;
  -- No key: a verified Bearer token of the user. Anything else (an operator's
  -- scope from the CLI, claims without `via`) reaches no care data.
  if v_claims ->> 'via' = 'bearer' then
    return v_level;
  end if;
  return 'none';
end
$$;
comment on function private.care_access() is
  'The caller''s care access (none, read, write), from the user the claims name (users.care_access) and, for a key, the key''s care and write scopes (api_keys.scopes by the claims'' key_id).';

-- -----------------------------------------------------------------------------
-- camp_care: the owner of the only doors to care data
-- -----------------------------------------------------------------------------

-- The care functions (*_care_records.sql) run as this role. It cannot log in,
-- does not bypass RLS, and holds privileges on the care tables only, where
-- its policies still require the claims' tenant and the caller's care
-- access: a mistake inside a function cannot reach another tenant or a
-- caller without access. camp_api holds no privilege on the care tables.
do $$
begin
  if not exists (select from pg_roles where rolname = 'camp_care') then
    create role camp_care nologin noinherit nobypassrls;
  end if;
  if not pg_has_role(current_user, 'camp_care', 'member') then
    execute format('grant camp_care to %I', current_user);
  end if;
end
$$;

grant usage on schema private to camp_care;
grant execute on function private.request_tenant_id() to camp_care;
grant execute on function private.care_access() to camp_care;
