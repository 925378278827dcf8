-- =============================================================================
-- The caller's tenant, read at the cost of a cached function call
--
-- Every policy of the API role compares tenant_id with
-- (select private.request_tenant_id()): one evaluation per table per
-- statement, six in a page of the participant list (the page, its count and
-- the four tables it takes names from), and one per row where it is a
-- column default (bulk inserts).
--
-- As a SQL function with a pinned search_path it could not be inlined, and
-- Postgres parsed and planned its body again at every one of those
-- evaluations (fmgr_sql keeps its parse only for one execution; the parser
-- showed in a CPU profile of a backend running the list). PL/pgSQL compiles
-- a function once per session and keeps its expression's plan, so a call is
-- the pinned search_path and one cached expression. The search_path stays
-- pinned to '' (Supabase's function_search_path_mutable advisor, and no
-- caller's path can change what the body means).
--
-- Same name, arguments, result and volatility: the policies and defaults
-- that call it are unchanged, and so are the grants (create or replace keeps
-- the function's oid).
-- =============================================================================

create or replace function private.request_tenant_id() returns uuid
  language plpgsql stable
  set search_path = ''
as $$
begin
  -- Null without claims (a connection outside a tenant scope): matches no row.
  return (nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'tenant_id')::uuid;
end
$$;

comment on function private.request_tenant_id() is
  'The caller''s tenant from the transaction''s claims (request.jwt.claims), or null. PL/pgSQL so that its body is compiled once per session, not parsed at every evaluation (see the *_request_tenant_plpgsql migration).';
