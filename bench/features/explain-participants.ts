/**
 * Are the participant queries served by indexes on realistic data?
 *
 * Seeds a scratch database with one tenant of 100,000 participants over
 * several instances (and a smaller neighbour tenant), runs ANALYZE, then
 * EXPLAIN ANALYZEs, as camp_api inside the tenant's scope, exactly the
 * statements functions/participants/data.ts issues for each list filter shape
 * (and for get, update and delete). Fails when a plan reads participants, or
 * any table of more than 10,000 rows, with a sequential scan.
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
import { Database } from "../../functions/db/database.ts";
import type { Sql } from "../../functions/db/sql.ts";
import {
  createParticipant,
  deleteParticipant,
  getParticipant,
  listParticipants,
  updateParticipant,
} from "../../functions/participants/data.ts";
import type { ListFilters } from "../../functions/participants/schemas.ts";
import type { Principal } from "../../functions/principal.ts";
import { startEmbeddedPostgres } from "../../node/embedded-db.ts";
import { migrate } from "../../node/migrate.ts";

const PARTICIPANTS = Number(process.env.BENCH_PARTICIPANTS ?? 100_000);
const NEIGHBOUR_PARTICIPANTS = Math.round(PARTICIPANTS / 5);
/** A one- or two-letter term has no trigram and matches most of a tenant: its total reads every row. */
const SHORT_TERM = "the total of a term too short for trigrams counts every row of the tenant";
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
  await sql.query(
    `insert into public.rooms (tenant_id, instance_id, block_id, room_number, name, capacity)
     select b.tenant_id, b.instance_id, b.id, b.name || '-' || g, 'Room ' || g, 4 from public.blocks b, generate_series(1, 20) g
     where b.tenant_id = $1`,
    [tenantId],
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
       super_group_id, sub_group_id, block_id, room_id, room_number, created_at, deleted_at)
     select $1, inst.id, 'user-' || n, first_name, surname, first_name || ' ' || surname,
       (array['Male', 'Female', 'Other'])[1 + n % 3],
       case when n % 10 = 0 then 'inactive' else 'active' end,
       case when n % 5 <> 0 then sub.parent_supergroup_id end,
       case when n % 5 <> 0 then sub.id end,
       case when n % 3 <> 0 then room.block_id end,
       case when n % 3 <> 0 then room.id end,
       case when n % 3 <> 0 then room.room_number end,
       timestamptz '2026-01-01 00:00:00+00' + n * interval '1 second',
       case when n % 50 = 0 then now() end
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

interface Shape {
  name: string;
  run(sql: Sql): Promise<unknown>;
  /** Writes are explained without running them. */
  write?: boolean;
  /** Why a sequential scan of participants is the right plan for this shape (it then passes, saying so). */
  scanExpected?: string;
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
    const tenantId = await db.asOwner(async (sql) => {
      await seedTenant(sql, "Neighbour", 2, NEIGHBOUR_PARTICIPANTS);
      return seedTenant(sql, "Bench", 5, PARTICIPANTS);
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
      { name: "list: q=jo (two letters)", run: list({ q: "jo" }), scanExpected: SHORT_TERM },
      { name: "list: q=hopper + instance_id", run: list({ q: "hopper", instance_id: instance }) },
      { name: "list: q=a (one letter)", run: list({ q: "a" }), scanExpected: SHORT_TERM },
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

    const principal: Pick<Principal, "tenantId" | "userId" | "role"> = { tenantId, userId: tenantId, role: "admin" };
    out(
      `# Participant query plans: ${PARTICIPANTS} participants in one tenant (5 instances), ${NEIGHBOUR_PARTICIPANTS} in another`,
    );
    out();
    for (const shape of shapes) {
      const recorded = recorder();
      await shape.run(recorded.sql);
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
