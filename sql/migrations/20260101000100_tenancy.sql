-- =============================================================================
-- Tenancy: tenants, their users and the users' API keys
--
-- Every row of tenant data carries tenant_id. An API request runs as camp_api
-- with the caller's tenant in the transaction's claims; the policies below
-- compare each row's tenant_id with it, so no handler can reach another
-- tenant's rows, whatever its SQL says.
-- =============================================================================

-- The caller's tenant, from the claims the API sets per transaction with
-- set_config('request.jwt.claims', ..., true). Null when there are none, which
-- matches no row. Called as (select private.request_tenant_id()) in policies so
-- Postgres evaluates it once per statement, not once per row; it is also the
-- tenant_id column default, evaluated once per inserted row.
--
-- PL/pgSQL, not SQL: with its pinned search_path a SQL function cannot be
-- inlined, and Postgres would parse and plan its body again at every
-- evaluation, where PL/pgSQL compiles it once per session and keeps its
-- expression's plan. The search_path stays pinned to '' (Supabase's
-- function_search_path_mutable advisor, and no caller's path can change what
-- the body means).
create function private.request_tenant_id() returns uuid
  language plpgsql stable
  set search_path = ''
as $$
begin
  -- Null without claims (a connection outside a tenant scope): matches no row.
  return (nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'tenant_id')::uuid;
end
$$;
comment on function private.request_tenant_id() is
  'The caller''s tenant from the transaction''s claims (request.jwt.claims), or null. PL/pgSQL so that its body is compiled once per session, not parsed at every evaluation.';
grant execute on function private.request_tenant_id() to camp_api;

-- One shared trigger keeps updated_at honest on every table that has it.
create function private.touch_updated_at() returns trigger
  language plpgsql
  set search_path = ''
as $$
begin
  new.updated_at := now();
  return new;
end
$$;

-- -----------------------------------------------------------------------------
-- tenants
-- -----------------------------------------------------------------------------

-- An organisation that runs camps. Created by operators (camp tenant create).
create table public.tenants (
  id         uuid primary key default gen_random_uuid(),
  name       text not null constraint tenants_name_check check (char_length(btrim(name)) between 1 and 200),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create trigger tenants_touch_updated_at before update on public.tenants
  for each row execute function private.touch_updated_at();

alter table public.tenants enable row level security;
create policy "API callers see their own tenant" on public.tenants
  for select to camp_api
  using (id = (select private.request_tenant_id()));
grant select on public.tenants to camp_api;

-- -----------------------------------------------------------------------------
-- users
-- -----------------------------------------------------------------------------

-- A person who administers a tenant's camps. Bearer tokens are mapped to a
-- user by auth_subject (the identity provider's `sub`), then by e-mail.
create table public.users (
  id           uuid primary key default gen_random_uuid(),
  tenant_id    uuid not null default private.request_tenant_id() references public.tenants (id),
  email        text not null constraint users_email_check check (email ~ '^[^@[:space:]]+@[^@[:space:]]+$' and char_length(email) <= 320),
  role         text not null default 'staff' constraint users_role_check check (role in ('admin', 'staff')),
  -- The identity provider's subject. One identity maps to exactly one user.
  auth_subject text constraint users_auth_subject_key unique
               constraint users_auth_subject_check check (char_length(auth_subject) between 1 and 255),
  created_at   timestamptz not null default now(),
  updated_at   timestamptz not null default now(),
  active       boolean not null default true,
  -- Target of the composite foreign key that keeps a key in its user's tenant.
  constraint users_tenant_id_id_key unique (tenant_id, id)
);

-- E-mail is unique per tenant, whatever its case.
create unique index users_email_key on public.users (tenant_id, lower(email));
-- Bearer tokens without a known subject are resolved by e-mail across tenants.
create index users_email_lookup on public.users (lower(email));

create trigger users_touch_updated_at before update on public.users
  for each row execute function private.touch_updated_at();

comment on column public.users.active is
  'A deactivated user keeps their history but cannot authenticate: their keys are revoked and their Bearer tokens refused.';

alter table public.users enable row level security;
create policy "API callers see the users of their tenant" on public.users
  for select to camp_api
  using (tenant_id = (select private.request_tenant_id()));
grant select on public.users to camp_api;
-- Admins manage their tenant's users over HTTP.
create policy "API callers add users to their tenant" on public.users
  for insert to camp_api
  with check (tenant_id = (select private.request_tenant_id()));
create policy "API callers change the users of their tenant" on public.users
  for update to camp_api
  using (tenant_id = (select private.request_tenant_id()))
  with check (tenant_id = (select private.request_tenant_id()));
grant insert (tenant_id, email, role) on public.users to camp_api;
grant update (role, active) on public.users to camp_api;

-- Deactivating a user revokes their keys in the same transaction; and the
-- last active admin of a tenant can be neither demoted nor deactivated. The
-- tenant row is locked first, so two admins demoting each other at once are
-- taken one after the other and the second sees the first.
create function private.guard_user_change() returns trigger
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
  end if;
  if old.active and not new.active then
    update public.api_keys set revoked_at = now() where user_id = old.id and revoked_at is null;
  end if;
  return new;
end
$$;

create trigger users_guard_change before update of role, active on public.users
  for each row execute function private.guard_user_change();

-- -----------------------------------------------------------------------------
-- api_keys
-- -----------------------------------------------------------------------------

-- Keys for scripts (X-API-Key). Only the SHA-256 of a key is stored, with a
-- short display prefix; the key itself is shown once, when it is issued.
create table public.api_keys (
  id           uuid primary key default gen_random_uuid(),
  tenant_id    uuid not null default private.request_tenant_id(),
  user_id      uuid not null,
  key_hash     bytea not null constraint api_keys_key_hash_key unique
               constraint api_keys_key_hash_check check (octet_length(key_hash) = 32),
  key_prefix   text not null constraint api_keys_key_prefix_check check (char_length(key_prefix) between 5 and 32),
  created_at   timestamptz not null default now(),
  -- Written at most once a minute per key, so authentication stays a read.
  last_used_at timestamptz,
  expires_at   timestamptz,
  revoked_at   timestamptz,
  name         text constraint api_keys_name_check check (char_length(name) between 1 and 100),
  scopes       text[] not null default '{read,write}'
               constraint api_keys_scopes_check check (scopes in ('{read}', '{read,write}')),
  constraint api_keys_user_id_fkey foreign key (tenant_id, user_id) references public.users (tenant_id, id)
);
comment on column public.api_keys.scopes is
  'What the key may do: {read} (GET and HEAD only) or {read,write} (everything its user''s role allows).';

-- One active (unrevoked) key per user; a second concurrent generate gets a
-- unique violation, which the API reports as 409.
create unique index api_keys_one_active_per_user on public.api_keys (user_id) where revoked_at is null;
create index api_keys_tenant_id on public.api_keys (tenant_id);

alter table public.api_keys enable row level security;
create policy "API callers manage the keys of their tenant" on public.api_keys
  for all to camp_api
  using (tenant_id = (select private.request_tenant_id()))
  with check (tenant_id = (select private.request_tenant_id()));
-- The API may write a hash but never read one back, and may only revoke.
grant select (id, tenant_id, user_id, key_prefix, created_at, last_used_at, expires_at, revoked_at)
  on public.api_keys to camp_api;
grant insert (tenant_id, user_id, key_hash, key_prefix, expires_at) on public.api_keys to camp_api;
grant update (revoked_at) on public.api_keys to camp_api;
grant select (name, scopes) on public.api_keys to camp_api;
grant insert (name, scopes) on public.api_keys to camp_api;

-- Authentication happens before the tenant is known, so it cannot go through
-- the tenant policies. This function is the one narrow door: given a key's
-- hash it returns the principal of a live key of an active user, with the
-- key's scopes, or nothing. It also records use, at most once a minute, so a
-- busy key does not write on every request.
create function private.authenticate_api_key(p_key_hash bytea)
  returns table (key_id uuid, tenant_id uuid, user_id uuid, email text, role text, scopes text[])
  language plpgsql
  security definer
  set search_path = ''
as $$
begin
  return query
    with live as (
      select k.id, k.tenant_id, k.user_id, k.last_used_at, k.scopes
      from public.api_keys k
      where k.key_hash = p_key_hash
        and k.revoked_at is null
        and (k.expires_at is null or k.expires_at > now())
    ), touched as (
      update public.api_keys k
      set last_used_at = now()
      from live
      where k.id = live.id
        and (live.last_used_at is null or live.last_used_at < now() - interval '1 minute')
    )
    select live.id, live.tenant_id, live.user_id, u.email, u.role, live.scopes
    from live
    join public.users u on u.id = live.user_id
    where u.active;
end
$$;
revoke all on function private.authenticate_api_key(bytea) from public;

-- Bearer identity: which user a verified token is.
--
-- A token proves an identity provider's subject (`sub`) and, perhaps, an
-- e-mail. The subject is the identity: once a user is linked to one, only that
-- subject is that user. The e-mail is a way to find a user the first time
-- only, and only when it is worth something:
--   * the token says the provider verified it (the caller passes that in);
--   * the user is not linked to any subject yet, so an e-mail cannot take
--     over an account another identity already holds;
--   * exactly one such user matches (a `tenant_id` claim may choose among
--     tenants sharing the e-mail; otherwise several matches are refused).
-- That first use links the subject to the user, so later tokens match by
-- subject alone, whatever e-mail they carry. Only an active user is found.
create function private.resolve_token_user(p_subject text, p_email text, p_email_verified boolean, p_tenant_id uuid)
  returns table (tenant_id uuid, user_id uuid, email text, role text)
  language plpgsql
  volatile
  security definer
  set search_path = ''
as $$
declare
  v_matches int;
  v_user public.users;
begin
  if exists (select from public.users u where u.auth_subject = p_subject) then
    return query
      select u.tenant_id, u.id, u.email, u.role
      from public.users u
      where u.auth_subject = p_subject
        and u.active
        and (p_tenant_id is null or u.tenant_id = p_tenant_id);
    return;
  end if;
  if p_email is null or not p_email_verified then
    return;
  end if;

  select count(*) into v_matches
  from public.users u
  where lower(u.email) = lower(p_email)
    and u.auth_subject is null
    and u.active
    and (p_tenant_id is null or u.tenant_id = p_tenant_id);
  if v_matches <> 1 then
    return;
  end if;

  update public.users u
  set auth_subject = p_subject
  where lower(u.email) = lower(p_email)
    and u.auth_subject is null
    and u.active
    and (p_tenant_id is null or u.tenant_id = p_tenant_id)
  returning u.* into v_user;
  if v_user.id is not null then
    return query select v_user.tenant_id, v_user.id, v_user.email, v_user.role;
  end if;
exception
  -- The same subject was linked to another user by a concurrent first use.
  when unique_violation then
    return;
end
$$;

comment on function private.resolve_token_user(text, text, boolean, uuid) is
  'The user a verified Bearer token is: by subject; the first time only, by a verified e-mail of a user no subject holds yet, which it then links.';
