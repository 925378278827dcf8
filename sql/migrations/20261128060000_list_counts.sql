-- =============================================================================
-- List totals kept by the database
--
-- Every list answers meta.total, exact. Counting the matching rows on every
-- page made a page cost time in proportion to everything its filter matched:
-- an organisation paid for its whole history on each page. The totals of the
-- lists people page through most are now kept here, in the writing
-- transaction, as private.room_occupancy keeps the rooms' counts:
--
--   participants  per instance, status and deleted-or-not
--   instances     per status and deleted-or-not (scope: the nil uuid)
--   supergroups, subgroups, blocks, rooms
--                 per instance and deleted-or-not (status: '')
--
-- A list whose filters are only these (instance_id, status, include_deleted)
-- reads its total with private.kept_total, a sum over a few dozen rows at most.
-- Any other filter (q, updated_since, a group or room, a care flag…) still
-- counts, through an index.
--
-- Why rows of changes, not one row per count: a count row updated by every
-- writer is a lock every writer into that instance waits on from its write
-- to its commit, so a long import would hold up every single create, and two
-- open transactions could not both add a participant. Instead each writing
-- statement appends its change (+n or -n per key), which takes no lock any
-- other writer wants, and a total is the sum of its key's rows. So that the
-- sum stays over a few dozen rows, a writer that finds more than 32 rows
-- under an instance it touched folds them, one row per key: it deletes the rows
-- no other folder holds (FOR UPDATE SKIP LOCKED, so folders never wait on
-- each other either) and appends their sum. Readers see the rows before or
-- after a fold, both the same total.
--
-- Inserts and deletes are counted per statement, from the transition table
-- (a bulk of 1,000 appends one row per instance and status, not 1,000);
-- updates per row, and only those that move a row between counts (its
-- instance, status, or live/deleted), so a change of name costs nothing here.
-- =============================================================================

create table private.list_counts (
  id        bigint generated always as identity primary key,
  tenant_id uuid not null references public.tenants (id) on delete cascade,
  list      text not null
            constraint list_counts_list_check
            check (list in ('participants', 'instances', 'supergroups', 'subgroups', 'blocks', 'rooms')),
  -- The instance the rows are in; the nil uuid for instances themselves.
  scope_id  uuid not null,
  -- participants.status or instances.status; '' for the other lists.
  status    text not null,
  deleted   boolean not null,
  -- A change to the count (negative for rows removed or moved away), or a fold's sum.
  n         bigint not null
);
create index list_counts_key on private.list_counts (tenant_id, list, scope_id, status, deleted) include (n);
comment on table private.list_counts is
  'Changes to how many rows each list holds per tenant, instance, status and deleted-or-not, appended by triggers in the writing transaction and folded as they accumulate; meta.total of the unfiltered lists is their sum (private.kept_total).';
-- Only the triggers' definer functions and private.kept_total touch it.
alter table private.list_counts enable row level security;
revoke all on private.list_counts from public;

-- -----------------------------------------------------------------------------
-- Reading a total
-- -----------------------------------------------------------------------------

-- The rows of a list in the caller's tenant, as RLS would let the caller see
-- them: p_scope an instance (null: all), p_status one status (null: all),
-- p_include_deleted whether soft-deleted rows count. The lists' policies
-- admit exactly the tenant's rows, which is what keeps this equal to a
-- count(*) under RLS.
create function private.kept_total(p_list text, p_scope uuid, p_status text, p_include_deleted boolean)
  returns bigint
  language sql stable
  security definer
  set search_path = ''
as $$
  select coalesce(sum(c.n), 0)::bigint
  from private.list_counts c
  where c.tenant_id = private.request_tenant_id()
    and c.list = p_list
    and (p_scope is null or c.scope_id = p_scope)
    and (p_status is null or c.status = p_status)
    and (p_include_deleted or not c.deleted)
$$;
comment on function private.kept_total(text, uuid, text, boolean) is
  'meta.total of a list filtered on instance, status and include_deleted only, from private.list_counts.';
revoke all on function private.kept_total(text, uuid, text, boolean) from public;
grant execute on function private.kept_total(text, uuid, text, boolean) to camp_api;

-- -----------------------------------------------------------------------------
-- Appending and folding changes
-- -----------------------------------------------------------------------------

-- When a scope (an instance, or the nil uuid for instances) has more than 32
-- rows, the rows no other transaction is folding become one row per key.
create function private.fold_list_counts(p_tenant uuid, p_list text, p_scope uuid) returns void
  language plpgsql
  security definer
  set search_path = ''
as $$
begin
  if (select count(*) from (select from private.list_counts c
                            where c.tenant_id = p_tenant and c.list = p_list and c.scope_id = p_scope
                            limit 33) x) <= 32 then
    return;
  end if;
  with taken as (
    delete from private.list_counts c
    where c.id in (select f.id from private.list_counts f
                   where f.tenant_id = p_tenant and f.list = p_list and f.scope_id = p_scope
                   for update skip locked)
    returning c.tenant_id, c.list, c.scope_id, c.status, c.deleted, c.n
  )
  insert into private.list_counts (tenant_id, list, scope_id, status, deleted, n)
  select t.tenant_id, t.list, t.scope_id, t.status, t.deleted, sum(t.n)
  from taken t
  group by 1, 2, 3, 4, 5
  having sum(t.n) <> 0;
end
$$;
revoke all on function private.fold_list_counts(uuid, text, uuid) from public;

-- -----------------------------------------------------------------------------
-- Keeping the counts: participants (on every create, so written out in full)
-- -----------------------------------------------------------------------------

create function private.count_participants_inserted() returns trigger
  language plpgsql
  security definer
  set search_path = ''
as $$
begin
  insert into private.list_counts (tenant_id, list, scope_id, status, deleted, n)
  select r.tenant_id, 'participants', r.instance_id, r.status, r.deleted_at is not null, count(*)
  from new_rows r
  group by 1, 3, 4, 5;
  perform private.fold_list_counts(k.tenant_id, 'participants', k.instance_id)
  from (select distinct r.tenant_id, r.instance_id from new_rows r) k;
  return null;
end
$$;

create function private.count_participants_deleted() returns trigger
  language plpgsql
  security definer
  set search_path = ''
as $$
begin
  insert into private.list_counts (tenant_id, list, scope_id, status, deleted, n)
  select r.tenant_id, 'participants', r.instance_id, r.status, r.deleted_at is not null, -count(*)
  from old_rows r
  group by 1, 3, 4, 5;
  perform private.fold_list_counts(k.tenant_id, 'participants', k.instance_id)
  from (select distinct r.tenant_id, r.instance_id from old_rows r) k;
  return null;
end
$$;

-- A row moving between counts: one less under its old key, one more under its new.
create function private.count_participant_moved() returns trigger
  language plpgsql
  security definer
  set search_path = ''
as $$
begin
  insert into private.list_counts (tenant_id, list, scope_id, status, deleted, n)
  values (old.tenant_id, 'participants', old.instance_id, old.status, old.deleted_at is not null, -1),
         (new.tenant_id, 'participants', new.instance_id, new.status, new.deleted_at is not null, 1);
  perform private.fold_list_counts(new.tenant_id, 'participants', new.instance_id);
  if new.instance_id <> old.instance_id then
    perform private.fold_list_counts(old.tenant_id, 'participants', old.instance_id);
  end if;
  return null;
end
$$;

create function private.reset_list_counts() returns trigger
  language plpgsql
  security definer
  set search_path = ''
as $$
begin
  delete from private.list_counts where list = tg_argv[0];
  return null;
end
$$;

create trigger participants_count_insert after insert on public.participants
  referencing new table as new_rows
  for each statement execute function private.count_participants_inserted();
create trigger participants_count_delete after delete on public.participants
  referencing old table as old_rows
  for each statement execute function private.count_participants_deleted();
create trigger participants_count_move after update of instance_id, status, deleted_at on public.participants
  for each row when (new.instance_id is distinct from old.instance_id or new.status is distinct from old.status
                     or (new.deleted_at is null) <> (old.deleted_at is null))
  execute function private.count_participant_moved();
create trigger participants_count_truncate after truncate on public.participants
  for each statement execute function private.reset_list_counts('participants');

-- -----------------------------------------------------------------------------
-- Keeping the counts: instances, groups, blocks and rooms
--
-- Written rarely, by a person, so one function serves the five tables, its
-- statements built from the trigger's arguments: the list's name and the SQL
-- of the row's scope and status (`instance_id` / `''`, or the nil uuid /
-- `status` for instances). An instance never changes tenant and a group,
-- block or room never changes instance (*_structure_moves.sql), so an update
-- moves a row only between statuses or live and deleted, within its scope.
-- -----------------------------------------------------------------------------

create function private.count_structure_rows() returns trigger
  language plpgsql
  security definer
  set search_path = ''
as $$
declare
  v_list text := tg_argv[0];
  v_scope text := tg_argv[1];
  v_status text := tg_argv[2];
  v_old record;
  v_new record;
begin
  if tg_level = 'ROW' then
    execute format('select ($1).tenant_id, %s as scope_id, %s as status, ($1).deleted_at is not null as deleted',
                   replace(v_scope, 'r.', '($1).'), replace(v_status, 'r.', '($1).'))
      into v_old using old;
    execute format('select ($1).tenant_id, %s as scope_id, %s as status, ($1).deleted_at is not null as deleted',
                   replace(v_scope, 'r.', '($1).'), replace(v_status, 'r.', '($1).'))
      into v_new using new;
    insert into private.list_counts (tenant_id, list, scope_id, status, deleted, n)
    values (v_old.tenant_id, v_list, v_old.scope_id, v_old.status, v_old.deleted, -1),
           (v_new.tenant_id, v_list, v_new.scope_id, v_new.status, v_new.deleted, 1);
    perform private.fold_list_counts(v_new.tenant_id, v_list, v_new.scope_id);
    return null;
  end if;
  -- A statement's inserted (+) or deleted (-) rows, counted per key.
  execute format(
    'insert into private.list_counts (tenant_id, list, scope_id, status, deleted, n)
     select r.tenant_id, %1$L, %2$s, %3$s, r.deleted_at is not null, %4$s count(*)
     from %5$I r
     group by 1, 3, 4, 5',
    v_list, v_scope, v_status, case when tg_op = 'INSERT' then '' else '-' end,
    case when tg_op = 'INSERT' then 'new_rows' else 'old_rows' end);
  execute format(
    'select private.fold_list_counts(k.tenant_id, %1$L, k.scope_id)
     from (select distinct r.tenant_id, %2$s as scope_id from %3$I r) k',
    v_list, v_scope, case when tg_op = 'INSERT' then 'new_rows' else 'old_rows' end);
  return null;
end
$$;

-- One set of triggers per table: (list, scope SQL, status SQL) over a row `r`.
do $$
declare
  t record;
begin
  for t in
    select * from (values
      ('instances',   'public.instances',   '''00000000-0000-0000-0000-000000000000''::uuid', 'r.status'),
      ('supergroups', 'public.supergroups', 'r.instance_id', ''''''),
      ('subgroups',   'public.subgroups',   'r.instance_id', ''''''),
      ('blocks',      'public.blocks',      'r.instance_id', ''''''),
      ('rooms',       'public.rooms',       'r.instance_id', '''''')
    ) as x (list, tab, scope, status)
  loop
    execute format(
      'create trigger %1$s_count_insert after insert on %2$s referencing new table as new_rows
         for each statement execute function private.count_structure_rows(%1$L, %3$L, %4$L)',
      t.list, t.tab, t.scope, t.status);
    execute format(
      'create trigger %1$s_count_delete after delete on %2$s referencing old table as old_rows
         for each statement execute function private.count_structure_rows(%1$L, %3$L, %4$L)',
      t.list, t.tab, t.scope, t.status);
    execute format(
      'create trigger %1$s_count_move after update on %2$s
         for each row when ((new.deleted_at is null) <> (old.deleted_at is null)%5$s)
         execute function private.count_structure_rows(%1$L, %3$L, %4$L)',
      t.list, t.tab, t.scope, t.status,
      case when t.list = 'instances' then ' or new.status is distinct from old.status' else '' end);
    execute format(
      'create trigger %1$s_count_truncate after truncate on %2$s
         for each statement execute function private.reset_list_counts(%1$L)',
      t.list, t.tab);
  end loop;
end
$$;

-- -----------------------------------------------------------------------------
-- The rows already there, counted once the triggers keep every later change.
-- -----------------------------------------------------------------------------

insert into private.list_counts (tenant_id, list, scope_id, status, deleted, n)
select tenant_id, 'participants', instance_id, status, deleted_at is not null, count(*)
from public.participants group by 1, 3, 4, 5
union all
select tenant_id, 'instances', '00000000-0000-0000-0000-000000000000'::uuid, status, deleted_at is not null, count(*)
from public.instances group by 1, 4, 5
union all
select tenant_id, 'supergroups', instance_id, '', deleted_at is not null, count(*)
from public.supergroups group by 1, 3, 5
union all
select tenant_id, 'subgroups', instance_id, '', deleted_at is not null, count(*)
from public.subgroups group by 1, 3, 5
union all
select tenant_id, 'blocks', instance_id, '', deleted_at is not null, count(*)
from public.blocks group by 1, 3, 5
union all
select tenant_id, 'rooms', instance_id, '', deleted_at is not null, count(*)
from public.rooms group by 1, 3, 5;
