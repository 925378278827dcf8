-- =============================================================================
-- Care data in reporting: refused, not empty, without --care (issue 38, item 4)
--
-- Every reporting role used to hold SELECT on the care views and tables
-- (through camp_reporting), and the row-level policies then showed a role not
-- granted --care zero rows: an allergy report read by such a role said
-- "nobody" without an error. The privileges now belong to a group of their
-- own, camp_reporting_care, which `camp reporting grant --care` adds a role to
-- (functions/reporting/roles.ts); a role without it gets `permission denied`
-- on reporting.participant_contacts, reporting.participant_care,
-- reporting.participant_consents and their tables. The policies
-- (private.reporting_care(), *_care_reporting.sql) stay as a second lock.
--
-- The policies are the second lock, and now refuse too: for a role not
-- granted --care, private.reporting_care() raises `permission denied` instead
-- of answering false, so a care table whose privileges a later migration
-- grants to camp_reporting (its policy asking private.reporting_care(), as
-- every care table's does) still refuses such a role rather than showing it
-- nothing.
--
-- The audit trail (reporting.audit_events) is not care data: a role without
-- --care reads it without the events of care resources, as the view's comment
-- says (its policy asks private.reporting_care_granted(), which does not raise).
-- =============================================================================

do $$
begin
  if not exists (select from pg_roles where rolname = 'camp_reporting_care') then
    create role camp_reporting_care nologin noinherit nobypassrls;
  end if;
end
$$;

revoke select on reporting.participant_contacts, reporting.participant_care, reporting.participant_consents from camp_reporting;
revoke select on public.participant_contacts, public.participant_care, public.participant_consents from camp_reporting;

grant usage on schema reporting to camp_reporting_care;
grant select on reporting.participant_contacts, reporting.participant_care, reporting.participant_consents to camp_reporting_care;
grant select (id, participant_id, name, relationship, phone, phone_alt, email, emergency, emergency_order, authorised_pickup,
  notes, created_at, updated_at, deleted_at) on public.participant_contacts to camp_reporting_care;
grant select (id, allergies, dietary_requirements, medical_conditions, medications, care_notes, severe_allergy, created_at, updated_at)
  on public.participant_care to camp_reporting_care;
grant select (id, participant_id, seq, kind, status, note, recorded_by, recorded_by_email, recorded_at)
  on public.participant_consents to camp_reporting_care;

-- Roles granted --care before this migration keep what they read.
do $$
declare
  r record;
begin
  for r in
    select m.role_name from private.reporting_roles m join pg_roles p on p.rolname = m.role_name where m.care
  loop
    execute format('grant camp_reporting_care to %I', r.role_name);
  end loop;
end
$$;

-- Whether the logged-in reporting role was granted care data (the former
-- private.reporting_care(), *_care_reporting.sql).
create function private.reporting_care_granted() returns boolean
  language sql
  stable
  security definer
  set search_path = ''
as $$
  select coalesce((select r.care from private.reporting_roles r where r.role_name = session_user::text), false)
$$;
revoke execute on function private.reporting_care_granted() from public;
grant execute on function private.reporting_care_granted() to camp_reporting;

-- For the care tables' policies: true, or `permission denied` (42501).
create or replace function private.reporting_care() returns boolean
  language plpgsql
  stable
  security definer
  set search_path = ''
as $$
begin
  if not private.reporting_care_granted() then
    raise exception 'permission denied for care data: this reporting role was not granted --care'
      using errcode = '42501', hint = 'camp reporting grant ... --care makes a role that reads it';
  end if;
  return true;
end
$$;

drop policy "Reporting roles read their tenant's audit trail" on public.audit_events;
create policy "Reporting roles read their tenant's audit trail" on public.audit_events
  for select to camp_reporting
  using (
    tenant_id = (select private.reporting_tenant_id())
    and (not private.is_care_resource(resource_type) or (select private.reporting_care_granted()))
  );

comment on view reporting.participant_contacts is
  'Care data (roles granted --care only; others get permission denied): the contacts of live participants; emergency contacts by emergency_order.';
comment on view reporting.participant_care is
  'Care data (roles granted --care only; others get permission denied): allergies [{name, severity}], dietary requirements, medical conditions, medications [{name, dose, schedule}] and care notes of live participants.';
comment on view reporting.participant_consents is
  'Care data (roles granted --care only; others get permission denied): the history of consent answers of live participants; current is true for the answer in force of each kind.';
comment on view reporting.audit_events is
  'Who changed what and when in the tenant: one row per created, updated, deleted or erased record; changes as {field: [before, after]}; capacity_override when an admin placed a participant over a room''s capacity; request_id is the server''s id of the request, client_request_id the X-Request-Id the client sent. The events of care resources (contacts, care records, consents, care reads) only for roles granted --care.';
