-- =============================================================================
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
-- subject alone, whatever e-mail they carry.
-- =============================================================================

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
  return query
    select u.tenant_id, u.id, u.email, u.role
    from public.users u
    where u.auth_subject = p_subject
      and (p_tenant_id is null or u.tenant_id = p_tenant_id);
  if found or p_email is null or not p_email_verified then
    return;
  end if;
  -- A subject linked to a user of another tenant than the claim named is not
  -- a reason to link a second user to it.
  if exists (select from public.users u where u.auth_subject = p_subject) then
    return;
  end if;

  select count(*) into v_matches
  from public.users u
  where lower(u.email) = lower(p_email)
    and u.auth_subject is null
    and (p_tenant_id is null or u.tenant_id = p_tenant_id);
  if v_matches <> 1 then
    return;
  end if;

  update public.users u
  set auth_subject = p_subject
  where lower(u.email) = lower(p_email)
    and u.auth_subject is null
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
