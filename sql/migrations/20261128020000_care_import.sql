-- =============================================================================
-- Safeguarding: the CSV import's and export's doors to care data
--
-- An import's safeguarding columns (contacts, allergies, dietary needs,
-- medical conditions, consents) reach the care tables only through the care
-- routes' own doors (private.care_contact_create, care_contact_update,
-- care_record_write, care_consents_record; *_care_records.sql), which check
-- access, the participant and its instance, and whose writes the audit
-- triggers record. private.care_import only decides, for many participants
-- in one call, what differs from what is stored, so that an unchanged line
-- writes nothing (no audit event); it returns which participants differ,
-- never a value. private.care_export_cells is the export's read, recorded in
-- the audit trail as the care routes record reads, for each exported participant.
-- =============================================================================

-- p_rows: [{participant_id, contacts: [contact fields], care: {fields}, consents: {kind: status}}],
-- each validated by the API with the care routes' schemas. Contacts are
-- matched by name (trimmed, ignoring case) among the participant's live ones.
-- With p_write, what differs is written; without, nothing is (a dry run).
create function private.care_import(p_rows jsonb, p_write boolean) returns uuid[]
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_row jsonb;
  v_participant uuid;
  v_contact jsonb;
  v_existing public.participant_contacts;
  v_care public.participant_care;
  v_diff jsonb;
  v_differs boolean;
  v_changed uuid[] := '{}'::uuid[];
begin
  if private.care_access() <> 'write' then
    raise exception 'no write access to care data (needs care_access write, and for an API key its care and write scopes)'
      using errcode = 'CA403';
  end if;
  for v_row in select value from jsonb_array_elements(p_rows) loop
    v_participant := (v_row ->> 'participant_id')::uuid;
    v_differs := false;

    for v_contact in select value from jsonb_array_elements(coalesce(v_row -> 'contacts', '[]'::jsonb)) loop
      select c.* into v_existing
      from public.participant_contacts c
      where c.participant_id = v_participant and c.deleted_at is null
        and lower(btrim(c.name)) = lower(btrim(v_contact ->> 'name'))
      order by c.created_at, c.id
      limit 1;
      if not found then
        v_differs := true;
        if p_write then
          perform private.care_contact_create(v_participant, v_contact);
        end if;
      else
        select coalesce(jsonb_object_agg(f.key, f.value), '{}'::jsonb) into v_diff
        from jsonb_each(v_contact) f
        where f.key <> 'name' and f.value is distinct from to_jsonb(v_existing) -> f.key;
        if v_diff <> '{}'::jsonb then
          v_differs := true;
          if p_write then
            perform private.care_contact_update(v_participant, v_existing.id, v_diff, null);
          end if;
        end if;
      end if;
    end loop;

    if v_row ? 'care' then
      select r.* into v_care from public.participant_care r where r.id = v_participant;
      select coalesce(jsonb_object_agg(f.key, f.value), '{}'::jsonb) into v_diff
      from jsonb_each(v_row -> 'care') f
      where f.value is distinct from coalesce(to_jsonb(v_care) -> f.key,
                                              case when f.key in ('allergies', 'medications') then '[]'::jsonb else 'null'::jsonb end);
      if v_diff <> '{}'::jsonb then
        v_differs := true;
        if p_write then
          perform private.care_record_write(v_participant, v_diff, false, null);
        end if;
      end if;
    end if;

    if v_row ? 'consents' then
      select coalesce(jsonb_object_agg(k.key, k.value), '{}'::jsonb) into v_diff
      from jsonb_each(v_row -> 'consents') k
      where k.key in ('photo', 'emergency_medical_treatment')
        and (k.value #>> '{}') is distinct from coalesce((
          select c.status from public.participant_consents c
          where c.participant_id = v_participant and c.kind = k.key
          order by c.seq desc limit 1), 'unknown');
      if v_diff <> '{}'::jsonb then
        v_differs := true;
        if p_write then
          perform private.care_consents_record(v_participant, v_diff);
        end if;
      end if;
    end if;

    if v_differs then
      v_changed := v_changed || v_participant;
    end if;
  end loop;
  return v_changed;
end
$$;

-- The export's care columns of one participant, in the order of the import's
-- columns: three contacts (emergency ones first, as listed) of six cells each,
-- allergies as `name:severity; …`, dietary requirements, medical conditions,
-- and the two consents' current answers. Recorded as reads of the contacts,
-- the care record and the consents.
create function private.care_export_cells(p_participant uuid) returns text[]
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_cells text[] := '{}'::text[];
  v_contact public.participant_contacts;
  v_care public.participant_care;
  v_n int := 0;
begin
  if private.care_access() = 'none' then
    raise exception 'no access to care data (needs the user''s care_access, and for an API key its care scope)'
      using errcode = 'CA403';
  end if;
  -- What the export reads, as the care routes record their reads of the same records.
  perform private.audit_care_read('contacts', p_participant);
  perform private.audit_care_read('care_record', p_participant);
  perform private.audit_care_read('consents', p_participant);
  for v_contact in
    select c.* from public.participant_contacts c
    where c.participant_id = p_participant and c.deleted_at is null
    order by c.emergency_order, c.created_at, c.id
    limit 3
  loop
    v_n := v_n + 1;
    v_cells := v_cells || array[v_contact.name, v_contact.relationship, v_contact.phone, v_contact.email,
      case when v_contact.emergency then 'yes' else 'no' end, case when v_contact.authorised_pickup then 'yes' else 'no' end];
  end loop;
  while v_n < 3 loop
    v_n := v_n + 1;
    v_cells := v_cells || array[null, null, null, null, null, null]::text[];
  end loop;
  select r.* into v_care from public.participant_care r where r.id = p_participant;
  v_cells := v_cells || array[
    (select string_agg((a ->> 'name') || ':' || (a ->> 'severity'), '; ' order by n)
       from jsonb_array_elements(coalesce(v_care.allergies, '[]'::jsonb)) with ordinality as x(a, n)),
    v_care.dietary_requirements,
    v_care.medical_conditions];
  v_cells := v_cells || array(
    select coalesce((select c.status from public.participant_consents c
                     where c.participant_id = p_participant and c.kind = k.kind
                     order by c.seq desc limit 1), 'unknown')
    from unnest(array['photo', 'emergency_medical_treatment']) with ordinality as k(kind, n)
    order by k.n);
  return v_cells;
end
$$;

do $$
declare
  f text;
begin
  foreach f in array array['private.care_import(jsonb, boolean)', 'private.care_export_cells(uuid)']
  loop
    execute format('alter function %s owner to camp_care', f);
    execute format('revoke all on function %s from public', f);
    execute format('grant execute on function %s to camp_api', f);
  end loop;
end
$$;
