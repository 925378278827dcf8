-- `q` with include_deleted=true found no deleted participant once the term had
-- three letters or more: private.search_participant_ids, which serves such a
-- term from the trigram index, reads live participants only (the index is
-- partial), while a shorter term, a filter on the rows themselves, found
-- deleted ones too. The deleted ones now have a search of their own, which the
-- list adds to the live one when it includes deleted records. It reads the
-- tenant's deleted participants only, by the same rule, as the owner for the
-- same reason as the live search (see the *_participants migration).
create function private.search_deleted_participant_ids(p_term text) returns setof uuid
  language sql stable security definer
  set search_path = ''
as $$
  select p.id
  from public.participants p
  where p.tenant_id = (select private.request_tenant_id())
    and p.deleted_at is not null
    and private.search_key($1) <> ''
    and p.search_key like '%' || private.search_key($1) || '%'
$$;
revoke all on function private.search_deleted_participant_ids(text) from public;
grant execute on function private.search_deleted_participant_ids(text) to camp_api;
