-- =============================================================================
-- Safeguarding: the photo answer's one bit, only within the caller's tenant
--
-- private.photo_consent_refused (*_care_records.sql) answers the photo upload
-- for any caller, without care access, which it needs; it must still answer
-- only about a participant of the caller's tenant, so a participant id of
-- another tenant reads as "not refused" like an unknown one. The guard
-- trigger no longer goes through it: it runs for the row's own tenant,
-- whoever writes (the API, the CLI, SQL by hand).
-- =============================================================================

create or replace function private.photo_consent_refused(p_participant uuid) returns boolean
  language sql
  stable
  security definer
  set search_path = ''
as $$
  select coalesce((
    select c.status = 'refused'
    from public.participant_consents c
    where c.participant_id = p_participant and c.tenant_id = private.request_tenant_id() and c.kind = 'photo'
    order by c.seq desc
    limit 1), false)
$$;

create or replace function private.guard_refused_photo() returns trigger
  language plpgsql
  security definer
  set search_path = ''
as $$
begin
  if coalesce((
    select c.status = 'refused'
    from public.participant_consents c
    where c.participant_id = new.id and c.tenant_id = new.tenant_id and c.kind = 'photo'
    order by c.seq desc
    limit 1), false)
  then
    raise exception 'photo consent is refused for this participant' using errcode = 'CA409',
      column = case when new.photo_key is distinct from old.photo_key then 'photo' else 'photo_link' end;
  end if;
  return new;
end
$$;
