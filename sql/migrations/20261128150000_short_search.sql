-- =============================================================================
-- Short searches and presence across instances, through an index
--
-- `q` of one or two letters has no trigram for the trigram index to look up,
-- so it was a LIKE over every participant the list's other filters left: with
-- no instance given, every participant of the tenant, for the page and again
-- for its exact total. Each participant now also carries the distinct letters
-- and pairs of adjacent letters of its search key (never a pair across two
-- fields), and a GIN index over them answers "whose key contains `ab`?"
-- exactly: a term of two folded letters is contained in a key if and only if
-- it is one of the key's pairs, and one letter if it is one of its letters.
--
-- The presence filter had an index per instance only; one per tenant serves
-- "who is checked in" across instances.
-- =============================================================================

-- The letters and adjacent pairs of a search key (chr(31) separates its
-- fields, so no pair spans two of them).
create function private.search_grams(p_key text) returns text[]
  language sql immutable parallel safe
  set search_path = ''
as $$
  select coalesce(array_agg(distinct g.gram order by g.gram), '{}'::text[])
  from generate_series(1, length(p_key)) as i (at),
       lateral (values (substr(p_key, i.at, 1)), (substr(p_key, i.at, 2))) as g (gram)
  where g.gram <> '' and strpos(g.gram, chr(31)) = 0
$$;
comment on function private.search_grams(text) is
  'The distinct letters and pairs of adjacent letters of a search key, within its fields: what a search of one or two letters looks up.';

-- A generated column may not read another, so this repeats search_key's expression.
alter table public.participants
  add column search_grams text[] generated always as (
    private.search_grams(private.search_key(first_name || chr(31) || surname || chr(31) || full_name || chr(31) || user_id))
  ) stored;
comment on column public.participants.search_grams is
  'private.search_grams of search_key, for searches of one or two letters (participants_search_grams).';

create index participants_search_grams on public.participants using gin (search_grams) where deleted_at is null;
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
    and p.search_grams @> array[private.search_key($1)]
$$;

-- The audit trail leaves the new generated column out, as it does search_key
-- (unchanged otherwise from the *_audit migration).
create or replace function private.audit_changes() returns trigger
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_actor jsonb := private.audit_actor();
  v_erasing boolean := coalesce(current_setting('camp.erasing', true), '') = 'on';
  v_type text := tg_argv[0];
  -- Never written into an event: secrets, generated and bookkeeping columns.
  v_hidden text[] := array['tenant_id', 'key_hash', 'search_key', 'search_grams', 'created_at', 'updated_at', 'auth_subject'];
begin
  if tg_op = 'INSERT' then
    insert into public.audit_events
      (tenant_id, actor_user_id, actor_email, actor_via, actor_key_id, request_id, action, resource_type, resource_id, changes)
    select n.tenant_id, (v_actor ->> 'sub')::uuid, v_actor ->> 'email', coalesce(v_actor ->> 'via', 'operator'),
           (v_actor ->> 'key_id')::uuid, v_actor ->> 'request_id', 'create', v_type, n.id,
           -- A create's fields are stored as values; readers see them as [null, value] (audit_changes_of).
           jsonb_strip_nulls(to_jsonb(n) - v_hidden)
    from new_rows n;
  else
    insert into public.audit_events
      (tenant_id, actor_user_id, actor_email, actor_via, actor_key_id, request_id, action, resource_type, resource_id, changes)
    select n.tenant_id, (v_actor ->> 'sub')::uuid, v_actor ->> 'email', coalesce(v_actor ->> 'via', 'operator'),
           (v_actor ->> 'key_id')::uuid, v_actor ->> 'request_id',
           case when v_erasing then 'erase'
                when (to_jsonb(o) ->> 'deleted_at') is null and (to_jsonb(n) ->> 'deleted_at') is not null then 'delete'
                else 'update' end,
           v_type, n.id,
           case when v_erasing then '{}'::jsonb else (
             select coalesce(jsonb_object_agg(f.key, jsonb_build_array(to_jsonb(o) -> f.key, f.value)), '{}')
             from jsonb_each(to_jsonb(n) - v_hidden) f
             where f.value is distinct from to_jsonb(o) -> f.key) end
    from new_rows n join old_rows o on o.id = n.id
    -- An update that changed nothing worth recording (last_used_at of a key) is not an event.
    where v_erasing or exists (
      select from jsonb_each(to_jsonb(n) - v_hidden - 'last_used_at') f
      where f.value is distinct from to_jsonb(o) -> f.key);
  end if;
  return null;
end
$$;
