-- =============================================================================
-- Safeguarding, part 3: care data in reporting, only where explicitly granted
--
-- A reporting role (camp reporting grant) sees no contacts, care records or
-- consents, nor the audit events about them, unless it was granted with
-- --care (private.reporting_roles.care). Supabase users (`authenticated`) get
-- none of it. Reporting sessions are read-only, so their reads cannot be
-- written into the audit trail: granting --care is the recorded decision
-- (camp reporting list shows it), and docs/security.md says so.
-- =============================================================================

alter table private.reporting_roles add column care boolean not null default false;
comment on column private.reporting_roles.care is
  'Whether the role reads care data (contacts, care records, consents and their audit events): camp reporting grant --care.';

-- Whether the logged-in reporting role was granted care data. By
-- session_user, as private.reporting_tenant_id(); security definer because the
-- role cannot read the mapping.
create function private.reporting_care() returns boolean
  language sql
  stable
  security definer
  set search_path = ''
as $$
  select coalesce((select r.care from private.reporting_roles r where r.role_name = session_user::text), false)
$$;
revoke execute on function private.reporting_care() from public;
grant execute on function private.reporting_care() to camp_reporting;

create policy "Reporting roles granted care read their tenant's contacts" on public.participant_contacts
  for select to camp_reporting
  using (tenant_id = (select private.reporting_tenant_id()) and (select private.reporting_care()));
grant select (id, participant_id, name, relationship, phone, phone_alt, email, emergency, emergency_order, authorised_pickup,
  notes, created_at, updated_at, deleted_at) on public.participant_contacts to camp_reporting;

create policy "Reporting roles granted care read their tenant's care records" on public.participant_care
  for select to camp_reporting
  using (tenant_id = (select private.reporting_tenant_id()) and (select private.reporting_care()));
grant select (id, allergies, dietary_requirements, medical_conditions, medications, care_notes, severe_allergy, created_at, updated_at)
  on public.participant_care to camp_reporting;

create policy "Reporting roles granted care read their tenant's consents" on public.participant_consents
  for select to camp_reporting
  using (tenant_id = (select private.reporting_tenant_id()) and (select private.reporting_care()));
grant select (id, participant_id, seq, kind, status, note, recorded_by, recorded_by_email, recorded_at)
  on public.participant_consents to camp_reporting;

-- Audit events of care resources, like the care data itself.
drop policy "Reporting roles read their tenant's audit trail" on public.audit_events;
create policy "Reporting roles read their tenant's audit trail" on public.audit_events
  for select to camp_reporting
  using (
    tenant_id = (select private.reporting_tenant_id())
    and (not private.is_care_resource(resource_type) or (select private.reporting_care()))
  );

-- Live contacts of live participants, in their stable order per participant.
create view reporting.participant_contacts with (security_invoker = true) as
select c.id, c.participant_id, p.instance_id, p.full_name as participant_name, c.name, c.relationship, c.phone, c.phone_alt,
       c.email, c.emergency, c.emergency_order, c.authorised_pickup, c.notes, c.created_at, c.updated_at
from public.participant_contacts c
join public.participants p on p.id = c.participant_id and p.deleted_at is null
where c.deleted_at is null;
comment on view reporting.participant_contacts is
  'Care data (roles granted --care only): the contacts of live participants; emergency contacts by emergency_order.';

-- Care records of live participants; allergies and medications as JSON arrays.
create view reporting.participant_care with (security_invoker = true) as
select r.id as participant_id, p.instance_id, p.full_name as participant_name, r.allergies, r.severe_allergy,
       r.dietary_requirements, r.medical_conditions, r.medications, r.care_notes, r.created_at, r.updated_at
from public.participant_care r
join public.participants p on p.id = r.id and p.deleted_at is null;
comment on view reporting.participant_care is
  'Care data (roles granted --care only): allergies [{name, severity}], dietary requirements, medical conditions, medications [{name, dose, schedule}] and care notes of live participants.';

-- Every consent answer of live participants; `current` marks the latest of each kind.
create view reporting.participant_consents with (security_invoker = true) as
select c.id, c.participant_id, p.instance_id, p.full_name as participant_name, c.kind, c.status, c.note, c.recorded_by,
       c.recorded_by_email, c.recorded_at,
       c.seq = max(c.seq) over (partition by c.participant_id, c.kind) as current
from public.participant_consents c
join public.participants p on p.id = c.participant_id and p.deleted_at is null;
comment on view reporting.participant_consents is
  'Care data (roles granted --care only): the history of consent answers of live participants; current is true for the answer in force of each kind.';

revoke all on reporting.participant_contacts, reporting.participant_care, reporting.participant_consents from public, anon, authenticated;
grant select on reporting.participant_contacts, reporting.participant_care, reporting.participant_consents to camp_reporting;
