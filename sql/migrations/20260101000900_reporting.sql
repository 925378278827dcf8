-- =============================================================================
-- Reporting: read-only views for staff who write SQL, isolated per tenant
--
-- Two kinds of people read the views in the `reporting` schema:
--
-- * Reporting roles: Postgres login roles made by `camp reporting grant`, one
--   per staff member or BI tool, each bound to one tenant. They can type any
--   SQL, including set_config('request.jwt.claims', ...), so their tenant
--   never comes from claims: it comes from private.reporting_roles, keyed on
--   session_user, which the role can neither read nor change, and which
--   `set role` cannot alter (session_user stays the login role).
-- * Supabase users (role `authenticated`, through PostgREST with their own
--   session). Their claims were verified by Supabase and only PostgREST can
--   set them for that role; the tenant is the one of the app user whose
--   auth_subject is the token's `sub`.
--
-- The views are security_invoker, so the base tables' RLS applies to whoever
-- reads them. Each kind of reader gets a select-only policy on the six tables
-- the views read, and column grants on exactly the columns the views use, so
-- reading the base tables directly shows nothing the views do not. Nothing is
-- granted on tenants, users or api_keys; anon gets nothing at all.
-- =============================================================================

-- -----------------------------------------------------------------------------
-- Roles and the role → tenant mapping
-- -----------------------------------------------------------------------------

-- The group every reporting login role is a member of (and the only role it
-- is a member of). Grants and policies are written for this role; members
-- inherit them. It cannot log in itself.
do $$
begin
  if not exists (select from pg_roles where rolname = 'camp_reporting') then
    create role camp_reporting nologin noinherit nobypassrls;
  end if;
end
$$;

-- Which tenant each reporting login role reads. Written only by operators
-- (camp reporting grant/revoke); reporting roles have no privilege on it and
-- no usage on this schema.
create table private.reporting_roles (
  -- A role name as Postgres stores it; the CLI only makes lower-case ones.
  role_name  text primary key constraint reporting_roles_role_name_check check (role_name ~ '^[a-z][a-z0-9_]{2,62}$'),
  tenant_id  uuid not null references public.tenants (id),
  created_at timestamptz not null default now(),
  -- The limits the role was granted, which the guard enforces (*_reporting_limits.sql).
  connection_limit int not null default 3
    constraint reporting_roles_connection_limit_check check (connection_limit between 1 and 100),
  statement_timeout interval not null default interval '30 seconds'
    constraint reporting_roles_statement_timeout_check check (statement_timeout between interval '100 milliseconds' and interval '1 hour'),
  idle_timeout interval not null default interval '60 seconds'
    constraint reporting_roles_idle_timeout_check check (idle_timeout between interval '100 milliseconds' and interval '1 hour')
);
create index reporting_roles_tenant_id on private.reporting_roles (tenant_id);

comment on table private.reporting_roles is
  'Reporting login roles and the one tenant each may read. Keyed on the role name, which only operators can change.';
comment on column private.reporting_roles.statement_timeout is
  'Longest statement the role may run; the role starts with it as statement_timeout, and the guard cancels past it even when the role has lifted its own setting.';
comment on column private.reporting_roles.idle_timeout is
  'Longest a session of the role may sit idle inside a transaction (holding locks and a snapshot) before the guard ends it.';

-- The tenant of the logged-in reporting role, or null. session_user, not
-- current_user: `set role camp_reporting` changes current_user, never the
-- session user, and a reporting role cannot `set session authorization`.
-- security definer because the role cannot read the mapping itself.
create function private.reporting_tenant_id() returns uuid
  language sql stable
  security definer
  set search_path = ''
as $$
  select r.tenant_id from private.reporting_roles r where r.role_name = session_user::text
$$;
revoke execute on function private.reporting_tenant_id() from public;
grant execute on function private.reporting_tenant_id() to camp_reporting;

-- The tenant of a Supabase user: the app user whose auth_subject is the `sub`
-- of the verified token PostgREST put in the transaction. By `sub` only, never
-- by e-mail (an e-mail claim may be unverified or shared by several tenants),
-- and never from a tenant claim (a user can edit user_metadata, and a stale
-- token would keep a tenant after the user was moved). security definer
-- because `authenticated` has no grant on public.users.
create function private.supabase_user_tenant_id() returns uuid
  language sql stable
  security definer
  set search_path = ''
as $$
  select u.tenant_id
  from public.users u
  where u.auth_subject = coalesce(
    nullif(current_setting('request.jwt.claim.sub', true), ''),
    nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'sub'
  )
$$;
revoke execute on function private.supabase_user_tenant_id() from public;
grant execute on function private.supabase_user_tenant_id() to authenticated;

-- -----------------------------------------------------------------------------
-- Read access to the base tables: policies and column grants
-- -----------------------------------------------------------------------------

-- Supabase gives anon and authenticated broad default grants on tables in
-- public; here they get exactly what reporting needs and nothing else.
revoke all on public.tenants, public.users, public.api_keys, public.instances, public.supergroups,
  public.subgroups, public.blocks, public.rooms, public.participants from anon, authenticated;

create policy "Reporting roles read the instances of their tenant" on public.instances
  for select to camp_reporting using (tenant_id = (select private.reporting_tenant_id()));
create policy "Supabase users read the instances of their tenant" on public.instances
  for select to authenticated using (tenant_id = (select private.supabase_user_tenant_id()));
grant select (id, name, status, start_date, end_date, deleted_at) on public.instances to camp_reporting, authenticated;

create policy "Reporting roles read the supergroups of their tenant" on public.supergroups
  for select to camp_reporting using (tenant_id = (select private.reporting_tenant_id()));
create policy "Supabase users read the supergroups of their tenant" on public.supergroups
  for select to authenticated using (tenant_id = (select private.supabase_user_tenant_id()));
grant select (id, instance_id, name, type, deleted_at) on public.supergroups to camp_reporting, authenticated;

create policy "Reporting roles read the subgroups of their tenant" on public.subgroups
  for select to camp_reporting using (tenant_id = (select private.reporting_tenant_id()));
create policy "Supabase users read the subgroups of their tenant" on public.subgroups
  for select to authenticated using (tenant_id = (select private.supabase_user_tenant_id()));
grant select (id, instance_id, parent_supergroup_id, name, type, deleted_at) on public.subgroups to camp_reporting, authenticated;

create policy "Reporting roles read the blocks of their tenant" on public.blocks
  for select to camp_reporting using (tenant_id = (select private.reporting_tenant_id()));
create policy "Supabase users read the blocks of their tenant" on public.blocks
  for select to authenticated using (tenant_id = (select private.supabase_user_tenant_id()));
grant select (id, instance_id, name, deleted_at) on public.blocks to camp_reporting, authenticated;

create policy "Reporting roles read the rooms of their tenant" on public.rooms
  for select to camp_reporting using (tenant_id = (select private.reporting_tenant_id()));
create policy "Supabase users read the rooms of their tenant" on public.rooms
  for select to authenticated using (tenant_id = (select private.supabase_user_tenant_id()));
grant select (id, instance_id, block_id, room_number, name, capacity, deleted_at) on public.rooms to camp_reporting, authenticated;

-- pronouns and photo_link are left out: reports do not need them.
create policy "Reporting roles read the participants of their tenant" on public.participants
  for select to camp_reporting using (tenant_id = (select private.reporting_tenant_id()));
create policy "Supabase users read the participants of their tenant" on public.participants
  for select to authenticated using (tenant_id = (select private.supabase_user_tenant_id()));
grant select (id, instance_id, user_id, first_name, surname, full_name, gender, status, date_of_birth, school_year,
  rank, unit_name, school_institute, arrival_date, departure_date, super_group_id, sub_group_id, block_id, room_id,
  room_number, created_at, updated_at, deleted_at) on public.participants to camp_reporting, authenticated;

-- -----------------------------------------------------------------------------
-- The reporting schema
-- -----------------------------------------------------------------------------

create schema reporting;
revoke all on schema reporting from public;
grant usage on schema reporting to camp_reporting, authenticated;
comment on schema reporting is
  'Read-only reports over the caller''s own tenant (camp reporting roles, Supabase users). Soft-deleted rows are left out everywhere.';

-- Every view reads public.participants once: counts are taken per id first
-- (one narrow hash aggregate) and joined to the names afterwards, so a view's
-- cost grows with the tenant's participants once, not once per name joined.
-- Ages use age(timestamp, timestamp), which unlike the timestamptz form does
-- not depend on the session's TimeZone.

-- One row per live participant, with the names of what it points at.
create view reporting.participants with (security_invoker = true) as
select
  p.id,
  p.instance_id,
  i.name as instance_name,
  p.user_id,
  p.first_name,
  p.surname,
  p.full_name,
  p.gender,
  p.status,
  p.date_of_birth,
  date_part('year', age(i.start_date::timestamp, p.date_of_birth::timestamp))::integer as age_at_start,
  p.school_year,
  p.rank,
  p.unit_name,
  p.school_institute,
  p.arrival_date,
  p.departure_date,
  p.super_group_id,
  sg.name as supergroup_name,
  p.sub_group_id,
  sub.name as subgroup_name,
  p.block_id,
  b.name as block_name,
  p.room_id,
  coalesce(r.room_number, p.room_number) as room_number,
  r.name as room_name,
  p.created_at,
  p.updated_at
from public.participants p
join public.instances i on i.id = p.instance_id and i.deleted_at is null
left join public.supergroups sg on sg.id = p.super_group_id and sg.deleted_at is null
left join public.subgroups sub on sub.id = p.sub_group_id and sub.deleted_at is null
left join public.blocks b on b.id = p.block_id and b.deleted_at is null
left join public.rooms r on r.id = p.room_id and r.deleted_at is null
where p.deleted_at is null;

comment on view reporting.participants is
  'Live participants of live instances, with their instance, supergroup, subgroup, block and room names.';
comment on column reporting.participants.age_at_start is
  'Age in completed years on the instance''s start_date (its first day), from date_of_birth; null when either is unknown.';
comment on column reporting.participants.room_number is
  'The assigned room''s current number, else the participant''s own room_number text.';

-- Age on the first day, as a distribution per instance.
create view reporting.age_distribution with (security_invoker = true) as
select
  i.id as instance_id,
  i.name as instance_name,
  i.start_date,
  date_part('year', age(i.start_date::timestamp, p.date_of_birth::timestamp))::integer as age_at_start,
  count(*) as participants
from public.participants p
join public.instances i on i.id = p.instance_id and i.deleted_at is null
where p.deleted_at is null
group by i.id, 4;

comment on view reporting.age_distribution is
  'Live participants per instance by age in completed years on the instance''s start_date; one row with a null age counts those whose age is unknown (no date_of_birth or no start_date).';

-- Counts per instance by status and gender, and how many lack a group or room.
create view reporting.instance_counts with (security_invoker = true) as
select
  i.id as instance_id,
  i.name as instance_name,
  i.status as instance_status,
  i.start_date,
  i.end_date,
  coalesce(c.participants, 0) as participants,
  coalesce(c.active, 0) as active,
  coalesce(c.inactive, 0) as inactive,
  coalesce(c.male, 0) as male,
  coalesce(c.female, 0) as female,
  coalesce(c.other_gender, 0) as other_gender,
  coalesce(c.gender_unknown, 0) as gender_unknown,
  coalesce(c.without_supergroup, 0) as without_supergroup,
  coalesce(c.without_subgroup, 0) as without_subgroup,
  coalesce(c.without_room, 0) as without_room
from public.instances i
left join (
  select
    p.instance_id,
    count(*) as participants,
    count(*) filter (where p.status = 'active') as active,
    count(*) filter (where p.status = 'inactive') as inactive,
    count(*) filter (where p.gender = 'Male') as male,
    count(*) filter (where p.gender = 'Female') as female,
    count(*) filter (where p.gender = 'Other') as other_gender,
    count(*) filter (where p.gender is null) as gender_unknown,
    count(*) filter (where p.super_group_id is null) as without_supergroup,
    count(*) filter (where p.sub_group_id is null) as without_subgroup,
    count(*) filter (where p.room_id is null) as without_room
  from public.participants p
  where p.deleted_at is null
  group by p.instance_id
) c on c.instance_id = i.id
where i.deleted_at is null;

comment on view reporting.instance_counts is
  'One row per live instance (also those without participants): live participants by status and by gender, and how many have no supergroup, subgroup or room.';
comment on column reporting.instance_counts.gender_unknown is 'Participants whose gender is not given.';

-- Counts per supergroup, by status and gender.
create view reporting.supergroup_counts with (security_invoker = true) as
select
  sg.instance_id,
  i.name as instance_name,
  sg.id as supergroup_id,
  sg.name as supergroup_name,
  sg.type,
  coalesce(s.subgroups, 0) as subgroups,
  coalesce(c.participants, 0) as participants,
  coalesce(c.active, 0) as active,
  coalesce(c.inactive, 0) as inactive,
  coalesce(c.male, 0) as male,
  coalesce(c.female, 0) as female,
  coalesce(c.other_gender, 0) as other_gender,
  coalesce(c.gender_unknown, 0) as gender_unknown
from public.supergroups sg
join public.instances i on i.id = sg.instance_id and i.deleted_at is null
left join (
  select parent_supergroup_id, count(*) as subgroups
  from public.subgroups
  where deleted_at is null
  group by parent_supergroup_id
) s on s.parent_supergroup_id = sg.id
left join (
  select
    p.super_group_id,
    count(*) as participants,
    count(*) filter (where p.status = 'active') as active,
    count(*) filter (where p.status = 'inactive') as inactive,
    count(*) filter (where p.gender = 'Male') as male,
    count(*) filter (where p.gender = 'Female') as female,
    count(*) filter (where p.gender = 'Other') as other_gender,
    count(*) filter (where p.gender is null) as gender_unknown
  from public.participants p
  where p.deleted_at is null and p.super_group_id is not null
  group by p.super_group_id
) c on c.super_group_id = sg.id
where sg.deleted_at is null;

comment on view reporting.supergroup_counts is
  'One row per live supergroup (also empty ones): its live subgroups, and its live participants by status and by gender.';

-- Counts per subgroup, by status and gender.
create view reporting.subgroup_counts with (security_invoker = true) as
select
  s.instance_id,
  i.name as instance_name,
  s.parent_supergroup_id as supergroup_id,
  sg.name as supergroup_name,
  s.id as subgroup_id,
  s.name as subgroup_name,
  s.type,
  coalesce(c.participants, 0) as participants,
  coalesce(c.active, 0) as active,
  coalesce(c.inactive, 0) as inactive,
  coalesce(c.male, 0) as male,
  coalesce(c.female, 0) as female,
  coalesce(c.other_gender, 0) as other_gender,
  coalesce(c.gender_unknown, 0) as gender_unknown
from public.subgroups s
join public.supergroups sg on sg.id = s.parent_supergroup_id and sg.deleted_at is null
join public.instances i on i.id = s.instance_id and i.deleted_at is null
left join (
  select
    p.sub_group_id,
    count(*) as participants,
    count(*) filter (where p.status = 'active') as active,
    count(*) filter (where p.status = 'inactive') as inactive,
    count(*) filter (where p.gender = 'Male') as male,
    count(*) filter (where p.gender = 'Female') as female,
    count(*) filter (where p.gender = 'Other') as other_gender,
    count(*) filter (where p.gender is null) as gender_unknown
  from public.participants p
  where p.deleted_at is null and p.sub_group_id is not null
  group by p.sub_group_id
) c on c.sub_group_id = s.id
where s.deleted_at is null;

comment on view reporting.subgroup_counts is
  'One row per live subgroup (also empty ones), with its supergroup: its live participants by status and by gender.';

-- Occupancy of each room against its capacity.
create view reporting.room_occupancy with (security_invoker = true) as
select
  r.instance_id,
  i.name as instance_name,
  r.block_id,
  b.name as block_name,
  r.id as room_id,
  r.room_number,
  r.name as room_name,
  r.capacity,
  coalesce(c.occupants, 0) as occupants,
  case when r.capacity is not null then greatest(r.capacity - coalesce(c.occupants, 0), 0) end as free_places,
  coalesce(c.occupants, 0) > r.capacity as over_capacity
from public.rooms r
join public.blocks b on b.id = r.block_id and b.deleted_at is null
join public.instances i on i.id = r.instance_id and i.deleted_at is null
left join (
  select p.room_id, count(*) as occupants
  from public.participants p
  where p.deleted_at is null and p.room_id is not null
  group by p.room_id
) c on c.room_id = r.id
where r.deleted_at is null;

comment on view reporting.room_occupancy is
  'One row per live room: live participants assigned to it against its capacity.';
comment on column reporting.room_occupancy.free_places is 'capacity minus occupants, never below 0; null when the capacity is unknown.';
comment on column reporting.room_occupancy.over_capacity is 'More occupants than places; null when the capacity is unknown.';

-- Occupancy per block: its rooms' capacity against the people in them.
-- One pass over participants by (block, room) gives both the occupants of
-- each room and those placed in a block without a room; the latter are
-- joined on the block (a correlated subquery over `placed` would rescan the
-- CTE, which cannot be indexed, once per block).
create view reporting.block_occupancy with (security_invoker = true) as
with placed as (
  select p.block_id, p.room_id, count(*) as participants
  from public.participants p
  where p.deleted_at is null and p.block_id is not null
  group by p.block_id, p.room_id
), room_load as (
  select r.block_id, r.capacity, coalesce(pl.participants, 0) as occupants
  from public.rooms r
  left join placed pl on pl.room_id = r.id
  where r.deleted_at is null
), block_load as (
  select
    block_id,
    count(*) as rooms,
    count(*) filter (where capacity is null) as rooms_without_capacity,
    sum(capacity) as capacity,
    sum(occupants)::bigint as occupants,
    sum(case when capacity is not null then greatest(capacity - occupants, 0) end)::bigint as free_places
  from room_load
  group by block_id
), roomless as (
  -- `placed` is grouped by (block, room), so this is at most one row per
  -- block: the left join below cannot multiply blocks.
  select pl.block_id, pl.participants
  from placed pl
  where pl.room_id is null
)
select
  b.instance_id,
  i.name as instance_name,
  b.id as block_id,
  b.name as block_name,
  coalesce(l.rooms, 0) as rooms,
  coalesce(l.rooms_without_capacity, 0) as rooms_without_capacity,
  l.capacity,
  coalesce(l.occupants, 0) as occupants,
  coalesce(nr.participants, 0) as without_room,
  l.free_places,
  round(100.0 * l.occupants / nullif(l.capacity, 0), 1) as occupancy_percent
from public.blocks b
join public.instances i on i.id = b.instance_id and i.deleted_at is null
left join block_load l on l.block_id = b.id
left join roomless nr on nr.block_id = b.id
where b.deleted_at is null;

comment on view reporting.block_occupancy is
  'One row per live block: its live rooms, their total capacity, the live participants in them, and those assigned to the block without a room.';
comment on column reporting.block_occupancy.capacity is 'Sum of the known room capacities; null when no room has one.';
comment on column reporting.block_occupancy.occupants is 'Live participants assigned to a live room of the block.';
comment on column reporting.block_occupancy.without_room is 'Live participants assigned to the block but to no room.';
comment on column reporting.block_occupancy.free_places is 'Sum over the rooms with a known capacity of their free places (never below 0 per room).';
comment on column reporting.block_occupancy.occupancy_percent is 'occupants / capacity in percent, one decimal; null when the capacity is unknown or 0.';

-- Arrivals and departures per day, per instance. Participants are counted
-- per (arrival, departure) pair first: most of a camp shares a few dates.
create view reporting.daily_movements with (security_invoker = true) as
with trips as (
  select p.instance_id, p.arrival_date, p.departure_date, count(*) as participants
  from public.participants p
  where p.deleted_at is null and (p.arrival_date is not null or p.departure_date is not null)
  group by p.instance_id, p.arrival_date, p.departure_date
)
select
  t.instance_id,
  i.name as instance_name,
  m.day,
  coalesce(sum(t.participants) filter (where m.arriving), 0)::bigint as arrivals,
  coalesce(sum(t.participants) filter (where not m.arriving), 0)::bigint as departures
from trips t
join public.instances i on i.id = t.instance_id and i.deleted_at is null
cross join lateral (values (t.arrival_date, true), (t.departure_date, false)) as m (day, arriving)
where m.day is not null
group by t.instance_id, i.id, m.day;

comment on view reporting.daily_movements is
  'Per instance and day: live participants with that arrival_date (arrivals) and that departure_date (departures). Only days with at least one movement appear.';

revoke all on all tables in schema reporting from public, anon;
grant select on all tables in schema reporting to camp_reporting, authenticated;
