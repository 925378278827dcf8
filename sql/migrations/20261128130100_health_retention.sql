-- =============================================================================
-- Health centre, part 5: erasure and retention of health records (issue 42)
--
-- Many jurisdictions require health and incident records to be kept for years
-- after a child's stay, while the right to erasure removes the child. A
-- tenant sets a retention period (tenants.health_retention_days; default
-- none):
--   * without one, erasure removes the medication administration record with
--     the rest (private.erase_medications_of_participant, unchanged);
--   * with one, erasure removes the person and every other record, and keeps
--     the participant's administration entries detached from any name until
--     the period ends (private.retain_health_records); then the sweep
--     (private.sweep_retained_health_records, the webhook workers' hourly
--     housekeeping and `camp health sweep`) deletes them.
-- A detached entry keeps what a regulator asks of the record: what was
-- given (medication_name, dose_given), the outcome, when (administered_at,
-- due_at, recorded_at), who charted it (recorded_by, a staff user), the chain
-- of corrections (amends) and whether a limit was overridden. It loses what
-- names or points at the child: participant_id, medication_id (the
-- medication goes with the erasure), the nonce (chosen by a device, free
-- text), notes, and the text of reason and override_reason (free text that
-- may name the child; replaced by a marker, so a correction and an override
-- stay recognisable). The entries' audit events lose their values as
-- without retention.
--
-- Incidents (built beside this) get the same treatment through the same two
-- functions: retain_health_records is where the incident report's own
-- detaching is called, sweep_retained_health_records where its deletion is.
-- =============================================================================

alter table public.tenants add column health_retention_days integer
  constraint tenants_health_retention_days_check check (health_retention_days between 1 and 36500);
-- Set by admins with PATCH /tenant/settings (policy "Admins change their tenant's settings", *_incidents.sql).
grant update (health_retention_days) on public.tenants to camp_api;
comment on column public.tenants.health_retention_days is
  'How many days health and incident records of an erased participant are kept, detached from any name (private.retain_health_records); null: erasure removes them with the rest.';

-- A detached entry is one being kept: it names no participant and says until when.
alter table public.medication_administrations add constraint medication_administrations_retained_until_check
  check ((participant_id is null) = (retained_until is not null));
create index medication_administrations_retained on public.medication_administrations (retained_until)
  where retained_until is not null;

-- Until when the tenant keeps an erased participant's health records: null when it keeps none.
create function private.health_retention_until(p_tenant uuid) returns timestamptz
  language sql
  stable
  security definer
  set search_path = ''
as $$
  select now() + make_interval(days => t.health_retention_days)
  from public.tenants t where t.id = p_tenant and t.health_retention_days is not null
$$;
revoke all on function private.health_retention_until(uuid) from public;

-- Detaches the participant's health records from it, to be kept until
-- p_until; called by private.erase_participant before the participant is
-- marked erased (whose triggers then find nothing of these left to delete).
-- Answers what was kept: [{record, count, retained_until}], kinds with none left out.
create function private.retain_health_records(p_tenant uuid, p_participant uuid, p_until timestamptz) returns jsonb
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_entries uuid[];
  v_kept jsonb := '[]'::jsonb;
begin
  v_entries := array(select a.id from public.medication_administrations a
                     where a.tenant_id = p_tenant and a.participant_id = p_participant);
  if cardinality(v_entries) > 0 then
    perform set_config('camp.health_rewrite', 'on', true);
    update public.medication_administrations set
      participant_id = null, medication_id = null, nonce = null, notes = null,
      reason = case when reason is not null then 'removed at erasure' end,
      override_reason = case when override_reason is not null then 'removed at erasure' end,
      retained_until = p_until
    where id = any (v_entries);
    perform set_config('camp.health_rewrite', 'off', true);
    perform set_config('camp.audit_rewrite', 'on', true);
    update public.audit_events e
    set changes = (
      select coalesce(jsonb_object_agg(f.key, case when e.action = 'create' then '"erased"'::jsonb else '["erased", "erased"]'::jsonb end), '{}')
      from jsonb_each(e.changes) f)
    where e.tenant_id = p_tenant
      and e.resource_type = 'medication_administration'
      and e.resource_id = any (v_entries)
      and e.changes <> '{}'::jsonb;
    perform set_config('camp.audit_rewrite', 'off', true);
    v_kept := v_kept || jsonb_build_object('record', 'medication_administrations', 'count', cardinality(v_entries),
                                           'retained_until', private.iso_time(p_until));
  end if;
  return v_kept;
end
$$;
revoke all on function private.retain_health_records(uuid, uuid, timestamptz) from public;

-- Deletes the kept health records whose period has ended (at p_now); returns how many.
create function private.sweep_retained_health_records(p_now timestamptz default now()) returns int
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_count int;
begin
  perform set_config('camp.health_rewrite', 'on', true);
  -- One statement: a correction and the entry it amends are kept until the same moment and go together.
  delete from public.medication_administrations where retained_until <= p_now;
  get diagnostics v_count = row_count;
  perform set_config('camp.health_rewrite', 'off', true);
  return v_count;
end
$$;
revoke all on function private.sweep_retained_health_records(timestamptz) from public;
comment on function private.sweep_retained_health_records(timestamptz) is
  'The retention sweep: deletes the health records of erased participants kept past their tenant''s retention period. Run by the webhook workers'' hourly housekeeping and by camp health sweep.';

-- Erasure, as before (*_audit.sql), and now also answering what it kept: the
-- tenant's health records of the person, detached first (above).
drop function private.erase_participant(uuid);
create function private.erase_participant(p_id uuid) returns table (photo_key text, retained jsonb)
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_tenant uuid := private.request_tenant_id();
  v_photo text;
  v_until timestamptz;
  v_retained jsonb := '[]'::jsonb;
begin
  select p.photo_key into v_photo from public.participants p
  where p.id = p_id and p.tenant_id = v_tenant and p.erased_at is null
  for update;
  if not found then
    raise exception 'participant not found' using errcode = 'CA404';
  end if;
  v_until := private.health_retention_until(v_tenant);
  if v_until is not null then
    v_retained := private.retain_health_records(v_tenant, p_id, v_until);
  end if;
  perform set_config('camp.erasing', 'on', true);
  update public.participants p set
    user_id = 'erased-' || p.id::text, first_name = 'Erased', surname = 'Erased', full_name = 'Erased',
    gender = null, pronouns = null, date_of_birth = null, school_year = null, rank = null, unit_name = null,
    school_institute = null, arrival_date = null, departure_date = null, room_number = null,
    photo_link = null, photo_key = null, photo_content_type = null, photo_size = null, photo_sha256 = null,
    erased_at = now(), deleted_at = coalesce(p.deleted_at, now())
  where p.id = p_id;
  perform set_config('camp.erasing', 'off', true);
  perform set_config('camp.audit_rewrite', 'on', true);
  update public.audit_events e
  set changes = (
    select coalesce(jsonb_object_agg(f.key, case when e.action = 'create' then '"erased"'::jsonb else '["erased", "erased"]'::jsonb end), '{}')
    from jsonb_each(e.changes) f)
  where e.tenant_id = v_tenant and e.resource_type = 'participant' and e.resource_id = p_id and e.action <> 'erase';
  perform set_config('camp.audit_rewrite', 'off', true);
  return query select v_photo, v_retained;
end
$$;
revoke all on function private.erase_participant(uuid) from public;
grant execute on function private.erase_participant(uuid) to camp_api;
comment on function private.erase_participant(uuid) is
  'The right to erasure (admins, POST /participants/{id}/erase): removes the person''s data from the row and its audit events; the triggers on participants.erased_at remove what hangs on it. Health records of a tenant with a retention period are first detached and kept (private.retain_health_records). Answers the photo key to delete and what was kept.';
