-- =============================================================================
-- Safeguarding, part 2: contacts, care records and consents
--
-- The most sensitive data the service holds. Two locks keep it:
--   1. The API role (camp_api) has no privilege on these tables at all. Its
--      only way in is the functions below (private.care_*), which check the
--      caller's care access (private.care_access(), *_care_access.sql) and
--      write every read into the audit trail in the same transaction.
--   2. Those functions run as camp_care, whose row-level security policies
--      still require the claims' tenant and the caller's care access, so a
--      mistake inside a function cannot show a row to the wrong caller either.
-- Writes are recorded by the audit triggers with their values; those events
-- are visible only to callers with care access (the audit_events policies
-- below). Nothing here emits anything beyond the database.
-- =============================================================================

-- The composite foreign keys below keep each row in its participant's tenant.
alter table public.participants add constraint participants_tenant_id_id_key unique (tenant_id, id);

-- A timestamp as the API writes every timestamp (JavaScript's toISOString).
create function private.iso_time(p_time timestamptz) returns text
  language sql
  immutable
  set search_path = ''
as $$
  select to_char(p_time at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;
grant execute on function private.iso_time(timestamptz) to camp_care;

-- -----------------------------------------------------------------------------
-- Tables
-- -----------------------------------------------------------------------------

-- Who to call about a child, and who may collect them.
create table public.participant_contacts (
  id                uuid primary key default gen_random_uuid(),
  tenant_id         uuid not null default private.request_tenant_id(),
  participant_id    uuid not null,
  name              text not null constraint participant_contacts_name_check check (char_length(btrim(name)) between 1 and 200),
  relationship      text constraint participant_contacts_relationship_check check (char_length(relationship) <= 200),
  -- E.164 (+ and up to 15 digits): the API validates numbers with
  -- libphonenumber-js and stores them in this form.
  phone             text constraint participant_contacts_phone_check check (phone ~ '^\+[1-9][0-9]{3,14}$'),
  phone_alt         text constraint participant_contacts_phone_alt_check check (phone_alt ~ '^\+[1-9][0-9]{3,14}$'),
  email             text constraint participant_contacts_email_check
                    check (email ~ '^[^@[:space:]]+@[^@[:space:]]+$' and char_length(email) <= 320),
  emergency         boolean not null default false,
  -- Who to call first among the emergency contacts; lists sort by it, then by creation.
  emergency_order   int constraint participant_contacts_emergency_order_check check (emergency_order between 1 and 99),
  authorised_pickup boolean not null default false,
  notes             text constraint participant_contacts_notes_check check (char_length(notes) <= 2000),
  created_at        timestamptz not null default now(),
  updated_at        timestamptz not null default now(),
  deleted_at        timestamptz,
  constraint participant_contacts_emergency_phone_check check (not emergency or phone is not null),
  constraint participant_contacts_emergency_order_only_check check (emergency or emergency_order is null),
  constraint participant_contacts_participant_id_fkey foreign key (tenant_id, participant_id)
    references public.participants (tenant_id, id)
);
create index participant_contacts_by_participant on public.participant_contacts (participant_id, emergency_order, created_at, id);
create index participant_contacts_tenant_id on public.participant_contacts (tenant_id);
create trigger participant_contacts_touch_updated_at before update on public.participant_contacts
  for each row execute function private.touch_updated_at();
comment on table public.participant_contacts is
  'Emergency contacts and people authorised to collect a participant. Care data: reached only through the private.care_contact* functions.';

-- What a child needs: one record per participant, its id the participant's.
create table public.participant_care (
  id                   uuid primary key,
  tenant_id            uuid not null default private.request_tenant_id(),
  -- [{name, severity}], severity mild, moderate, severe or anaphylactic (checked by the API).
  allergies            jsonb not null default '[]'
                       constraint participant_care_allergies_check check (jsonb_typeof(allergies) = 'array' and jsonb_array_length(allergies) <= 50),
  dietary_requirements text constraint participant_care_dietary_requirements_check check (char_length(dietary_requirements) <= 2000),
  medical_conditions   text constraint participant_care_medical_conditions_check check (char_length(medical_conditions) <= 2000),
  -- [{name, dose, schedule}] (checked by the API).
  medications          jsonb not null default '[]'
                       constraint participant_care_medications_check check (jsonb_typeof(medications) = 'array' and jsonb_array_length(medications) <= 50),
  care_notes           text constraint participant_care_care_notes_check check (char_length(care_notes) <= 2000),
  -- Derived for the participant list's filter, which must not read the record.
  severe_allergy       boolean not null generated always as (
                         jsonb_path_exists(allergies, '$[*] ? (@.severity == "severe" || @.severity == "anaphylactic")')
                       ) stored,
  created_at           timestamptz not null default now(),
  updated_at           timestamptz not null default now(),
  constraint participant_care_id_fkey foreign key (tenant_id, id) references public.participants (tenant_id, id)
);
create index participant_care_severe on public.participant_care (tenant_id) include (id) where severe_allergy;
create trigger participant_care_touch_updated_at before update on public.participant_care
  for each row execute function private.touch_updated_at();
comment on table public.participant_care is
  'Allergies, dietary needs, medical conditions, medications and care notes of a participant (id = the participant''s id). Care data: reached only through private.care_record*.';

-- What was consented, as a history: a new answer never changes an old one
-- (nobody holds UPDATE or DELETE on it; only erasure removes rows).
create table public.participant_consents (
  id                uuid primary key default gen_random_uuid(),
  tenant_id         uuid not null default private.request_tenant_id(),
  participant_id    uuid not null,
  -- Answers of one participant in the order they were recorded (the latest per kind is the current one).
  seq               bigint generated always as identity,
  kind              text not null constraint participant_consents_kind_check check (kind in ('photo', 'emergency_medical_treatment')),
  status            text not null constraint participant_consents_status_check check (status in ('granted', 'refused', 'unknown')),
  note              text constraint participant_consents_note_check check (char_length(note) <= 2000),
  -- Who recorded it, from the request's claims (null: an operator).
  recorded_by       uuid,
  recorded_by_email text,
  recorded_at       timestamptz not null default clock_timestamp(),
  constraint participant_consents_participant_id_fkey foreign key (tenant_id, participant_id)
    references public.participants (tenant_id, id)
);
create index participant_consents_by_participant on public.participant_consents (participant_id, kind, seq desc);
create index participant_consents_tenant_id on public.participant_consents (tenant_id);
comment on table public.participant_consents is
  'Consent answers (photo, emergency_medical_treatment) as a history, with who recorded each and when. Care data: reached only through private.care_consents*.';

-- -----------------------------------------------------------------------------
-- Row-level security: camp_care sees its caller's tenant, with care access
-- -----------------------------------------------------------------------------

alter table public.participant_contacts enable row level security;
alter table public.participant_care enable row level security;
alter table public.participant_consents enable row level security;

create policy "Care functions read contacts with care access" on public.participant_contacts
  for select to camp_care
  using (tenant_id = (select private.request_tenant_id()) and (select private.care_access()) in ('read', 'write'));
create policy "Care functions add contacts with care write access" on public.participant_contacts
  for insert to camp_care
  with check (tenant_id = (select private.request_tenant_id()) and (select private.care_access()) = 'write');
create policy "Care functions change contacts with care write access" on public.participant_contacts
  for update to camp_care
  using (tenant_id = (select private.request_tenant_id()) and (select private.care_access()) = 'write')
  with check (tenant_id = (select private.request_tenant_id()) and (select private.care_access()) = 'write');
grant select, insert (participant_id, name, relationship, phone, phone_alt, email, emergency, emergency_order, authorised_pickup, notes),
  update (name, relationship, phone, phone_alt, email, emergency, emergency_order, authorised_pickup, notes, deleted_at)
  on public.participant_contacts to camp_care;

create policy "Care functions read care records with care access" on public.participant_care
  for select to camp_care
  using (tenant_id = (select private.request_tenant_id()) and (select private.care_access()) in ('read', 'write'));
create policy "Care functions add care records with care write access" on public.participant_care
  for insert to camp_care
  with check (tenant_id = (select private.request_tenant_id()) and (select private.care_access()) = 'write');
create policy "Care functions change care records with care write access" on public.participant_care
  for update to camp_care
  using (tenant_id = (select private.request_tenant_id()) and (select private.care_access()) = 'write')
  with check (tenant_id = (select private.request_tenant_id()) and (select private.care_access()) = 'write');
grant select, insert (id, allergies, dietary_requirements, medical_conditions, medications, care_notes),
  update (allergies, dietary_requirements, medical_conditions, medications, care_notes)
  on public.participant_care to camp_care;

create policy "Care functions read consents with care access" on public.participant_consents
  for select to camp_care
  using (tenant_id = (select private.request_tenant_id()) and (select private.care_access()) in ('read', 'write'));
create policy "Care functions record consents with care write access" on public.participant_consents
  for insert to camp_care
  with check (tenant_id = (select private.request_tenant_id()) and (select private.care_access()) = 'write');
grant select, insert (participant_id, kind, status, note, recorded_by, recorded_by_email) on public.participant_consents to camp_care;

-- Supabase's default grants to anon and authenticated on new tables in public.
revoke all on public.participant_contacts, public.participant_care, public.participant_consents from anon, authenticated;

-- -----------------------------------------------------------------------------
-- The audit trail: writes with values (triggers), reads (the functions)
-- -----------------------------------------------------------------------------

do $$
declare
  t record;
begin
  for t in select * from (values
    ('participant_contacts', 'contact'), ('participant_care', 'care_record'), ('participant_consents', 'consent')
  ) as v(tbl, kind)
  loop
    execute format(
      'create trigger %I after insert on public.%I referencing new table as new_rows for each statement execute function private.audit_changes(%L)',
      t.tbl || '_audit_insert', t.tbl, t.kind);
    execute format(
      'create trigger %I after update on public.%I referencing old table as old_rows new table as new_rows for each statement execute function private.audit_changes(%L)',
      t.tbl || '_audit_update', t.tbl, t.kind);
  end loop;
end
$$;

alter table public.audit_events drop constraint audit_events_action_check;
alter table public.audit_events add constraint audit_events_action_check
  check (action in ('create', 'update', 'delete', 'erase', 'read'));

-- The resource types whose events are care data: writes carry care values,
-- reads say whose care data someone looked at.
create function private.is_care_resource(p_type text) returns boolean
  language sql
  immutable
  set search_path = ''
as $$
  select p_type in ('contact', 'care_record', 'consent', 'contacts', 'consents', 'care_flag')
$$;
grant execute on function private.is_care_resource(text) to camp_api, camp_reporting;

-- Events of care resources are care data themselves: only a caller with care
-- access sees them (kept with values, so a safeguarding review can tell who
-- changed an allergy's severity; erasure removes the values).
drop policy "API callers read the audit trail of their tenant" on public.audit_events;
create policy "API callers read the audit trail of their tenant" on public.audit_events
  for select to camp_api
  using (
    tenant_id = (select private.request_tenant_id())
    and (not private.is_care_resource(resource_type) or (select private.care_access()) in ('read', 'write'))
  );
grant execute on function private.care_access() to camp_api;

-- A read of care data, on the record in the reading transaction: action
-- read, the actor from the claims, the participant as the resource, no values.
create function private.audit_care_read(p_type text, p_participant uuid) returns void
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_actor jsonb := private.audit_actor();
begin
  insert into public.audit_events
    (tenant_id, actor_user_id, actor_email, actor_via, actor_key_id, request_id, action, resource_type, resource_id)
  values (private.request_tenant_id(), (v_actor ->> 'sub')::uuid, v_actor ->> 'email', coalesce(v_actor ->> 'via', 'operator'),
          (v_actor ->> 'key_id')::uuid, v_actor ->> 'request_id', 'read', p_type, p_participant);
end
$$;
revoke all on function private.audit_care_read(text, uuid) from public;
grant execute on function private.audit_care_read(text, uuid) to camp_care;

-- The participant list filtered on a severe allergy shows one bit of care
-- data per listed participant: each listed participant's read is recorded
-- (resource type care_flag), by the list's own statement.
create function private.audit_care_flag_reads(p_participants uuid[]) returns void
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_actor jsonb := private.audit_actor();
begin
  if private.care_access() = 'none' then
    raise exception 'no access to care data' using errcode = 'CA403';
  end if;
  insert into public.audit_events
    (tenant_id, actor_user_id, actor_email, actor_via, actor_key_id, request_id, action, resource_type, resource_id)
  select private.request_tenant_id(), (v_actor ->> 'sub')::uuid, v_actor ->> 'email', coalesce(v_actor ->> 'via', 'operator'),
         (v_actor ->> 'key_id')::uuid, v_actor ->> 'request_id', 'read', 'care_flag', p.id
  from unnest(p_participants) as p(id);
end
$$;
revoke all on function private.audit_care_flag_reads(uuid[]) from public;
grant execute on function private.audit_care_flag_reads(uuid[]) to camp_api;

-- -----------------------------------------------------------------------------
-- The gate every care function passes first
-- -----------------------------------------------------------------------------

-- Refuses (CA403) unless the caller's care access reaches p_need ('read' or
-- 'write'); then (CA404) unless the participant is live in the claims'
-- tenant; a write also needs the participant's instance not archived
-- (CA409), and locks it against being archived meanwhile. Access first, so a
-- caller without it learns nothing, not even whether a participant exists.
create function private.care_gate(p_participant uuid, p_need text) returns void
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_level text := private.care_access();
  v_instance uuid;
begin
  if v_level = 'none' then
    raise exception 'no access to care data (needs the user''s care_access, and for an API key its care scope)'
      using errcode = 'CA403';
  end if;
  if p_need = 'write' and v_level <> 'write' then
    raise exception 'read-only access to care data (needs care_access write, and for an API key its write scope)'
      using errcode = 'CA403';
  end if;
  select p.instance_id into v_instance
  from public.participants p
  where p.id = p_participant and p.tenant_id = private.request_tenant_id() and p.deleted_at is null;
  if not found then
    raise exception 'participant not found' using errcode = 'CA404';
  end if;
  if p_need = 'write' then
    perform private.lock_writable_instance(v_instance);
  end if;
end
$$;
revoke all on function private.care_gate(uuid, text) from public;
grant execute on function private.care_gate(uuid, text) to camp_care;

-- -----------------------------------------------------------------------------
-- Contacts
-- -----------------------------------------------------------------------------

create function private.contact_json(c public.participant_contacts) returns jsonb
  language sql
  stable
  set search_path = ''
as $$
  select jsonb_build_object(
    'id', c.id, 'participant_id', c.participant_id, 'name', c.name, 'relationship', c.relationship,
    'phone', c.phone, 'phone_alt', c.phone_alt, 'email', c.email, 'emergency', c.emergency,
    'emergency_order', c.emergency_order, 'authorised_pickup', c.authorised_pickup, 'notes', c.notes,
    'created_at', private.iso_time(c.created_at), 'updated_at', private.iso_time(c.updated_at),
    'deleted_at', private.iso_time(c.deleted_at))
$$;
grant execute on function private.contact_json(public.participant_contacts) to camp_care;

-- A participant's contacts, in their stable order: emergency_order (unset
-- last), then creation. At most 100 per participant (deleted ones included:
-- create refuses beyond), so the whole list is small.
create function private.care_contacts(p_participant uuid, p_include_deleted boolean) returns jsonb
  language plpgsql
  security definer
  set search_path = ''
as $$
begin
  perform private.care_gate(p_participant, 'read');
  perform private.audit_care_read('contacts', p_participant);
  return (
    select coalesce(jsonb_agg(private.contact_json(c) order by c.emergency_order, c.created_at, c.id), '[]'::jsonb)
    from public.participant_contacts c
    where c.participant_id = p_participant and (p_include_deleted or c.deleted_at is null)
  );
end
$$;

-- One live contact and its row version (for its ETag), or CA404.
create function private.care_contact(p_participant uuid, p_contact uuid) returns jsonb
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_found jsonb;
begin
  perform private.care_gate(p_participant, 'read');
  perform private.audit_care_read('contacts', p_participant);
  select jsonb_build_object('record', private.contact_json(c), 'version', c.xmin::text) into v_found
  from public.participant_contacts c
  where c.id = p_contact and c.participant_id = p_participant and c.deleted_at is null;
  if v_found is null then
    raise exception 'contact not found' using errcode = 'CA404';
  end if;
  return v_found;
end
$$;

-- A new contact from the fields of p (validated by the API; the checks above hold regardless).
create function private.care_contact_create(p_participant uuid, p jsonb) returns jsonb
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_created jsonb;
begin
  perform private.care_gate(p_participant, 'write');
  -- Creates for one participant take turns, so the count below holds.
  perform pg_advisory_xact_lock(hashtextextended('care contacts ' || p_participant::text, 0));
  if (select count(*) from public.participant_contacts c where c.participant_id = p_participant) >= 100 then
    raise exception 'a participant has at most 100 contacts, deleted ones included' using errcode = 'CA409';
  end if;
  insert into public.participant_contacts as c
    (participant_id, name, relationship, phone, phone_alt, email, emergency, emergency_order, authorised_pickup, notes)
  values (p_participant, p ->> 'name', p ->> 'relationship', p ->> 'phone', p ->> 'phone_alt', p ->> 'email',
          coalesce((p ->> 'emergency')::boolean, false), (p ->> 'emergency_order')::int,
          coalesce((p ->> 'authorised_pickup')::boolean, false), p ->> 'notes')
  returning jsonb_build_object('record', private.contact_json(c), 'version', c.xmin::text) into v_created;
  return v_created;
end
$$;

-- Whether a row version list (an If-Match) accepts `p_version`: null is no
-- condition, '*' any existing record.
create function private.version_matches(p_versions text[], p_version text) returns boolean
  language sql
  immutable
  set search_path = ''
as $$
  select p_versions is null or (p_version is not null and ('*' = any (p_versions) or p_version = any (p_versions)))
$$;
grant execute on function private.version_matches(text[], text) to camp_care;

-- Changes the fields present in p; a contact no longer an emergency one
-- loses its emergency_order unless p sets one. CA412 when p_versions (an
-- If-Match) no longer matches, CA404 when there is no such live contact.
create function private.care_contact_update(p_participant uuid, p_contact uuid, p jsonb, p_versions text[]) returns jsonb
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_version text;
  v_changed jsonb;
begin
  perform private.care_gate(p_participant, 'write');
  select c.xmin::text into v_version
  from public.participant_contacts c
  where c.id = p_contact and c.participant_id = p_participant and c.deleted_at is null
  for update;
  if v_version is null then
    raise exception 'contact not found' using errcode = 'CA404';
  end if;
  if not private.version_matches(p_versions, v_version) then
    raise exception 'the record has changed since you read it' using errcode = 'CA412';
  end if;
  update public.participant_contacts as c set
    name = case when p ? 'name' then p ->> 'name' else c.name end,
    relationship = case when p ? 'relationship' then p ->> 'relationship' else c.relationship end,
    phone = case when p ? 'phone' then p ->> 'phone' else c.phone end,
    phone_alt = case when p ? 'phone_alt' then p ->> 'phone_alt' else c.phone_alt end,
    email = case when p ? 'email' then p ->> 'email' else c.email end,
    emergency = case when p ? 'emergency' then (p ->> 'emergency')::boolean else c.emergency end,
    emergency_order = case when p ? 'emergency_order' then (p ->> 'emergency_order')::int
                           when p ? 'emergency' and not (p ->> 'emergency')::boolean then null
                           else c.emergency_order end,
    authorised_pickup = case when p ? 'authorised_pickup' then (p ->> 'authorised_pickup')::boolean else c.authorised_pickup end,
    notes = case when p ? 'notes' then p ->> 'notes' else c.notes end
  where c.id = p_contact
  returning jsonb_build_object('record', private.contact_json(c), 'version', c.xmin::text) into v_changed;
  return v_changed;
end
$$;

-- Soft delete (DECISIONS.md); the values stay until the participant is erased.
create function private.care_contact_delete(p_participant uuid, p_contact uuid, p_versions text[]) returns void
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_version text;
begin
  perform private.care_gate(p_participant, 'write');
  select c.xmin::text into v_version
  from public.participant_contacts c
  where c.id = p_contact and c.participant_id = p_participant and c.deleted_at is null
  for update;
  if v_version is null then
    raise exception 'contact not found' using errcode = 'CA404';
  end if;
  if not private.version_matches(p_versions, v_version) then
    raise exception 'the record has changed since you read it' using errcode = 'CA412';
  end if;
  update public.participant_contacts set deleted_at = now() where id = p_contact;
end
$$;

-- -----------------------------------------------------------------------------
-- Care records
-- -----------------------------------------------------------------------------

-- A participant's care record as the API writes it; an empty one (no
-- timestamps) when none was ever written.
create function private.care_record_json(p_participant uuid, r public.participant_care) returns jsonb
  language sql
  stable
  set search_path = ''
as $$
  select jsonb_build_object(
    'participant_id', p_participant,
    'allergies', coalesce(r.allergies, '[]'::jsonb),
    'dietary_requirements', r.dietary_requirements,
    'medical_conditions', r.medical_conditions,
    'medications', coalesce(r.medications, '[]'::jsonb),
    'care_notes', r.care_notes,
    'created_at', private.iso_time(r.created_at),
    'updated_at', private.iso_time(r.updated_at))
$$;
grant execute on function private.care_record_json(uuid, public.participant_care) to camp_care;

-- {record, version}; version is null when no record was written yet.
create function private.care_record(p_participant uuid) returns jsonb
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_found jsonb;
begin
  perform private.care_gate(p_participant, 'read');
  perform private.audit_care_read('care_record', p_participant);
  select jsonb_build_object('record', private.care_record_json(p_participant, r), 'version', r.xmin::text) into v_found
  from public.participant_care r where r.id = p_participant;
  return coalesce(v_found, jsonb_build_object('record', private.care_record_json(p_participant, null), 'version', null));
end
$$;

-- Writes the care record: with p_replace (PUT) every field, those absent from
-- p emptied; without it (PATCH) only the fields present in p. CA412 when
-- p_versions (an If-Match) does not match the current record (or there is none).
create function private.care_record_write(p_participant uuid, p jsonb, p_replace boolean, p_versions text[]) returns jsonb
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_version text;
  v_written jsonb;
begin
  perform private.care_gate(p_participant, 'write');
  -- Writes for one participant take turns: the first creates, the next updates.
  perform pg_advisory_xact_lock(hashtextextended('care record ' || p_participant::text, 0));
  select r.xmin::text into v_version from public.participant_care r where r.id = p_participant for update;
  if not private.version_matches(p_versions, v_version) then
    raise exception 'the record has changed since you read it' using errcode = 'CA412';
  end if;
  if v_version is null then
    insert into public.participant_care as r (id, allergies, dietary_requirements, medical_conditions, medications, care_notes)
    values (p_participant, coalesce(p -> 'allergies', '[]'::jsonb), p ->> 'dietary_requirements', p ->> 'medical_conditions',
            coalesce(p -> 'medications', '[]'::jsonb), p ->> 'care_notes')
    returning jsonb_build_object('record', private.care_record_json(p_participant, r), 'version', r.xmin::text) into v_written;
  else
    update public.participant_care as r set
      allergies = case when p_replace or p ? 'allergies' then coalesce(p -> 'allergies', '[]'::jsonb) else r.allergies end,
      dietary_requirements = case when p_replace or p ? 'dietary_requirements' then p ->> 'dietary_requirements' else r.dietary_requirements end,
      medical_conditions = case when p_replace or p ? 'medical_conditions' then p ->> 'medical_conditions' else r.medical_conditions end,
      medications = case when p_replace or p ? 'medications' then coalesce(p -> 'medications', '[]'::jsonb) else r.medications end,
      care_notes = case when p_replace or p ? 'care_notes' then p ->> 'care_notes' else r.care_notes end
    where r.id = p_participant
    returning jsonb_build_object('record', private.care_record_json(p_participant, r), 'version', r.xmin::text) into v_written;
  end if;
  return v_written;
end
$$;

-- The ids of the tenant's participants with a severe or anaphylactic allergy,
-- for the participant list's filter (callers with care access only).
create function private.severe_allergy_participants() returns setof uuid
  language plpgsql
  stable
  security definer
  set search_path = ''
as $$
begin
  if private.care_access() = 'none' then
    raise exception 'no access to care data (needs the user''s care_access, and for an API key its care scope)'
      using errcode = 'CA403';
  end if;
  return query select r.id from public.participant_care r where r.severe_allergy;
end
$$;

-- -----------------------------------------------------------------------------
-- Consents
-- -----------------------------------------------------------------------------

-- The current answer of each kind ('unknown' when none was recorded) and the
-- whole history, newest first.
create function private.consents_json(p_participant uuid) returns jsonb
  language sql
  stable
  set search_path = ''
as $$
  with answers as (
    select c.* from public.participant_consents c where c.participant_id = p_participant
  ), answer_json as (
    select a.kind, a.seq, jsonb_build_object(
      'id', a.id, 'kind', a.kind, 'status', a.status, 'note', a.note, 'recorded_by', a.recorded_by,
      'recorded_by_email', a.recorded_by_email, 'recorded_at', private.iso_time(a.recorded_at)) as answer
    from answers a
  )
  select jsonb_build_object(
    'participant_id', p_participant,
    'photo', coalesce(
      (select j.answer - 'id' - 'kind' from answer_json j where j.kind = 'photo' order by j.seq desc limit 1),
      '{"status": "unknown", "note": null, "recorded_by": null, "recorded_by_email": null, "recorded_at": null}'::jsonb),
    'emergency_medical_treatment', coalesce(
      (select j.answer - 'id' - 'kind' from answer_json j where j.kind = 'emergency_medical_treatment' order by j.seq desc limit 1),
      '{"status": "unknown", "note": null, "recorded_by": null, "recorded_by_email": null, "recorded_at": null}'::jsonb),
    'history', coalesce((select jsonb_agg(j.answer order by j.seq desc) from answer_json j), '[]'::jsonb))
$$;
grant execute on function private.consents_json(uuid) to camp_care;

create function private.care_consents(p_participant uuid) returns jsonb
  language plpgsql
  security definer
  set search_path = ''
as $$
begin
  perform private.care_gate(p_participant, 'read');
  perform private.audit_care_read('consents', p_participant);
  return private.consents_json(p_participant);
end
$$;

-- Records the answers in p ({photo?, emergency_medical_treatment?, note?}),
-- by the claims' user, after every earlier one. Returns the consents and,
-- when a photo refusal removed a stored photo, its object key
-- (removed_photo_key), for the caller to delete once this has committed.
-- At most 1,000 answers per participant.
create function private.care_consents_record(p_participant uuid, p jsonb) returns jsonb
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_actor jsonb := private.audit_actor();
begin
  perform private.care_gate(p_participant, 'write');
  -- Answers of one participant are recorded one request after the other, so seq follows commit order.
  perform pg_advisory_xact_lock(hashtextextended('care consents ' || p_participant::text, 0));
  if (select count(*) from public.participant_consents c where c.participant_id = p_participant) >= 999 then
    raise exception 'a participant has at most 1,000 consent answers' using errcode = 'CA409';
  end if;
  perform set_config('camp.withdrawn_photo', '', true);
  insert into public.participant_consents (participant_id, kind, status, note, recorded_by, recorded_by_email)
  select p_participant, k.kind, p ->> k.kind, p ->> 'note', (v_actor ->> 'sub')::uuid, v_actor ->> 'email'
  from (values ('photo', 1), ('emergency_medical_treatment', 2)) as k(kind, position)
  where p ? k.kind
  order by k.position;
  return private.consents_json(p_participant)
    || jsonb_build_object('removed_photo_key', nullif(current_setting('camp.withdrawn_photo', true), ''));
end
$$;

do $$
declare
  f text;
begin
  foreach f in array array[
    'private.care_contacts(uuid, boolean)', 'private.care_contact(uuid, uuid)', 'private.care_contact_create(uuid, jsonb)',
    'private.care_contact_update(uuid, uuid, jsonb, text[])', 'private.care_contact_delete(uuid, uuid, text[])',
    'private.care_record(uuid)', 'private.care_record_write(uuid, jsonb, boolean, text[])',
    'private.severe_allergy_participants()', 'private.care_consents(uuid)', 'private.care_consents_record(uuid, jsonb)'
  ]
  loop
    execute format('alter function %s owner to camp_care', f);
    execute format('revoke all on function %s from public', f);
    execute format('grant execute on function %s to camp_api', f);
  end loop;
end
$$;

-- -----------------------------------------------------------------------------
-- A refused photo consent: no photo
-- -----------------------------------------------------------------------------

-- Whether the participant's current photo answer is `refused` (one bit the
-- photo upload needs from any caller; nothing else of the consents).
create function private.photo_consent_refused(p_participant uuid) returns boolean
  language sql
  stable
  security definer
  set search_path = ''
as $$
  select coalesce((
    select c.status = 'refused'
    from public.participant_consents c
    where c.participant_id = p_participant and c.kind = 'photo'
    order by c.seq desc
    limit 1), false)
$$;
revoke all on function private.photo_consent_refused(uuid) from public;
grant execute on function private.photo_consent_refused(uuid) to camp_api;

-- A refusal removes the stored photo and the link, in the refusing
-- transaction; the object's key is left in camp.withdrawn_photo for
-- private.care_consents_record to return (the API deletes the object after
-- commit; camp photos sweep removes it if that fails).
create function private.withdraw_refused_photo() returns trigger
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_key text;
begin
  select p.photo_key into v_key from public.participants p where p.id = new.participant_id for update;
  update public.participants
  set photo_key = null, photo_content_type = null, photo_size = null, photo_sha256 = null, photo_link = null
  where id = new.participant_id and (photo_key is not null or photo_link is not null);
  if v_key is not null then
    perform set_config('camp.withdrawn_photo', v_key, true);
  end if;
  return null;
end
$$;

create trigger participant_consents_withdraw_photo after insert on public.participant_consents
  for each row when (new.kind = 'photo' and new.status = 'refused')
  execute function private.withdraw_refused_photo();

-- While the photo answer is `refused`, no photo (stored or linked) may be set.
create function private.guard_refused_photo() returns trigger
  language plpgsql
  security definer
  set search_path = ''
as $$
begin
  if private.photo_consent_refused(new.id) then
    raise exception 'photo consent is refused for this participant' using errcode = 'CA409',
      column = case when new.photo_key is distinct from old.photo_key then 'photo' else 'photo_link' end;
  end if;
  return new;
end
$$;

create trigger participants_guard_refused_photo before update of photo_key, photo_link on public.participants
  for each row
  when ((new.photo_key is not null and new.photo_key is distinct from old.photo_key)
     or (new.photo_link is not null and new.photo_link is distinct from old.photo_link))
  execute function private.guard_refused_photo();

-- -----------------------------------------------------------------------------
-- Erasure takes the care data with it
-- -----------------------------------------------------------------------------

-- When private.erase_participant erases a participant (sets erased_at), its
-- contacts, care record and consents are deleted, so are the stored answers
-- of keyed POSTs that name it (idempotency_keys), and the values in their
-- earlier audit events replaced by "erased" (field names stay), in the same
-- transaction. Read events carry no values and stay.
create function private.erase_care_of_participant() returns trigger
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_ids uuid[];
begin
  v_ids := array(select c.id from public.participant_contacts c where c.participant_id = new.id)
        || array(select c.id from public.participant_consents c where c.participant_id = new.id)
        || new.id;
  delete from public.participant_contacts where participant_id = new.id;
  delete from public.participant_consents where participant_id = new.id;
  delete from public.participant_care where id = new.id;
  -- Stored answers of keyed POSTs about the participant (a contact's 201 carries its values).
  delete from public.idempotency_keys k where k.tenant_id = new.tenant_id and strpos(k.body, new.id::text) > 0;
  perform set_config('camp.audit_rewrite', 'on', true);
  update public.audit_events e
  set changes = (
    select coalesce(jsonb_object_agg(f.key, case when e.action = 'create' then '"erased"'::jsonb else '["erased", "erased"]'::jsonb end), '{}')
    from jsonb_each(e.changes) f)
  where e.tenant_id = new.tenant_id
    and e.resource_type in ('contact', 'consent', 'care_record')
    and e.resource_id = any (v_ids)
    and e.changes <> '{}'::jsonb;
  perform set_config('camp.audit_rewrite', 'off', true);
  return null;
end
$$;

create trigger participants_erase_care after update of erased_at on public.participants
  for each row when (old.erased_at is null and new.erased_at is not null)
  execute function private.erase_care_of_participant();
