-- =============================================================================
-- A replayed care answer passes the care door (issue 38, item 5)
--
-- A POST of care data sent with an Idempotency-Key (a contact, a medication)
-- stores its answer, which carries the record's values. Its replay used to
-- skip the door: after the participant was soft-deleted it still returned
-- the contact (the care routes answer 404), and no replay was on the record.
-- A replay now goes through this function first, in its own transaction,
-- which is committed: the same gate as a read (care access, the participant
-- live in the claims' tenant, else 403/404) and the same read event as
-- reading the record (functions/http/idempotency.ts).
-- =============================================================================

create function private.care_replay(p_participant uuid, p_type text) returns void
  language plpgsql
  security definer
  set search_path = ''
as $$
begin
  if not private.is_care_resource(p_type) then
    raise exception 'not a care resource: %', p_type using errcode = 'CA400';
  end if;
  perform private.care_gate(p_participant, 'read');
  perform private.audit_care_read(p_type, p_participant);
end
$$;
alter function private.care_replay(uuid, text) owner to camp_care;
revoke all on function private.care_replay(uuid, text) from public;
grant execute on function private.care_replay(uuid, text) to camp_api;
grant execute on function private.is_care_resource(text) to camp_care;
