-- Reporting roles cannot hurt the service.
--
-- A reporting role (camp reporting grant) is a person's or a BI tool's login.
-- Whatever it runs, the API must keep its connections, its CPU and its disk:
--   * each role has a connection limit, and the limits of all reporting roles
--     together stay within a budget that leaves the API its share (checked by
--     the grant command, which knows max_connections);
--   * each role starts with a statement timeout and an idle-in-transaction
--     timeout; since any role may SET those for its own session, a guard
--     (private.enforce_reporting_limits, run by the server and by cron) also
--     cancels and terminates its sessions past the limits it was granted;
--   * no temporary tables, and temp_file_limit where the operator may set it
--     (a superuser-only setting, which a role cannot lift for itself).

-- The limits each role was granted are columns of private.reporting_roles
-- (*_reporting.sql).

-- Temporary tables are writes of unbounded size, and CONNECT reaches every
-- database that grants it to PUBLIC. On the service's database PUBLIC loses
-- TEMP (the API's role gets it back by name) and reporting roles get CONNECT
-- by name. Database privileges are not copied by CREATE DATABASE ... TEMPLATE,
-- so the grant command runs this again on the database it grants in. Where the
-- operator does not own the database, the grant command reports what remains.
create function private.restrict_reporting_database()
returns void
language plpgsql
set search_path = ''
as $$
begin
  execute format('revoke temporary on database %I from public', current_database());
  if exists (select from pg_catalog.pg_roles where rolname = 'camp_api') then
    execute format('grant temporary on database %I to camp_api', current_database());
  end if;
  execute format('grant connect on database %I to camp_reporting', current_database());
exception when insufficient_privilege then
  raise notice 'not the owner of database %: TEMP stays granted to PUBLIC', current_database();
end
$$;

revoke all on function private.restrict_reporting_database() from public;

select private.restrict_reporting_database();

-- Roles granted before these limits existed get the defaults now.
do $$
declare
  r record;
begin
  for r in select m.role_name, m.connection_limit, m.statement_timeout, m.idle_timeout
           from private.reporting_roles m join pg_roles p on p.rolname = m.role_name
  loop
    execute format('alter role %I connection limit %s', r.role_name, r.connection_limit);
    execute format('alter role %I set statement_timeout = %L', r.role_name, (extract(epoch from r.statement_timeout) * 1000)::bigint);
    execute format('alter role %I set idle_in_transaction_session_timeout = %L', r.role_name, (extract(epoch from r.idle_timeout) * 1000)::bigint);
  end loop;
end
$$;

-- The guard: cancels a reporting role's statement running past its granted
-- statement_timeout and ends its session idle in a transaction past its
-- idle_timeout, whatever the session set for itself. Returns what it did.
create function private.enforce_reporting_limits()
returns table (pid int, role_name text, action text)
language plpgsql
security definer
set search_path = ''
as $$
declare
  s record;
begin
  for s in
    select a.pid, m.role_name,
           case when a.state = 'active' and clock_timestamp() - a.query_start > m.statement_timeout then 'cancel'
                else 'terminate' end as action
    from pg_catalog.pg_stat_activity a
    join private.reporting_roles m on m.role_name = a.usename::text
    where a.pid <> pg_catalog.pg_backend_pid()
      and ((a.state = 'active' and clock_timestamp() - a.query_start > m.statement_timeout)
        or (a.state in ('idle in transaction', 'idle in transaction (aborted)')
            and clock_timestamp() - a.state_change > m.idle_timeout))
  loop
    if s.action = 'cancel' then
      perform pg_catalog.pg_cancel_backend(s.pid);
    else
      perform pg_catalog.pg_terminate_backend(s.pid);
    end if;
    pid := s.pid;
    role_name := s.role_name;
    action := s.action;
    return next;
  end loop;
end
$$;

revoke all on function private.enforce_reporting_limits() from public;
comment on function private.enforce_reporting_limits() is
  'Cancels reporting-role statements past their granted statement_timeout and ends sessions idle in a transaction past their idle_timeout. Run by the server every REPORTING_GUARD_INTERVAL_MS and, on Supabase, by pg_cron.';
