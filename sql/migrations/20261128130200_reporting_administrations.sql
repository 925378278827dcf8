-- =============================================================================
-- Reporting: the medication administration record (issue 42, item 7)
--
-- reporting.medication_administrations: every charted dose of the tenant, for
-- reporting roles granted --care only (camp_reporting_care holds the
-- privileges; a role without it gets `permission denied`, and the table's
-- policy asks private.reporting_care(), which refuses too). Each entry with
-- the participant and instance it belongs to, whether it stands (`current`:
-- no correction amends it) and, for entries kept after their participant's
-- erasure (*_health_retention.sql), no participant and their retained_until.
-- The device nonce is left out: it identifies an upload, not a dose.
-- =============================================================================

create policy "Reporting roles granted care read the administration record" on public.medication_administrations
  for select to camp_reporting
  using (tenant_id = (select private.reporting_tenant_id()) and (select private.reporting_care()));
grant select (id, participant_id, medication_id, medication_name, outcome, administered_at, due_at, dose_given, notes, amends,
  reason, override_reason, recorded_by, recorded_by_email, recorded_at, retained_until)
  on public.medication_administrations to camp_reporting_care;

create view reporting.medication_administrations with (security_invoker = true) as
select a.id, a.participant_id, p.instance_id, p.full_name as participant_name, a.medication_id, a.medication_name,
       a.outcome, a.administered_at, a.due_at, a.dose_given, a.notes, a.amends, a.reason, a.override_reason,
       not exists (select from public.medication_administrations c where c.amends = a.id) as current,
       a.recorded_by, a.recorded_by_email, a.recorded_at, a.retained_until
from public.medication_administrations a
left join public.participants p on p.id = a.participant_id;
comment on view reporting.medication_administrations is
  'Care data (roles granted --care only; others get permission denied): every dose charted (given, refused, missed, held, unavailable), with its participant and instance, who charted it and when; a correction names what it amends (amends, reason) and current is false for an entry a correction amends. Entries kept after their participant''s erasure (the tenant''s health retention period) have no participant, medication, notes or reasons, and say until when they are kept (retained_until).';
revoke all on reporting.medication_administrations from public, anon, authenticated;
grant select on reporting.medication_administrations to camp_reporting_care;
