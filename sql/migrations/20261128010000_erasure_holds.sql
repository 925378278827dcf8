-- =============================================================================
-- Erasure cannot be outrun (issue 38, item 1)
--
-- private.erase_participant (*_audit.sql) locks the participant row, blanks
-- it, sets erased_at, and its triggers delete the care data and withhold the
-- stored answers naming the person, all in one transaction. A write that hung
-- data on the participant while that ran used to slip past it: it had checked
-- the participant was live before the erase committed, and its insert's
-- foreign key check takes only KEY SHARE on the participant row, which the
-- erasing UPDATE (it changes no key column, so FOR NO KEY UPDATE) does not
-- wait for. Both committed; the erase, whose snapshot could not see the
-- write, left the new contact, care record or consent (and its audit values
-- and stored Idempotency-Key answer) behind, and nothing could erase twice.
--
-- The rule, held by the database: every row that hangs data on a participant
-- is written only while holding a lock on the participant row that conflicts
-- with the erasing UPDATE, and only if the participant is not erased. Then a
-- write either commits before the erase takes the row (the erase waits for
-- it, and its later statements, each with a new snapshot, see and erase what
-- it wrote), or it waits for the erase and is then refused.
--
-- CONTRACT of private.hold_live_participant(), for every table that hangs
-- data on a participant (now and later: attendance, health centre, ...):
--
--   create trigger <table>_hold_live_participant
--     before insert or update on public.<table>
--     for each row execute function private.hold_live_participant();
--
--   * the row names its participant in the column participant_id (or in the
--     column given as the trigger's one argument, e.g. ('id') for
--     participant_care, whose id is the participant's) and its tenant in
--     tenant_id;
--   * the trigger locks that participant row FOR SHARE until the writing
--     transaction ends, and refuses the row (SQLSTATE CA404, constraint
--     live_participant) when the participant is erased or is not a
--     participant of the row's tenant. The API answers that 404 NOT_FOUND
--     "participant not found" (functions/db/pg-errors.ts);
--   * it does not refuse soft-deleted participants: whether those take writes
--     is the caller's rule (the care doors refuse them, private.care_gate);
--   * erasure must also delete or blank the table's rows of the participant
--     (a trigger after update of erased_at on public.participants, like
--     private.erase_care_of_participant), and tests/erasure-race.test.ts and
--     tests/erasure-footprint.test.ts should cover the new write path.
--
-- Why FOR SHARE and not KEY SHARE (what the foreign key check takes): KEY
-- SHARE only conflicts with deleting the row or changing its key, and erasure
-- does neither; FOR SHARE conflicts with every UPDATE of the row, so with the
-- erasing one. It does not conflict with other FOR SHARE holders, so writes
-- to different tables of one participant still run side by side. It does
-- conflict with ordinary updates of the participant (a PATCH, a photo
-- upload): those wait for the care write's transaction, as it waits for
-- theirs, a few milliseconds.
--
-- Lock order: a write that locks one of these rows before writing it (a
-- contact update, a care record update) would otherwise take the row lock
-- first and the participant second, while the erase takes them the other way
-- round (participant, then deleting the rows): a deadlock. The care doors
-- therefore take the participant's lock first (private.care_gate below); the
-- trigger then only confirms it.
-- =============================================================================

create function private.hold_live_participant() returns trigger
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_participant uuid;
  v_erased timestamptz;
begin
  -- No tenant (no claims): the row cannot be stored anyway (not null, row-level security), which say so.
  if new.tenant_id is null then
    return new;
  end if;
  if tg_nargs = 0 then
    v_participant := new.participant_id;
  else
    v_participant := (to_jsonb(new) ->> tg_argv[0])::uuid;
  end if;
  select p.erased_at into v_erased
  from public.participants p
  where p.id = v_participant and p.tenant_id = new.tenant_id
  for share;
  if not found or v_erased is not null then
    raise exception 'participant not found' using errcode = 'CA404', constraint = 'live_participant';
  end if;
  return new;
end
$$;
revoke all on function private.hold_live_participant() from public;
comment on function private.hold_live_participant() is
  'Trigger (BEFORE INSERT OR UPDATE FOR EACH ROW) for every table that hangs data on a participant: locks the participant row (NEW.participant_id, or the column named by the trigger argument) FOR SHARE and refuses (CA404, constraint live_participant) when it is erased or not of the row''s tenant, so no write outruns an erasure. See *_erasure_holds.sql.';

create trigger participant_contacts_hold_live_participant
  before insert or update on public.participant_contacts
  for each row execute function private.hold_live_participant();
create trigger participant_consents_hold_live_participant
  before insert or update on public.participant_consents
  for each row execute function private.hold_live_participant();
create trigger participant_care_hold_live_participant
  before insert or update on public.participant_care
  for each row execute function private.hold_live_participant('id');

-- The care doors take the participant's lock before any care row's (see Lock
-- order above); a write waiting here for an erase then finds the participant
-- deleted and is refused like any write to a deleted participant. The rest is
-- as before (*_care_records.sql).
create or replace function private.care_gate(p_participant uuid, p_need text) returns void
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
  if p_need = 'write' then
    select p.instance_id into v_instance
    from public.participants p
    where p.id = p_participant and p.tenant_id = private.request_tenant_id() and p.deleted_at is null
    for share;
  else
    select p.instance_id into v_instance
    from public.participants p
    where p.id = p_participant and p.tenant_id = private.request_tenant_id() and p.deleted_at is null;
  end if;
  if not found then
    raise exception 'participant not found' using errcode = 'CA404';
  end if;
  if p_need = 'write' then
    perform private.lock_writable_instance(v_instance);
  end if;
end
$$;

-- Consents: the per-participant turn is taken before the gate's lock. A
-- refusal upgrades its participant lock (private.withdraw_refused_photo
-- updates the row); two answers each holding the shared lock and waiting for
-- the other's turn would deadlock. The rest is as before.
create or replace function private.care_consents_record(p_participant uuid, p jsonb) returns jsonb
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_actor jsonb := private.audit_actor();
begin
  -- A caller without care write access is refused (by the gate) before it waits for any turn.
  if private.care_access() <> 'write' then
    perform private.care_gate(p_participant, 'write');
  end if;
  -- Answers of one participant are recorded one request after the other, so seq follows commit order.
  perform pg_advisory_xact_lock(hashtextextended('care consents ' || p_participant::text, 0));
  perform private.care_gate(p_participant, 'write');
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

-- Uploads in progress of an erased participant's photo: their keys hold the
-- photo's hash, and an upload refused by the erasure (photos/data.ts
-- recordPhoto: 404) removes its object, not its intent.
create function private.erase_photo_uploads_of_participant() returns trigger
  language plpgsql
  security definer
  set search_path = ''
as $$
begin
  delete from public.photo_uploads u
  where u.tenant_id = new.tenant_id and starts_with(u.key, new.tenant_id::text || '/' || new.id::text || '/');
  return null;
end
$$;
revoke all on function private.erase_photo_uploads_of_participant() from public;

create trigger participants_erase_photo_uploads after update of erased_at on public.participants
  for each row when (old.erased_at is null and new.erased_at is not null)
  execute function private.erase_photo_uploads_of_participant();
