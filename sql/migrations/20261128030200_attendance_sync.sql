-- =============================================================================
-- On site, part 3: offline devices
--
-- A device that worked without signal uploads what it recorded, up to 1,000
-- movements at a time (POST /attendance/sync). Each record is judged alone
-- by private.attendance_record(p, true) and answered accepted, duplicate,
-- conflict or invalid; good records are kept whatever the others are. The
-- timeline rule (*_attendance.sql) makes the stored history and presence the
-- same in whatever order and however often devices upload.
--
-- A device prepares by reading the instance's roster: what it needs to
-- recognise children and release them to the right adults offline, and no
-- more. Authorised pickups' names reach a caller with the attendance scope
-- (or a Bearer token) or care access; their phones, e-mails and notes stay
-- behind the care doors.
-- =============================================================================

-- The records p_records (a JSON array) in turn, each answered
-- {index, nonce, outcome, reason?, field?, movement_id?}, in the records'
-- order. Taken participant by participant (then in the given order), so two
-- uploads at once lock participants in the same order.
create function private.attendance_sync(p_records jsonb) returns jsonb
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_record record;
  v_answer jsonb;
  v_answers jsonb := '[]'::jsonb;
begin
  if private.attendance_access() <> 'write' then
    raise exception 'recording movements needs a key with the write or attendance scope' using errcode = 'CA403';
  end if;
  for v_record in
    select r.value, r.n - 1 as index
    from jsonb_array_elements(p_records) with ordinality as r(value, n)
    order by r.value ->> 'participant_id', r.n
  loop
    v_answer := private.attendance_record(v_record.value, true);
    v_answers := v_answers || jsonb_build_array(jsonb_strip_nulls(jsonb_build_object(
      'index', v_record.index,
      'nonce', v_record.value ->> 'nonce',
      'outcome', v_answer ->> 'outcome',
      'reason', v_answer ->> 'reason',
      'field', v_answer ->> 'field',
      'movement_id', v_answer -> 'movement' ->> 'id')));
  end loop;
  return (select coalesce(jsonb_agg(a.value order by (a.value ->> 'index')::int), '[]'::jsonb)
          from jsonb_array_elements(v_answers) a);
end
$$;
revoke all on function private.attendance_sync(jsonb) from public;
grant execute on function private.attendance_sync(jsonb) to camp_api;

-- Whether the caller may see authorised pickups' names: a Bearer token of an
-- active user, a live key with the attendance scope, or care access.
create function private.pickup_names_visible() returns boolean
  language plpgsql
  stable
  security definer
  set search_path = ''
as $$
declare
  v_claims jsonb := private.audit_actor();
begin
  if private.care_access() <> 'none' then
    return true;
  end if;
  if v_claims ->> 'key_id' is null then
    return private.attendance_access() = 'write' and v_claims ->> 'via' = 'bearer';
  end if;
  return exists (
    select from public.api_keys k
    join public.users u on u.id = k.user_id and u.active
    where k.id = (v_claims ->> 'key_id')::uuid and k.user_id = (v_claims ->> 'sub')::uuid
      and k.tenant_id = private.request_tenant_id()
      and k.revoked_at is null and (k.expires_at is null or k.expires_at > now())
      and 'attendance' = any (k.scopes));
end
$$;
revoke all on function private.pickup_names_visible() from public;
grant execute on function private.pickup_names_visible() to camp_api;

-- The authorised pickups (id and name, nothing else) of the live
-- participants of an instance, as {participant_id: [{id, name}]}; null when
-- the caller may not see them. The one door to contacts that is not a care
-- door: it reads two columns of live contacts with authorised_pickup.
create function private.instance_pickups(p_instance uuid) returns jsonb
  language plpgsql
  stable
  security definer
  set search_path = ''
as $$
begin
  if not private.pickup_names_visible() then
    return null;
  end if;
  return (
    select coalesce(jsonb_object_agg(x.participant_id, x.pickups), '{}'::jsonb)
    from (
      select c.participant_id, jsonb_agg(jsonb_build_object('id', c.id, 'name', c.name) order by c.name, c.id) as pickups
      from public.participant_contacts c
      join public.participants p on p.id = c.participant_id
      where c.tenant_id = private.request_tenant_id() and p.instance_id = p_instance and p.deleted_at is null
        and c.deleted_at is null and c.authorised_pickup
      group by c.participant_id
    ) x);
end
$$;
revoke all on function private.instance_pickups(uuid) from public;
grant execute on function private.instance_pickups(uuid) to camp_api;
comment on function private.instance_pickups(uuid) is
  'Names (and ids) of the authorised pickups of an instance''s live participants, for callers with the attendance scope, a Bearer token or care access; null for anyone else. Never phones, e-mails or notes.';
