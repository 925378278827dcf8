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
  -- Target of the composite foreign key that keeps a key in its user's tenant.
  constraint users_tenant_id_id_key unique (tenant_id, id)
);

-- E-mail is unique per tenant, whatever its case.
create unique index users_email_key on public.users (tenant_id, lower(email));
-- Bearer tokens without a known subject are resolved by e-mail across tenants.
create index users_email_lookup on public.users (lower(email));

create trigger users_touch_updated_at before update on public.users
  for each row execute function private.touch_updated_at();

alter table public.users enable row level security;
create policy "API callers see the users of their tenant" on public.users
  for select to camp_api
  using (tenant_id = (select private.request_tenant_id()));
grant select on public.users to camp_api;

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
  constraint api_keys_user_id_fkey foreign key (tenant_id, user_id) references public.users (tenant_id, id)
);

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

-- Authentication happens before the tenant is known, so it cannot go through
-- the tenant policies. This function is the one narrow door: given a key's
-- hash it returns the principal of a live key, or nothing. It also records use,
-- at most once a minute, so a busy key does not write on every request.
create function private.authenticate_api_key(p_key_hash bytea)
  returns table (key_id uuid, tenant_id uuid, user_id uuid, email text, role text)
  language plpgsql
  security definer
  set search_path = ''
as $$
begin
  return query
    with live as (
      select k.id, k.tenant_id, k.user_id, k.last_used_at
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
    select live.id, live.tenant_id, live.user_id, u.email, u.role
    from live
    join public.users u on u.id = live.user_id;
end
$$;
