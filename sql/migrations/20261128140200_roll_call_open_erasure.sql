-- =============================================================================
-- On site: opening a roll call is not refused by a child's erasure
--
-- A roll call opened while one of the children present was being erased
-- failed as a whole with 404 "participant not found": its select saw the
-- child live, and the insert into roll_call_expected then waited on the
-- child's row (private.hold_live_participant) and found it erased. The
-- expected are now taken with FOR SHARE, which waits for the erasing update
-- and then re-checks the row, leaving the erased child out; the insert's own
-- hold then finds every row it locks live. The rows were locked FOR SHARE by
-- the insert's trigger before, so this takes no lock that was not taken.
-- tests/erasure-race.test.ts races it.
-- =============================================================================

create or replace function private.roll_call_open(p jsonb) returns jsonb
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_tenant uuid := private.request_tenant_id();
  v_instance uuid := (p ->> 'instance_id')::uuid;
  v_super uuid := (p ->> 'super_group_id')::uuid;
  v_sub uuid := (p ->> 'sub_group_id')::uuid;
  v_block uuid := (p ->> 'block_id')::uuid;
  v_room uuid := (p ->> 'room_id')::uuid;
  v_id uuid;
begin
  perform private.attendance_gate();
  if not exists (select from public.instances i where i.id = v_instance and i.tenant_id = v_tenant and i.deleted_at is null) then
    raise exception 'does not exist' using errcode = 'CA400', column = 'instance_id';
  end if;
  perform private.lock_writable_instance(v_instance);
  if v_super is not null and not exists (
    select from public.supergroups s where s.id = v_super and s.instance_id = v_instance and s.deleted_at is null) then
    raise exception 'is not a supergroup of instance_id' using errcode = 'CA400', column = 'super_group_id';
  end if;
  if v_sub is not null and not exists (
    select from public.subgroups s where s.id = v_sub and s.instance_id = v_instance and s.deleted_at is null) then
    raise exception 'is not a subgroup of instance_id' using errcode = 'CA400', column = 'sub_group_id';
  end if;
  if v_block is not null and not exists (
    select from public.blocks b where b.id = v_block and b.instance_id = v_instance and b.deleted_at is null) then
    raise exception 'is not a block of instance_id' using errcode = 'CA400', column = 'block_id';
  end if;
  if v_room is not null and not exists (
    select from public.rooms r where r.id = v_room and r.instance_id = v_instance and r.deleted_at is null) then
    raise exception 'is not a room of instance_id' using errcode = 'CA400', column = 'room_id';
  end if;
  insert into public.roll_calls (instance_id, super_group_id, sub_group_id, block_id, room_id, name, created_by)
  values (v_instance, v_super, v_sub, v_block, v_room, p ->> 'name', (private.audit_actor() ->> 'sub')::uuid)
  returning id into v_id;
  insert into public.roll_call_expected (roll_call_id, participant_id)
  select v_id, x.id
  from (
    select pt.id
    from public.participants pt
    where pt.tenant_id = v_tenant and pt.instance_id = v_instance and pt.deleted_at is null and pt.presence = 'in'
      and (v_super is null or pt.super_group_id = v_super)
      and (v_sub is null or pt.sub_group_id = v_sub)
      and (v_block is null or pt.block_id = v_block)
      and (v_room is null or pt.room_id = v_room)
    order by pt.id
    for share of pt
  ) x;
  return private.roll_call_json(v_id);
end
$$;
