-- Participants found as people write them, and lists sorted on an index.
--
-- `q` ignores case, accents and punctuation: `jose` finds José, `muller`
-- finds Müller, `oconnor` finds O'Connor. A participant's searchable key is
-- kept in a generated column (first name, surname, full name and user_id,
-- folded the same way and joined by chr(31) so no term matches across two
-- fields), with a trigram index on it.

create extension if not exists unaccent with schema extensions;

-- unaccent() is only STABLE (its dictionary could be changed); this wrapper
-- names the dictionary explicitly and is declared IMMUTABLE so that a
-- generated column and an index may use it. The dictionary is looked up where
-- the extension actually lives.
do $$
declare
  v_schema text;
begin
  select n.nspname into v_schema
  from pg_extension e join pg_namespace n on n.oid = e.extnamespace
  where e.extname = 'unaccent';
  execute format($f$
    create function private.search_key(p_text text) returns text
      language sql immutable parallel safe strict
      set search_path = ''
    as $body$
      select regexp_replace(lower(%1$I.unaccent(%2$L::regdictionary, p_text)), '[^[:alnum:]' || chr(31) || ']+', '', 'g')
    $body$
  $f$, v_schema, v_schema || '.unaccent');
  -- The API role computes the generated column below when it writes a participant.
  execute format('grant usage on schema %I to camp_api', v_schema);
end
$$;

comment on function private.search_key(text) is
  'Text as search compares it: lower case, without accents, without anything but letters, digits and the field separator chr(31).';
grant execute on function private.search_key(text) to camp_api;

alter table public.participants
  add column search_key text generated always as (
    private.search_key(first_name || chr(31) || surname || chr(31) || full_name || chr(31) || user_id)
  ) stored;

comment on column public.participants.search_key is
  'What `q` searches: the names and user_id as private.search_key folds them, joined by chr(31). Generated; never written.';

do $$
declare
  v_schema text;
begin
  select n.nspname into v_schema
  from pg_extension e join pg_namespace n on n.oid = e.extnamespace
  where e.extname = 'pg_trgm';
  execute format(
    'create index participants_search_key on public.participants using gin (search_key %I.gin_trgm_ops) where deleted_at is null',
    v_schema
  );
end
$$;

-- The search runs as its owner so that the trigram index can serve it: under
-- RLS the planner may not move the non-leakproof LIKE below the policy, and
-- would check every row of the tenant. It filters on the tenant itself.
-- A term that folds to nothing (only punctuation) finds nobody.
create function private.search_participant_ids(p_term text) returns setof uuid
  language sql stable security definer
  set search_path = ''
as $$
  select p.id
  from public.participants p
  where p.tenant_id = (select private.request_tenant_id())
    and p.deleted_at is null
    and private.search_key($1) <> ''
    and p.search_key like '%' || private.search_key($1) || '%'
$$;
revoke all on function private.search_participant_ids(text) from public;
grant execute on function private.search_participant_ids(text) to camp_api;

-- A page of one instance sorted by a name, or of a whole tenant, read in
-- index order: `id` follows the sort key in the same direction, as the list
-- query writes it (functions/resources/listing.ts).
create index participants_by_instance_surname on public.participants (instance_id, surname, id) where deleted_at is null;
create index participants_by_instance_first_name on public.participants (instance_id, first_name, id) where deleted_at is null;
create index participants_by_tenant_surname on public.participants (tenant_id, surname, id) where deleted_at is null;
-- Sync: what changed since a time, deleted rows included.
create index participants_by_updated_at on public.participants (tenant_id, updated_at, id);
