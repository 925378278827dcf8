/**
 * Are the participant queries served by indexes on realistic data?
 *
 * Seeds a scratch database with one tenant of 100,000 participants over
 * several instances (and a smaller neighbour tenant), runs ANALYZE, then
 * EXPLAIN ANALYZEs, as camp_api inside the tenant's scope, exactly the
 * statements functions/participants/data.ts issues for each list filter shape
 * (and for get, update and delete). The lists whose work is inside the
 * database's doors (severe_allergy, incidents, attendance, roll calls) run
 * for real under auto_explain, in a transaction rolled back, so that the
 * statements inside those functions are checked too (seedCareAndSite gives
 * them data). Fails when a plan reads participants, or any table of more
 * than 10,000 rows, with a sequential scan.
 *
 *   npm run bench:explain                     # embedded Postgres, or the server of DATABASE_URL
 *   BENCH_PARTICIPANTS=20000 npm run bench:explain
 *
 * With DATABASE_URL set, the scratch database is created on that server
 * (the role must be allowed to create databases) and dropped afterwards,
 * unless BENCH_KEEP_DB=1 asks to keep it for a closer look.
 */
import { randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { listMovements } from "../../functions/attendance/data.ts";
import { Database } from "../../functions/db/database.ts";
import { claimsOf, type ScopePrincipal, scopeSettings } from "../../functions/db/scope-settings.ts";
import type { Sql } from "../../functions/db/sql.ts";
import { listIncidents } from "../../functions/incidents/data.ts";
import {
  createParticipant,
  deleteParticipant,
  getParticipant,
  listParticipants,
  updateParticipant,
} from "../../functions/participants/data.ts";
import type { ListFilters } from "../../functions/participants/schemas.ts";
import { listRollCalls } from "../../functions/roll-calls/data.ts";
import { startEmbeddedPostgres } from "../../node/embedded-db.ts";
import { migrate } from "../../node/migrate.ts";

const PARTICIPANTS = Number(process.env.BENCH_PARTICIPANTS ?? 100_000);
const NEIGHBOUR_PARTICIPANTS = Math.round(PARTICIPANTS / 5);
/** A sequential scan of a table this large fails the check. */
const LARGE_TABLE = 10_000;

const out = (line = "") => process.stdout.write(`${line}\n`);
const err = (line: string) => process.stderr.write(`${line}\n`);

// ---------------------------------------------------------------------------
// Seeding (as the owner role, with tenant ids given explicitly)
// ---------------------------------------------------------------------------

const FIRST_NAMES = [
  "Ada",
  "Alan",
  "Grace",
  "Edsger",
  "Barbara",
  "Donald",
  "Katherine",
  "Tim",
  "Linus",
  "Margaret",
  "John",
  "Frances",
  "Dennis",
  "Radia",
  "Ken",
  "Hedy",
  "Claude",
  "Joan",
  "Niklaus",
  "Annie",
];
const SURNAMES = [
  "Lovelace",
  "Turing",
  "Hopper",
  "Dijkstra",
  "Liskov",
  "Knuth",
  "Johnson",
  "Berners-Lee",
  "Torvalds",
  "Hamilton",
  "Backus",
  "Allen",
  "Ritchie",
  "Perlman",
  "Thompson",
  "Lamarr",
  "Shannon",
  "Clarke",
  "Wirth",
  "Easley",
  "Smith",
  "Jones",
  "Brown",
  "Taylor",
  "Wilson",
];

const sqlArray = (values: string[]) => `array[${values.map((v) => pg.escapeLiteral(v)).join(", ")}]`;

/** Instances, 4 supergroups × 3 subgroups and 5 blocks × 20 rooms per instance, then the participants. */
async function seedTenant(sql: Sql, name: string, instances: number, participants: number): Promise<string> {
  const tenant = await sql.one<{ id: string }>("insert into public.tenants (name) values ($1) returning id", [name]);
  const tenantId = (tenant as { id: string }).id;
  await sql.query(
    `insert into public.instances (tenant_id, name, status, start_date, end_date)
     select $1, 'Camp ' || g, 'active', date '2026-07-01', date '2026-07-14' from generate_series(1, $2) g`,
    [tenantId, instances],
  );
  await sql.query(
    `insert into public.supergroups (tenant_id, instance_id, name)
     select i.tenant_id, i.id, 'Group ' || g from public.instances i, generate_series(1, 4) g where i.tenant_id = $1`,
    [tenantId],
  );
  await sql.query(
    `insert into public.subgroups (tenant_id, instance_id, parent_supergroup_id, name)
     select s.tenant_id, s.instance_id, s.id, 'Patrol ' || g from public.supergroups s, generate_series(1, 3) g
     where s.tenant_id = $1`,
    [tenantId],
  );
  await sql.query(
    `insert into public.blocks (tenant_id, instance_id, name)
     select i.tenant_id, i.id, 'Block ' || g from public.instances i, generate_series(1, 5) g where i.tenant_id = $1`,
    [tenantId],
  );
  // Rooms large enough for the participants placed in them below (two in three of an instance's, over 100 rooms):
  // the capacity rule refuses an insert that overfills one.
  await sql.query(
    `insert into public.rooms (tenant_id, instance_id, block_id, room_number, name, capacity)
     select b.tenant_id, b.instance_id, b.id, b.name || '-' || g, 'Room ' || g, $2 from public.blocks b, generate_series(1, 20) g
     where b.tenant_id = $1`,
    [tenantId, Math.max(4, Math.ceil(participants / instances / 100))],
  );
  // Participant n: instance n mod I, the k-th subgroup and room of that instance; 1 in 5 without a
  // group, 1 in 3 without a room, 1 in 10 inactive, 1 in 50 deleted. The rows are consistent by
  // construction, so the per-row write trigger (locks and checks, 1 ms a row) is off while they go in.
  await sql.query("alter table public.participants disable trigger participants_guard_write");
  await sql.query(
    `with inst as (
       select id, row_number() over (order by id) - 1 as ix from public.instances where tenant_id = $1
     ), sub as (
       select id, parent_supergroup_id, instance_id, row_number() over (partition by instance_id order by id) - 1 as k
       from public.subgroups where tenant_id = $1
     ), room as (
       select id, block_id, room_number, instance_id, row_number() over (partition by instance_id order by id) - 1 as k
       from public.rooms where tenant_id = $1
     )
     insert into public.participants (tenant_id, instance_id, user_id, first_name, surname, full_name, gender, status,
       super_group_id, sub_group_id, block_id, room_id, room_number, created_at, deleted_at, presence, presence_since)
     select $1, inst.id, 'user-' || n, first_name, surname, first_name || ' ' || surname,
       (array['Male', 'Female', 'Other'])[1 + n % 3],
       case when n % 10 = 0 then 'inactive' else 'active' end,
       case when n % 5 <> 0 then sub.parent_supergroup_id end,
       case when n % 5 <> 0 then sub.id end,
       case when n % 3 <> 0 then room.block_id end,
       case when n % 3 <> 0 then room.id end,
       case when n % 3 <> 0 then room.room_number end,
       timestamptz '2026-01-01 00:00:00+00' + n * interval '1 second',
       case when n % 50 = 0 then now() end,
       (array['in', 'out', null, null])[1 + n % 4],
       case when n % 4 < 2 then timestamptz '2026-07-01 09:00:00+00' end
     from generate_series(0, $2 - 1) n
     cross join lateral (
       select (${sqlArray(FIRST_NAMES)})[1 + n % ${FIRST_NAMES.length}] as first_name,
              (${sqlArray(SURNAMES)})[1 + (n / ${FIRST_NAMES.length}) % ${SURNAMES.length}] as surname
     ) names
     join inst on inst.ix = n % $3
     join sub on sub.instance_id = inst.id and sub.k = (n / $3) % 12
     join room on room.instance_id = inst.id and room.k = (n / $3) % 100`,
    [tenantId, participants, instances],
  );
  await sql.query("alter table public.participants enable trigger participants_guard_write");
  return tenantId;
}

/**
 * What the other lists read, for one tenant: a user with care write access (a
 * safeguarding lead), a care record for every other participant (1 in 40
 * with a severe allergy), an incident for every 5 participants (naming one,
 * 1 in 4 amended), a check-in and a check-out per live participant, and two
 * roll calls per subgroup expecting its participants (9 in 10 marked).
 * Written with triggers off (session_replication_role): consistent by
 * construction, and the audit trail is not what is measured.
 */
async function seedCareAndSite(sql: Sql, tenantId: string): Promise<string> {
  await sql.query("set local session_replication_role = replica");
  const user = await sql.one<{ id: string }>(
    `insert into public.users (tenant_id, email, role, care_access, safeguarding_lead)
     values ($1::uuid, 'lead-' || $1::text || '@bench.test', 'admin', 'write', true) returning id`,
    [tenantId],
  );
  await sql.query(
    `insert into public.participant_care (id, tenant_id, allergies)
     select id, tenant_id,
       case when n % 20 = 0 then '[{"name": "peanuts", "severity": "anaphylactic"}]'::jsonb else '[]'::jsonb end
     from (select p.id, p.tenant_id, row_number() over (order by p.id) as n
           from public.participants p where p.tenant_id = $1 and p.deleted_at is null) x
     where n % 2 = 0`,
    [tenantId],
  );
  await sql.query(
    `with picked as (
       select gen_random_uuid() as incident_id, p.id as participant_id, p.instance_id, n
       from (select p.*, row_number() over (order by p.created_at) as n
             from public.participants p where p.tenant_id = $1 and p.deleted_at is null) p
       where n % 5 = 0
     ), made as (
       insert into public.incidents (id, tenant_id, instance_id, occurred_at, location, category, severity, description,
         actions_taken, recorded_at)
       select incident_id, $1, instance_id, timestamptz '2026-07-01 10:00:00+00' + n * interval '37 seconds', 'Field',
         (array['injury', 'illness', 'behaviour', 'safeguarding', 'near_miss', 'other'])[1 + n % 6],
         (array['minor', 'moderate', 'serious'])[1 + n % 3], 'Bench incident ' || n, 'First aid',
         timestamptz '2026-07-01 10:05:00+00' + n * interval '37 seconds'
       from picked
     ), linked as (
       insert into public.incident_participants (tenant_id, incident_id, participant_id)
       select $1, incident_id, participant_id from picked
     )
     insert into public.incident_amendments (tenant_id, incident_id, changes, reason, recorded_at)
     select $1, incident_id, '{"status": "closed"}', 'Resolved',
       timestamptz '2026-07-01 11:05:00+00' + n * interval '37 seconds'
     from picked where n % 20 = 0`,
    [tenantId],
  );
  await sql.query(
    `insert into public.attendance_movements (tenant_id, instance_id, participant_id, direction, recorded_at, nonce)
     select p.tenant_id, p.instance_id, p.id, d.direction,
       timestamptz '2026-07-01 08:00:00+00' + (extract(epoch from p.created_at)::bigint % 86400) * interval '1 second'
         + d.hours * interval '1 hour',
       gen_random_uuid()
     from public.participants p
     cross join (values ('in', 0), ('out', 8)) as d (direction, hours)
     where p.tenant_id = $1 and p.deleted_at is null`,
    [tenantId],
  );
  await sql.query(
    `with calls as (
       insert into public.roll_calls (tenant_id, instance_id, sub_group_id, name, status, created_at)
       select s.tenant_id, s.instance_id, s.id, 'Roll call ' || k, case when k = 1 then 'closed' else 'open' end,
         timestamptz '2026-07-01 09:00:00+00' + k * interval '1 day' + row_number() over () * interval '1 second'
       from public.subgroups s cross join generate_series(1, 2) k where s.tenant_id = $1
       returning id, sub_group_id
     ), expected as (
       insert into public.roll_call_expected (tenant_id, roll_call_id, participant_id)
       select $1, c.id, p.id from calls c
       join public.participants p on p.sub_group_id = c.sub_group_id and p.deleted_at is null
       returning roll_call_id, participant_id
     )
     insert into public.roll_call_marks (tenant_id, roll_call_id, participant_id, mark)
     select $1, e.roll_call_id, e.participant_id, (array['present', 'absent', 'excused'])[1 + abs(hashtext(e.participant_id::text)) % 3]
     from expected e where abs(hashtext(e.participant_id::text || e.roll_call_id::text)) % 10 <> 0`,
    [tenantId],
  );
  return (user as { id: string }).id;
}

// ---------------------------------------------------------------------------
// The statements data.ts issues, recorded rather than run
// ---------------------------------------------------------------------------

interface Statement {
  text: string;
  values: unknown[];
}

/** A Sql that records each statement and returns no rows, so data.ts functions can be replayed under EXPLAIN. */
function recorder(): { sql: Sql; statements: Statement[] } {
  const statements: Statement[] = [];
  const sql: Sql = {
    async query(text, values = []) {
      statements.push({ text, values });
      return [];
    },
    async one(text, values = []) {
      statements.push({ text, values });
      return undefined;
    },
    async each(text, values) {
      statements.push({ text, values });
    },
  };
  return { sql, statements };
}

interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Index Name"?: string;
  Alias?: string;
  "Actual Rows"?: number;
  "Actual Loops"?: number;
  "Actual Total Time"?: number;
  Plans?: PlanNode[];
}

/** `Limit > Nested Loop Left Join > Index Scan (participants_by_instance)`: the plan on one line. */
function summarise(node: PlanNode): string {
  const where = node["Index Name"] ?? node["Relation Name"];
  const label = `${node["Node Type"]}${where ? ` (${where})` : ""}`;
  const children = (node.Plans ?? []).map(summarise);
  if (children.length === 0) return label;
  if (children.length === 1) return `${label} > ${children[0]}`;
  return `${label} > [${children.join(" | ")}]`;
}

function seqScans(node: PlanNode): string[] {
  const own = node["Node Type"] === "Seq Scan" && node["Relation Name"] ? [node["Relation Name"]] : [];
  return [...own, ...(node.Plans ?? []).flatMap(seqScans)];
}

/**
 * The plan of the query inside private.search_participant_ids, which EXPLAIN
 * of the list shows only as a Function Scan. It runs as the owner (security
 * definer) with the caller's claims, and an SQL function's query is planned
 * without its argument's value: a generic plan, as forced here.
 */
async function explainSearch(url: string, tenantId: string, pattern: unknown) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ prosrc: string }>(
      "select prosrc from pg_proc where oid = 'private.search_participant_ids(text)'::regprocedure",
    );
    await client.query("begin");
    await client.query("select set_config('request.jwt.claims', $1, true)", [JSON.stringify({ tenant_id: tenantId })]);
    await client.query("set local plan_cache_mode = force_generic_plan");
    await client.query(`prepare search_ids(text) as ${rows[0]?.prosrc}`);
    const result = await client.query(
      `explain (analyze, buffers, format json) execute search_ids(${client.escapeLiteral(String(pattern))})`,
    );
    await client.query("rollback");
    return result.rows[0]["QUERY PLAN"][0] as { Plan: PlanNode; "Execution Time"?: number };
  } finally {
    await client.end();
  }
}

interface RunPlan {
  query: string;
  plan: { Plan: PlanNode; "Execution Time"?: number };
}

/**
 * Every plan a statement runs: its own and those of the statements inside the
 * functions it calls (the care doors are security definer functions, and an
 * SQL function with its own search_path is never inlined), which EXPLAIN of
 * the call shows only as a Function Scan. Run for real through auto_explain,
 * as the API runs it: camp_api in the tenant's scope (scopeSettings), a named
 * statement planned generically, in a transaction rolled back afterwards.
 */
async function plansOfRun(url: string, principal: ScopePrincipal, statement: Statement): Promise<RunPlan[]> {
  const client = new pg.Client({ connectionString: url });
  let plans: RunPlan[] = [];
  client.on("notice", (notice) => {
    const text = notice.message ?? "";
    const at = text.indexOf("{");
    if (!text.startsWith("duration:") || at < 0) return;
    const body = JSON.parse(text.slice(at)) as { "Query Text": string; Plan: PlanNode };
    const ms = Number(/duration: ([\d.]+) ms/.exec(text)?.[1]);
    plans.push({ query: body["Query Text"], plan: { Plan: body.Plan, "Execution Time": ms } });
  });
  await client.connect();
  try {
    await client.query("load 'auto_explain'");
    await client.query(
      "set auto_explain.log_min_duration = 0; set auto_explain.log_analyze = on; set auto_explain.log_timing = off; " +
        "set auto_explain.log_nested_statements = on; set auto_explain.log_format = json; set auto_explain.log_level = notice",
    );
    await client.query("begin");
    await client.query(`select ${scopeSettings(client.escapeLiteral(claimsOf(principal)))}`);
    plans = [];
    await client.query({ name: "bench_run", text: statement.text, values: statement.values as unknown[] });
    const ran = plans;
    await client.query("rollback");
    return ran;
  } finally {
    await client.end();
  }
}

interface Shape {
  name: string;
  run(sql: Sql): Promise<unknown>;
  /** Writes are explained without running them. */
  write?: boolean;
  /** Why a sequential scan of participants is the right plan for this shape (it then passes, saying so). */
  scanExpected?: string;
  /** Run for real under auto_explain, every statement inside the functions it calls included (plansOfRun). */
  deep?: boolean;
}

/** Prints one plan; true when it scans a large table sequentially. */
function report(
  title: string,
  plan: { Plan: PlanNode; "Execution Time"?: number },
  sizes: Map<string, number>,
  scanExpected?: string,
): boolean {
  const scanned = seqScans(plan.Plan).filter(
    (relation) => relation === "participants" || (sizes.get(relation) ?? 0) > LARGE_TABLE,
  );
  if (scanExpected && scanned.every((relation) => relation === "participants")) {
    out(`ok   ${title} ${plan["Execution Time"]?.toFixed(2)} ms (sequential scan expected: ${scanExpected})`);
    out(`       ${summarise(plan.Plan)}`);
    return false;
  }
  const bad = scanned;
  const time = plan["Execution Time"] === undefined ? "planned only" : `${plan["Execution Time"].toFixed(2)} ms`;
  out(`${bad.length > 0 ? "FAIL" : "ok  "} ${title} ${time}`);
  out(`       ${summarise(plan.Plan)}`);
  if (bad.length > 0) out(`       sequential scan of ${bad.join(", ")}`);
  return bad.length > 0;
}

async function main() {
  const server = process.env.DATABASE_URL;
  let stopEmbedded: (() => Promise<void>) | undefined;
  let adminUrl = server;
  if (!adminUrl) {
    err("DATABASE_URL is not set: starting a throwaway embedded Postgres");
    const embedded = await startEmbeddedPostgres(join(tmpdir(), `camp-explain-${process.pid}`), { persistent: false });
    adminUrl = embedded.adminUrl;
    stopEmbedded = embedded.stop;
  }
  const name = `camp_explain_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const db = new Database(url.toString(), { max: 2 });
  let failed = false;
  try {
    await migrate(url.toString());
    const started = Date.now();
    err(`seeding ${PARTICIPANTS} participants (+ ${NEIGHBOUR_PARTICIPANTS} of a neighbour tenant)...`);
    const { tenantId, leadId } = await db.asOwner(async (sql) => {
      const neighbour = await seedTenant(sql, "Neighbour", 2, NEIGHBOUR_PARTICIPANTS);
      await seedCareAndSite(sql, neighbour);
      const bench = await seedTenant(sql, "Bench", 5, PARTICIPANTS);
      return { tenantId: bench, leadId: await seedCareAndSite(sql, bench) };
    });
    // VACUUM as autovacuum would by now: it sets the visibility map, which index-only scans need.
    await db.query("vacuum analyze");
    err(`seeded and analysed in ${((Date.now() - started) / 1000).toFixed(1)} s`);

    const pick = async (query: string) => ((await db.query<{ id: string }>(query, [tenantId]))[0] as { id: string }).id;
    const instance = await pick("select id from public.instances where tenant_id = $1 order by id limit 1");
    const ref = (table: string) =>
      pick(`select id from public.${table} where tenant_id = $1 and instance_id = '${instance}' order by id limit 1`);
    const [supergroup, subgroup, block, room] = await Promise.all(["supergroups", "subgroups", "blocks", "rooms"].map(ref));
    const participant = await pick("select id from public.participants where tenant_id = $1 and deleted_at is null limit 1");
    const sizes = new Map(
      (
        await db.query<{ relname: string; n: number }>(
          "select relname, reltuples::bigint as n from pg_class where relnamespace = 'public'::regnamespace and relkind = 'r'",
        )
      ).map((r) => [r.relname, r.n]),
    );

    const page = { limit: 50, offset: 0 };
    const list = (filters: Partial<ListFilters>) => (sql: Sql) => listParticipants(sql, { ...page, ...filters } as ListFilters);
    // A user with care write access who leads safeguarding, by a Bearer token: the care doors answer it everything.
    const principal: ScopePrincipal = { tenantId, userId: leadId, role: "admin", via: "bearer" };
    // The cursor of a first page, as the API gives it, for the `after=` pages.
    const next = async (filters: Partial<ListFilters>) => {
      const { meta } = await db.asTenant(principal, (sql) => listParticipants(sql, { ...page, ...filters } as ListFilters));
      if (!meta.next) throw new Error(`no next page for ${JSON.stringify(filters)}`);
      return meta.next;
    };
    const bySurname = [{ column: "surname", descending: false }] as ListFilters["sort"];
    const byFirstNameDescending = [{ column: "first_name", descending: true }] as ListFilters["sort"];
    const byRoomNumber = [{ column: "room_number", descending: false }] as ListFilters["sort"];
    const incidentPage = { limit: 100, offset: 0 };
    const incidents = (filters: Record<string, unknown>) => (sql: Sql) => listIncidents(sql, { ...incidentPage, ...filters });
    const movements = (filters: Record<string, unknown>) => (sql: Sql) =>
      listMovements(sql, { ...incidentPage, ...filters } as Parameters<typeof listMovements>[1]);
    const rollCalls = (filters: { instance_id?: string; status?: string }) => (sql: Sql) =>
      listRollCalls(sql, { ...incidentPage, ...filters });
    const shapes: Shape[] = [
      { name: "list: whole tenant", run: list({}) },
      { name: "list: whole tenant, offset 20000", run: list({ offset: 20_000 }) },
      { name: "list: instance_id", run: list({ instance_id: instance }) },
      { name: "list: status=inactive", run: list({ status: "inactive" }) },
      { name: "list: status=active", run: list({ status: "active" }) },
      { name: "list: instance_id + status=inactive", run: list({ instance_id: instance, status: "inactive" }) },
      { name: "list: super_group_id", run: list({ super_group_id: supergroup }) },
      { name: "list: sub_group_id", run: list({ sub_group_id: subgroup }) },
      { name: "list: block_id", run: list({ block_id: block }) },
      { name: "list: room_id", run: list({ room_id: room }) },
      { name: "list: instance_id + room_id", run: list({ instance_id: instance, room_id: room }) },
      { name: "list: q=lovelace", run: list({ q: "lovelace" }) },
      { name: "list: q=user-4242", run: list({ q: "user-4242" }) },
      { name: "list: q=jo (two letters)", run: list({ q: "jo" }) },
      { name: "list: q=hopper + instance_id", run: list({ q: "hopper", instance_id: instance }) },
      { name: "list: q=a (one letter)", run: list({ q: "a" }) },
      { name: "list: q=zq (two letters, found nowhere)", run: list({ q: "zq" }) },
      { name: "list: q=jo + instance_id", run: list({ q: "jo", instance_id: instance }) },
      { name: "list: q=berners lee (punctuation folded)", run: list({ q: "berners lee" }) },
      {
        name: "list: instance_id, sort=surname",
        run: list({ instance_id: instance, sort: [{ column: "surname", descending: false }] }),
      },
      {
        name: "list: instance_id, sort=-surname, offset 1000",
        run: list({ instance_id: instance, sort: [{ column: "surname", descending: true }], offset: 1000 }),
      },
      { name: "list: whole tenant, sort=surname", run: list({ sort: [{ column: "surname", descending: false }] }) },
      {
        name: "list: updated_since now (a sync poll), include_deleted",
        run: list({ updated_since: new Date().toISOString(), include_deleted: true }),
      },
      { name: "list: q=smith + status=inactive", run: list({ q: "smith", status: "inactive" }) },
      { name: "list: presence=in", run: list({ presence: "in" }) },
      { name: "list: presence=none", run: list({ presence: "none" }) },
      { name: "list: presence=in + instance_id", run: list({ presence: "in", instance_id: instance }) },
      { name: "list: presence=out + room_id", run: list({ presence: "out", room_id: room }) },
      { name: "list: severe_allergy", run: list({ severe_allergy: true }), deep: true },
      { name: "list: severe_allergy + instance_id", run: list({ severe_allergy: true, instance_id: instance }), deep: true },
      { name: "list: after= (whole tenant)", run: list({ after: await next({}) }) },
      { name: "list: after= (instance_id)", run: list({ instance_id: instance, after: await next({ instance_id: instance }) }) },
      {
        name: "list: after= (instance_id, sort=surname)",
        run: list({ instance_id: instance, sort: bySurname, after: await next({ instance_id: instance, sort: bySurname }) }),
      },
      {
        name: "list: after= (whole tenant, sort=surname)",
        run: list({ sort: bySurname, after: await next({ sort: bySurname }) }),
      },
      {
        name: "list: after= (instance_id, sort=-first_name)",
        run: list({
          instance_id: instance,
          sort: byFirstNameDescending,
          after: await next({ instance_id: instance, sort: byFirstNameDescending }),
        }),
      },
      {
        name: "list: after= (instance_id, sort=room_number, nullable)",
        run: list({
          instance_id: instance,
          sort: byRoomNumber,
          after: await next({ instance_id: instance, sort: byRoomNumber }),
        }),
      },
      { name: "list: after= (presence=in)", run: list({ presence: "in", after: await next({ presence: "in" }) }) },
      { name: "incidents: whole tenant", run: incidents({}), deep: true },
      { name: "incidents: offset 5000", run: incidents({ offset: 5_000 }), deep: true },
      { name: "incidents: instance_id", run: incidents({ instance_id: instance }), deep: true },
      { name: "incidents: participant_id", run: incidents({ participant_id: participant }), deep: true },
      { name: "incidents: status=open", run: incidents({ status: "open" }), deep: true },
      { name: "incidents: needs_attention=true", run: incidents({ needs_attention: true }), deep: true },
      {
        name: "incidents: category=injury + instance_id",
        run: incidents({ category: "injury", instance_id: instance }),
        deep: true,
      },
      { name: "attendance: whole tenant", run: movements({}), deep: true },
      { name: "attendance: instance_id", run: movements({ instance_id: instance }), deep: true },
      { name: "attendance: participant_id", run: movements({ participant_id: participant }), deep: true },
      {
        name: "attendance: instance_id + since",
        run: movements({ instance_id: instance, since: "2026-07-01T12:00:00Z" }),
        deep: true,
      },
      { name: "attendance: direction=in", run: movements({ direction: "in" }), deep: true },
      { name: "attendance: offset 10000", run: movements({ offset: 10_000 }), deep: true },
      { name: "roll-calls: whole tenant", run: rollCalls({}), deep: true },
      { name: "roll-calls: instance_id", run: rollCalls({ instance_id: instance }), deep: true },
      { name: "roll-calls: status=open", run: rollCalls({ status: "open" }), deep: true },
      { name: "get", run: (sql) => getParticipant(sql, participant) },
      { name: "update (room_id only)", write: true, run: (sql) => updateParticipant(sql, participant, { room_id: room }) },
      { name: "delete", write: true, run: (sql) => deleteParticipant(sql, participant) },
      {
        name: "create (sub_group_id and room_id only)",
        write: true,
        run: (sql) =>
          createParticipant(sql, {
            user_id: "bench-new",
            instance_id: instance,
            first_name: "New",
            surname: "Person",
            sub_group_id: subgroup,
            room_id: room,
          }),
      },
    ];

    out(
      `# Participant query plans: ${PARTICIPANTS} participants in one tenant (5 instances), ${NEIGHBOUR_PARTICIPANTS} in another`,
    );
    out();
    for (const shape of shapes) {
      const recorded = recorder();
      // The recorder answers no rows, which a door's caller may refuse: the statement is recorded by then.
      await shape.run(recorded.sql).catch((error) => {
        if (recorded.statements.length === 0) throw error;
      });
      if (shape.deep) {
        for (const statement of recorded.statements) {
          let plans: RunPlan[];
          try {
            plans = await plansOfRun(url.toString(), principal, statement);
          } catch (error) {
            // A statement timeout (15 s, as for a request) is a finding, not the end of the run.
            out(`FAIL ${shape.name}: ${(error as Error).message}`);
            failed = true;
            continue;
          }
          // One line per distinct statement (a door runs some once per row), failing on any of its runs.
          const seen = new Map<string, { plan: RunPlan["plan"]; runs: number; bad: boolean }>();
          for (const { query, plan } of plans) {
            const key = query.replace(/\s+/g, " ").trim();
            const entry = seen.get(key) ?? { plan, runs: 0, bad: false };
            entry.runs += 1;
            const scanned = seqScans(plan.Plan).some((r) => r === "participants" || (sizes.get(r) ?? 0) > LARGE_TABLE);
            if (scanned && !entry.bad) Object.assign(entry, { plan, bad: true });
            seen.set(key, entry);
          }
          for (const [query, { plan, runs }] of seen) {
            if (!/\b(from|join|update|into)\b/i.test(query)) continue;
            const title = `${shape.name} [${runs > 1 ? `${runs} runs of ` : ""}${query.slice(0, 70)}${query.length > 70 ? "…" : ""}]`;
            failed = report(title, plan, sizes) || failed;
          }
        }
        continue;
      }
      for (const [i, statement] of recorded.statements.entries()) {
        const kind = /^select count\(\*\)/.test(statement.text.trim()) ? "count" : `statement ${i + 1}`;
        const options = shape.write ? "format json" : "analyze, buffers, format json";
        // Writes are only planned (no analyze), so nothing is changed.
        const [row] = await db.asTenant(principal, (sql) =>
          sql.query<{ "QUERY PLAN": Array<{ Plan: PlanNode; "Execution Time"?: number }> }>(
            `explain (${options}) ${statement.text}`,
            statement.values,
          ),
        );
        const plan = row?.["QUERY PLAN"][0];
        if (!plan) throw new Error(`no plan for ${shape.name}`);
        failed = report(`${shape.name} [${kind}]`, plan, sizes, shape.scanExpected) || failed;
      }
      // The search's own query, once per shape that searches.
      const search = recorded.statements[0]?.text.match(/search_participant_ids\(\$(\d+)\)/);
      if (search) {
        const pattern = recorded.statements[0]?.values[Number(search[1]) - 1];
        const plan = await explainSearch(url.toString(), tenantId, pattern);
        failed = report(`${shape.name} [inside search_participant_ids]`, plan, sizes) || failed;
      }
    }
    out();
    out(failed ? "FAILED: a query reads a large table sequentially" : "every participant query is served by an index");
  } finally {
    await db.close();
    if (process.env.BENCH_KEEP_DB && !stopEmbedded) err(`kept the seeded database: ${url}`);
    else await admin.query(`drop database if exists ${name} with (force)`);
    await admin.end();
    await stopEmbedded?.();
  }
  process.exitCode = failed ? 1 : 0;
}

main().catch((error) => {
  err(`explain-participants failed: ${error instanceof Error ? error.stack : String(error)}`);
  process.exitCode = 1;
});
