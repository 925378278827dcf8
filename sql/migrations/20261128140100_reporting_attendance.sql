-- =============================================================================
-- On site in reporting: the views attendance and presence (issue 41, item 6)
--
-- Both are in the plain reporting group (camp_reporting, and Supabase users),
-- not behind --care: they hold what a key with the read scope reads of
-- movements and presence through the API (children's names are in
-- reporting.participants already), and nothing of the care doors. The one
-- care datum a movement points at, the adult who collected the child, is a
-- contact: the view gives its id (pickup_contact_id) and never its name, so a
-- role granted --care joins reporting.participant_contacts for the name and
-- any other role cannot. Security codes (public.attendance_codes,
-- attendance_present_codes) are granted to no reporting role at all.
-- =============================================================================

create policy "Reporting roles read the movements of their tenant" on public.attendance_movements
  for select to camp_reporting using (tenant_id = (select private.reporting_tenant_id()));
create policy "Supabase users read the movements of their tenant" on public.attendance_movements
  for select to authenticated using (tenant_id = (select private.supabase_user_tenant_id()));
grant select (id, instance_id, participant_id, direction, recorded_at, received_at, recorded_by, location,
  pickup_contact_id, override_reason, conflict_reason, conflict) on public.attendance_movements to camp_reporting, authenticated;
grant select (presence, presence_since) on public.participants to camp_reporting, authenticated;

-- Every check-in and check-out of live participants of live instances, in
-- the timeline's order (recorded_at, then nonce).
create view reporting.attendance with (security_invoker = true) as
select
  m.id,
  m.instance_id,
  i.name as instance_name,
  m.participant_id,
  p.full_name as participant_name,
  m.direction,
  m.recorded_at,
  m.received_at,
  m.recorded_by,
  m.location,
  m.pickup_contact_id,
  m.override_reason,
  m.conflict,
  m.conflict_reason
from public.attendance_movements m
join public.participants p on p.id = m.participant_id and p.deleted_at is null
join public.instances i on i.id = m.instance_id and i.deleted_at is null;

comment on view reporting.attendance is
  'Check-ins (direction in) and check-outs (out) of live participants of live instances, as recorded on site; not the planned arrival_date and departure_date (those are daily_movements). No security codes, and the pickup as a contact id only (its name is care data: reporting.participant_contacts, --care roles).';
comment on column reporting.attendance.recorded_at is
  'The recording device''s clock: the timeline''s order. received_at is when the service stored it (later for a record synced from an offline device).';
comment on column reporting.attendance.pickup_contact_id is
  'The authorised pickup who collected the participant (a check-out): a contact id, whose name only a role granted --care reads (reporting.participant_contacts).';
comment on column reporting.attendance.conflict_reason is
  'Why the movement contradicts its predecessor in the timeline (already checked in, not checked in, a security code that is not the check-in''s); null when it does not.';

-- Who is here now: every live participant of a live instance, with its presence.
create view reporting.presence with (security_invoker = true) as
select
  p.id as participant_id,
  p.instance_id,
  i.name as instance_name,
  p.full_name as participant_name,
  p.presence,
  p.presence_since,
  sg.name as supergroup_name,
  sub.name as subgroup_name,
  b.name as block_name,
  coalesce(r.room_number, p.room_number) as room_number
from public.participants p
join public.instances i on i.id = p.instance_id and i.deleted_at is null
left join public.supergroups sg on sg.id = p.super_group_id and sg.deleted_at is null
left join public.subgroups sub on sub.id = p.sub_group_id and sub.deleted_at is null
left join public.blocks b on b.id = p.block_id and b.deleted_at is null
left join public.rooms r on r.id = p.room_id and r.deleted_at is null
where p.deleted_at is null;

comment on view reporting.presence is
  'Who is here now: every live participant of a live instance with its presence (in, out, null when never recorded) and presence_since, the recorded_at of its last movement; group by instance, supergroup or room to count.';
comment on column reporting.presence.presence is
  'in or out: the direction of the participant''s last movement by recorded_at (the device''s clock, not the order of arrival); null when none was recorded.';

revoke all on reporting.attendance, reporting.presence from public, anon;
grant select on reporting.attendance, reporting.presence to camp_reporting, authenticated;
