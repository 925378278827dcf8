-- =============================================================================
-- Short searches and presence across instances, through an index
--
-- `q` of one or two letters has no trigram for the trigram index to look up,
-- so it was a LIKE over every participant the list's other filters left: with
-- no instance given, every participant of the tenant, for the page and again
-- for its exact total. A GIN index over the letters and pairs of adjacent
-- letters of each participant's search key (never a pair across two fields)
-- now answers "whose key contains `ab`?" exactly: a term of two folded letters is contained in a key if and only if
-- it is one of the key's pairs, and one letter if it is one of its letters.
--
-- The presence filter had an index per instance only; one per tenant serves
-- "who is checked in" across instances.
-- =============================================================================

-- The letters and adjacent pairs of a search key, repeats and all (the GIN
-- index keeps each once); chr(31) separates the key's fields, so no pair
-- spans two of them. Built from arrays rather than substrings: it runs for
-- every participant written.
create function private.search_grams(p_key text) returns text[]
  language sql immutable parallel safe strict
  set search_path = ''
as $$
  select array(
    select c from unnest(pg_catalog.string_to_array(p_key, null)) as c
    where c <> pg_catalog.chr(31)
    union all
    select a || b
    from unnest((pg_catalog.string_to_array(p_key, null))[1:pg_catalog.length(p_key) - 1],
                (pg_catalog.string_to_array(p_key, null))[2:]) as p (a, b)
    where a <> pg_catalog.chr(31) and b <> pg_catalog.chr(31))
$$;
comment on function private.search_grams(text) is
  'The letters and pairs of adjacent letters of a search key, within its fields: what a search of one or two letters looks up (participants_search_grams).';

-- An index on the expression, not a stored column: the pairs would double a
-- participant's row, and the index is all that reads them.
create index participants_search_grams on public.participants
  using gin (private.search_grams(search_key)) where deleted_at is null;
create index participants_presence_by_tenant on public.participants (tenant_id, presence) where deleted_at is null;

-- The live search, for any length of term: three letters or more from the
-- trigram index, one or two from the pairs. One branch runs: the other's
-- condition on the term alone is false before it reads a row.
create or replace function private.search_participant_ids(p_term text) returns setof uuid
  language sql stable security definer
  set search_path = ''
as $$
  select p.id
  from public.participants p
  where p.tenant_id = (select private.request_tenant_id())
    and p.deleted_at is null
    and length(private.search_key($1)) >= 3
    and p.search_key like '%' || private.search_key($1) || '%'
  union all
  select p.id
  from public.participants p
  where p.tenant_id = (select private.request_tenant_id())
    and p.deleted_at is null
    and length(private.search_key($1)) between 1 and 2
    and private.search_grams(p.search_key) @> array[private.search_key($1)]
$$;

