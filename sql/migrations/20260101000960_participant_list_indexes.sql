-- =============================================================================
-- Participants: every list shape served by an index
--
-- Found with bench/explain-participants.ts (100,000 participants in a tenant):
-- the status filter had no index, `q` could not use the trigram index at all
-- under RLS (see private.search_participant_ids), and the searchable text,
-- built by a function with a pinned search_path (which Postgres never
-- inlines), cost a function call per row checked.
-- =============================================================================

-- The searchable text, written out in the index and in the search below
-- (they must stay identical, or the index is not used): names and user_id,
-- joined by a unit separator so that a term never matches across two fields.
drop index public.participants_search;
drop function private.participant_search_text(text, text, text, text);

do $$
declare
  v_schema text;
begin
  select n.nspname into v_schema
  from pg_extension e join pg_namespace n on n.oid = e.extnamespace
  where e.extname = 'pg_trgm';
  execute format(
    'create index participants_search on public.participants using gin '
    '((first_name || chr(31) || surname || chr(31) || full_name || chr(31) || user_id) %I.gin_trgm_ops) '
    'where deleted_at is null',
    v_schema
  );
end
$$;

-- status=... across the tenant and within an instance, in list order; the
-- counts are index-only scans of these.
create index participants_by_status on public.participants (tenant_id, status, created_at, id) where deleted_at is null;
create index participants_by_instance_status on public.participants (instance_id, status, created_at, id)
  where deleted_at is null;

-- The ids of the caller's live participants whose searchable text matches an
-- ILIKE pattern. Why a security definer function: under RLS, Postgres uses a
-- condition as an index condition only when its operator is leakproof, and
-- LIKE/ILIKE are not, so a plain `q` condition reads every participant of the
-- tenant. Run as the table owner, outside RLS, this query can use the trigram
-- index; it keeps to the caller's tenant itself, from the same claims the
-- policies read, and returns ids only, which the list query then reads under
-- RLS as usual. The body says $1 rather than a name so that the explain
-- check (bench/explain-participants.ts) can prepare and explain it verbatim.
create function private.search_participant_ids(p_pattern text) returns setof uuid
  language sql stable security definer
  set search_path = ''
as $$
  select p.id
  from public.participants p
  where p.tenant_id = (select private.request_tenant_id())
    and p.deleted_at is null
    and (p.first_name || chr(31) || p.surname || chr(31) || p.full_name || chr(31) || p.user_id) ilike $1
$$;
revoke all on function private.search_participant_ids(text) from public;
grant execute on function private.search_participant_ids(text) to camp_api;
