-- =============================================================================
-- Asked for care data without care access: 403, never an empty answer
-- (issue 38, item 4)
--
-- The audit trail's policy leaves out the events of care resources for a
-- caller without care access (*_care_records.sql). Listing the whole trail,
-- that is right: the trail is not care data. But a caller who asks for care
-- events by name (GET /audit-events?resource_type=care_record, or
-- action=read, which only care reads have) got an empty page, as if nobody
-- had read or changed any. Such a query now takes this condition, which
-- refuses (CA403, 403 FORBIDDEN) a caller without care access before a row
-- is read.
-- =============================================================================

create function private.require_care_access() returns boolean
  language plpgsql
  stable
  set search_path = ''
as $$
begin
  if private.care_access() = 'none' then
    raise exception 'no access to care data (needs the user''s care_access, and for an API key its care scope)'
      using errcode = 'CA403';
  end if;
  return true;
end
$$;
revoke all on function private.require_care_access() from public;
grant execute on function private.require_care_access() to camp_api;
