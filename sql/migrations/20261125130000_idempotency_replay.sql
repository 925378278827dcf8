-- What a replay may return (functions/http/idempotency.ts, docs/api.md "Safe
-- retries"). A stored answer is a copy of what it answered, so:
--   * an answer holding a secret (an API key, a webhook signing secret) is
--     never stored: the key keeps a marker (`withheld = 'secret'`, no body),
--     and a retry is told the secret was shown once;
--   * an answer naming a participant who is then erased loses its body and
--     headers (`withheld = 'erased'`) in the erasing transaction, and a retry
--     is told so instead of running again (which would create the person anew);
--   * the rights the operation relied on (`requires`: admin, care) are kept
--     beside the answer and checked against the caller's current ones before a
--     replay;
--   * answers go after their 24 hours: private.prune_idempotency_keys, run by
--     the hourly housekeeping of the webhook workers.

alter table public.idempotency_keys
  add column withheld text constraint idempotency_keys_withheld_check check (withheld in ('secret', 'erased')),
  add column requires text[] not null default '{}'
    constraint idempotency_keys_requires_check check (requires <@ array['admin', 'care']::text[]),
  alter column body drop not null,
  -- An erased answer forgets the request too: its hash is one of a body that held the person's data.
  alter column request_hash drop not null,
  add constraint idempotency_keys_withheld_body check ((withheld is null) = (body is not null)),
  add constraint idempotency_keys_hash_check check (request_hash is not null or withheld = 'erased');

comment on table public.idempotency_keys is
  'The stored answers of POSTs sent with an Idempotency-Key, per tenant and user, for 24 hours (removed by private.prune_idempotency_keys in the hourly housekeeping, and a few at a time by later keyed requests of the tenant). Never a secret (withheld = secret), never an erased participant (withheld = erased).';
comment on column public.idempotency_keys.withheld is
  'Why the answer is not kept: secret (it held an API key or signing secret, shown once), erased (it named a participant since erased). Null when body holds the answer.';
comment on column public.idempotency_keys.requires is
  'The rights the first request relied on beyond write scope (admin, care); a replay is given only to a caller who still holds them.';

-- Answers stored before this migration: keys and signing secrets, and answers
-- naming participants erased already, go now.
update public.idempotency_keys
set withheld = 'secret', body = null, headers = '{}'
where body ~ '"key":"camp_[A-Za-z0-9_-]{43,}"' or body ~ '"secret":"whsec_';

-- Every answer naming the participant (by id, in its body or its Location)
-- loses its copy, whichever route stored it: creates (one or bulk), photo
-- uploads, contacts, anything a later route adds. The key stays, so a retry
-- of the request is answered 409 rather than run again.
create function private.withhold_answers_naming(p_tenant uuid, p_participant uuid) returns bigint
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_count bigint;
begin
  update public.idempotency_keys k
  set withheld = 'erased', body = null, headers = '{}', request_hash = null
  where k.tenant_id = p_tenant
    and k.body is not null
    and (strpos(k.body, p_participant::text) > 0 or strpos(k.headers::text, p_participant::text) > 0);
  get diagnostics v_count = row_count;
  return v_count;
end
$$;
revoke all on function private.withhold_answers_naming(uuid, uuid) from public;

update public.idempotency_keys k
set withheld = 'erased', body = null, headers = '{}', request_hash = null
where k.body is not null
  and exists (
    select from public.participants p
    where p.tenant_id = k.tenant_id and p.erased_at is not null
      and (strpos(k.body, p.id::text) > 0 or strpos(k.headers::text, p.id::text) > 0));

create function private.withhold_answers_of_erased() returns trigger
  language plpgsql
  security definer
  set search_path = ''
as $$
begin
  perform private.withhold_answers_naming(new.tenant_id, new.id);
  return null;
end
$$;
revoke all on function private.withhold_answers_of_erased() from public;

create trigger participants_erase_stored_answers after update of erased_at on public.participants
  for each row when (old.erased_at is null and new.erased_at is not null)
  execute function private.withhold_answers_of_erased();

-- The care trigger deleted the stored answers naming the participant itself;
-- the trigger above now withholds them (a deleted answer let a retry create
-- the erased person again). The rest is as before (*_care_records.sql).
create or replace function private.erase_care_of_participant() returns trigger
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

-- Retention: answers past their expiry, every tenant's, at most p_batch at a
-- time (the index on (tenant_id, expires_at) serves each tenant's prune; this
-- one reads by expiry alone).
create index idempotency_keys_expiry on public.idempotency_keys (expires_at);

create function private.prune_idempotency_keys(p_batch int default 10000) returns bigint
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_count bigint;
begin
  delete from public.idempotency_keys
  where ctid in (select k.ctid from public.idempotency_keys k where k.expires_at <= now() limit p_batch);
  get diagnostics v_count = row_count;
  return v_count;
end
$$;
revoke all on function private.prune_idempotency_keys(int) from public;
