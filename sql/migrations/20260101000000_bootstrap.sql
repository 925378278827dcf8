-- =============================================================================
-- Bootstrap
--
-- What a hosted Supabase database already provides, created here only when it is
-- missing, so that the same migrations apply unchanged to a Supabase project and
-- to a plain Postgres (the embedded default, CI, a developer's server).
-- Also the service's own API role and the private schema for internals.
-- =============================================================================

-- Supabase's roles. On a plain Postgres nothing logs in as them; they exist so
-- that grants and policies written for Supabase mean the same thing everywhere.
do $$
begin
  if not exists (select from pg_roles where rolname = 'anon') then
    create role anon nologin noinherit;
  end if;
  if not exists (select from pg_roles where rolname = 'authenticated') then
    create role authenticated nologin noinherit;
  end if;
  if not exists (select from pg_roles where rolname = 'service_role') then
    create role service_role nologin noinherit bypassrls;
  end if;
end
$$;

-- auth.uid() and auth.jwt() read the claims PostgREST (or this service) puts in
-- the transaction, exactly as Supabase defines them.
create schema if not exists auth;

do $$
begin
  if to_regprocedure('auth.jwt()') is null then
    create function auth.jwt() returns jsonb
      language sql stable
      set search_path = ''
    as $f$
      select coalesce(
        nullif(current_setting('request.jwt.claim', true), ''),
        nullif(current_setting('request.jwt.claims', true), '')
      )::jsonb
    $f$;
  end if;
  if to_regprocedure('auth.uid()') is null then
    create function auth.uid() returns uuid
      language sql stable
      set search_path = ''
    as $f$
      select coalesce(
        nullif(current_setting('request.jwt.claim.sub', true), ''),
        nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'sub'
      )::uuid
    $f$;
  end if;
end
$$;

-- The role every API request runs as (SET LOCAL ROLE camp_api). It cannot log
-- in, does not bypass RLS, and gets only the grants each table lists below.
-- The role that runs the migrations is also the one the service connects as,
-- so it must be allowed to switch to camp_api.
do $$
begin
  if not exists (select from pg_roles where rolname = 'camp_api') then
    create role camp_api nologin noinherit nobypassrls;
  end if;
  if not pg_has_role(current_user, 'camp_api', 'member') then
    execute format('grant camp_api to %I', current_user);
  end if;
end
$$;

-- Internals (policy helpers, trigger functions) live outside the schemas that
-- PostgREST exposes. Functions here are not executable by anyone by default.
create schema if not exists private;
revoke all on schema private from public;
grant usage on schema private to camp_api;
alter default privileges in schema private revoke execute on functions from public;

comment on schema private is
  'Camp service internals: policy helpers and trigger functions. Not exposed through PostgREST.';
