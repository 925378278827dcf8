import { randomBytes, randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import pg from "pg";
import { Database } from "../../functions/db/database.ts";
import { connectionDetails, grantReportingRole, revokeReportingRole } from "../../functions/reporting/roles.ts";
import { migrate } from "../../node/migrate.ts";
import { say } from "../../node/runtime.ts";
import { databaseUrl } from "../../tests/support/urls.ts";
import { seed } from "../harness/seed-data.ts";

/**
 * npm run bench:reporting [-- --instances 50 --participants 2000 --tenants 2 --runs 5]
 *
 * Times every reporting view for one tenant of `instances × participants`
 * participants (100,000 by default), read the way staff read them: logged in
 * over TCP as the tenant's reporting role, every row fetched. The other
 * tenants are as large, so RLS has rows to leave out. Also times the same
 * views as a Supabase user (role authenticated). Uses a scratch database of
 * its own on DATABASE_URL's server, dropped at the end with its role.
 */

const { values } = parseArgs({
  options: {
    tenants: { type: "string", default: "2" },
    instances: { type: "string", default: "50" },
    participants: { type: "string", default: "2000" },
    runs: { type: "string", default: "5" },
  },
});

const TARGET_MS = 200;

/** Each view as a report would read it: all rows; plus the participant list of one instance. */
const QUERIES: Array<[string, string]> = [
  // A yardstick for the machine, not a view: one pass over the tenant's rows.
  ["(baseline: count(*) of table)", "select count(*) from public.participants"],
  ["participants", "select * from reporting.participants"],
  ["participants (one instance)", "select * from reporting.participants where instance_id = $1"],
  ["age_distribution", "select * from reporting.age_distribution"],
  ["instance_counts", "select * from reporting.instance_counts"],
  ["supergroup_counts", "select * from reporting.supergroup_counts"],
  ["subgroup_counts", "select * from reporting.subgroup_counts"],
  ["room_occupancy", "select * from reporting.room_occupancy"],
  ["block_occupancy", "select * from reporting.block_occupancy"],
  ["daily_movements", "select * from reporting.daily_movements"],
];

interface Timing {
  query: string;
  rows: number;
  /** Wall time at the client, every row fetched and parsed. */
  median_ms: number;
  max_ms: number;
  /** Postgres' own execution time (EXPLAIN ANALYZE, timing off): the view without the transfer. */
  server_median_ms: number;
  /** The fastest of those: the least disturbed by other load on a shared machine. */
  server_best_ms: number;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
const round = (n: number) => Math.round(n * 10) / 10;

async function time(client: pg.ClientBase, text: string, params: unknown[], runs: number): Promise<Timing> {
  const rows = (await client.query(text, params)).rowCount ?? 0; // warm-up
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    await client.query(text, params);
    ms.push(performance.now() - started);
  }
  const server: number[] = [];
  for (let i = 0; i < runs; i++) {
    const plan = await client.query<{ "QUERY PLAN": string }>(`explain (analyze, timing off) ${text}`, params);
    const line = plan.rows.map((r) => r["QUERY PLAN"]).find((l) => l.startsWith("Execution Time"));
    server.push(Number(/([\d.]+) ms/.exec(line ?? "")?.[1] ?? Number.NaN));
  }
  return {
    query: text,
    rows,
    median_ms: round(median(ms)),
    max_ms: round(Math.max(...ms)),
    server_median_ms: round(median(server)),
    server_best_ms: round(Math.min(...server)),
  };
}

function report(title: string, results: Array<[string, Timing]>) {
  say(`\n${title}`);
  for (const [name, t] of results) {
    const verdict = t.server_median_ms < TARGET_MS ? "ok" : "SLOW";
    say(
      `  ${name.padEnd(30)} ${String(t.rows).padStart(7)} rows  server ${String(t.server_median_ms).padStart(7)} ms ` +
        `(best ${String(t.server_best_ms).padStart(7)})  ` +
        `client median ${String(t.median_ms).padStart(7)} ms  max ${String(t.max_ms).padStart(7)} ms  ${verdict}`,
    );
  }
}

async function main() {
  const serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) throw new Error("set DATABASE_URL to a server where this role may create a scratch database");
  const count = (name: string, value: string | undefined) => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer`);
    return n;
  };
  const tenants = count("tenants", values.tenants);
  const instances = count("instances", values.instances);
  const perInstance = count("participants", values.participants);
  const runs = count("runs", values.runs);

  const name = `camp_bench_reporting_${process.pid}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  const url = databaseUrl(serverUrl, name);
  const db = new Database(url, { max: 2 });
  const role = `bench_report_${randomBytes(4).toString("hex")}`;
  let granted = false;
  try {
    await migrate(url);
    say(`seeding ${tenants} tenants × ${instances} instances × ${perInstance} participants into ${name}`);
    const seeded = await seed(db, { tenants, instancesPerTenant: instances, participantsPerInstance: perInstance, log: say });
    const tenant = seeded[0];
    if (!tenant) throw new Error("nothing seeded");
    const live = await db.query<{ n: number }>(
      "select count(*) as n from public.participants where tenant_id = $1 and deleted_at is null",
      [tenant.id],
    );
    say(`tenant ${tenant.name}: ${live[0]?.n.toLocaleString("en")} live participants`);
    const firstInstance = (
      await db.query<{ id: string }>("select id from public.instances where tenant_id = $1 order by start_date limit 1", [
        tenant.id,
      ])
    )[0]?.id;

    const grant = await grantReportingRole(db, tenant.id, role);
    granted = true;
    const reporter = new pg.Client({ connectionString: connectionDetails(url, grant).url });
    await reporter.connect();
    const asRole: Array<[string, Timing]> = [];
    for (const [label, text] of QUERIES)
      asRole.push([label, await time(reporter, text, text.includes("$1") ? [firstInstance] : [], runs)]);
    await reporter.end();
    report(`as reporting role ${role} (median of ${runs} runs, all rows fetched over TCP)`, asRole);

    const subject = randomUUID();
    await db.query("update public.users set auth_subject = $1 where id = $2", [subject, tenant.keys[0]?.user_id]);
    const client = await db.pool.connect();
    const asUser: Array<[string, Timing]> = [];
    try {
      await client.query("begin; set local role authenticated");
      await client.query("select set_config('request.jwt.claims', $1, true)", [
        JSON.stringify({ sub: subject, role: "authenticated" }),
      ]);
      for (const [label, text] of QUERIES)
        asUser.push([label, await time(client, text, text.includes("$1") ? [firstInstance] : [], runs)]);
    } finally {
      await client.query("rollback");
      client.release();
    }
    report("as a Supabase user (role authenticated, the same views)", asUser);

    const slow = [...asRole, ...asUser].filter(([name, t]) => !name.startsWith("(") && t.server_median_ms >= TARGET_MS);
    process.stdout.write(
      `${JSON.stringify({ participants_in_tenant: live[0]?.n, target_ms: TARGET_MS, reporting_role: Object.fromEntries(asRole), authenticated: Object.fromEntries(asUser) })}\n`,
    );
    say(
      slow.length
        ? `\n${slow.length} views over ${TARGET_MS} ms on the server`
        : `\nevery view under ${TARGET_MS} ms on the server`,
    );
  } finally {
    if (granted) await revokeReportingRole(db, role).catch((e) => say(`revoke failed: ${(e as Error).message}`));
    await db.close();
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.end();
  }
}

main().catch((error) => {
  say(`bench:reporting failed: ${(error as Error).message}`);
  process.exit(1);
});
