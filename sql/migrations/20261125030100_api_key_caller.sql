-- The key check of a read that travels in one round trip with its query
-- (functions/db/database.ts, TenantScope): `begin`, this check with the
-- tenant scope in its select list, the query, `commit`, in one text. A key
-- that is not live must stop the text there, before the query runs without
-- the scope, so this raises where private.authenticate_api_key returns no
-- row; Postgres runs nothing after an error in a multi-statement text.
create function private.api_key_caller(p_key_hash bytea)
  returns table (key_id uuid, tenant_id uuid, user_id uuid, email text, role text, scopes text[])
  language plpgsql
  set search_path = ''
as $$
begin
  return query select * from private.authenticate_api_key(p_key_hash);
  if not found then
    raise exception 'no live API key with this hash' using errcode = 'CA401';
  end if;
end
$$;
revoke all on function private.api_key_caller(bytea) from public;
