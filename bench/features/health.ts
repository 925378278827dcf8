/**
 * What the health centre costs (issue 42): charting a dose
 * (POST /participants/{id}/medication-administrations, a door that checks
 * care access, locks the medication, finds the due time and inserts an
 * append-only row with its audit event) against a care record PATCH and a
 * participant PATCH, interleaved request by request; and the medication pass
 * of an instance of 500 participants with 300 scheduled medications (p50 and
 * p99, each pass writing one care-read audit event per listed participant),
 * with the EXPLAIN of the query behind it (private.scheduled_doses), which
 * shows which indexes it uses and which tables it scans (another tenant of
 * 50,000 participants shares the database).
 *
 *   npm run bench:health                   # embedded Postgres, or the server of DATABASE_URL
 *   npm run bench:health -- --rounds 300 --passes 100
 *   npm run bench:health -- --keep        # leave the scratch database for a look at its plans
 *
 * One process, one scratch database: read the ratios, not the absolute times.
 */
import { randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import pg from "pg";
import { createApp } from "../../functions/app.ts";
import { loadConfig } from "../../functions/config.ts";
import { Database } from "../../functions/db/database.ts";
import { createTenant } from "../../functions/tenants/provisioning.ts";
import { startEmbeddedPostgres } from "../../node/embedded-db.ts";
import { migrate } from "../../node/migrate.ts";

const { values } = parseArgs({
  options: {
    rounds: { type: "string", default: "300" },
    passes: { type: "string", default: "100" },
    keep: { type: "boolean", default: false },
  },
});
const ROUNDS = Number(values.rounds);
const PASSES = Number(values.passes);
const PARTICIPANTS = 500;
const MEDICATIONS = 300;
const out = (line = "") => process.stdout.write(`${line}\n`);

interface Variant {
  name: string;
  run(i: number): Promise<Response> | Response;
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;

function summary(list: number[]) {
  const sorted = [...list].sort((a, b) => a - b);
  return {
    mean: list.reduce((a, b) => a + b, 0) / list.length,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
  };
}

/** Runs the variants interleaved and prints each one's mean, p50 and p99 and its ratio to the first. */
async function compare(title: string, rounds: number, variants: Variant[]) {
  const times = variants.map(() => [] as number[]);
  for (let i = 0; i < rounds; i++) {
    for (const [n, variant] of variants.entries()) {
      const started = performance.now();
      const res = await variant.run(i);
      const text = await res.text();
      if (res.status >= 400) throw new Error(`${variant.name}: ${res.status} ${text.slice(0, 300)}`);
      (times[n] as number[]).push(performance.now() - started);
    }
  }
  const stats = times.map(summary);
  const base = stats[0] as ReturnType<typeof summary>;
  out(`\n${title} (${rounds} rounds, interleaved)`);
  for (const [n, variant] of variants.entries()) {
    const s = stats[n] as ReturnType<typeof summary>;
    const ratio = n === 0 ? "" : `  x${(s.mean / base.mean).toFixed(2)} mean, x${(s.p50 / base.p50).toFixed(2)} p50`;
    out(
      `  ${variant.name.padEnd(40)} mean ${s.mean.toFixed(3)} ms  p50 ${s.p50.toFixed(3)} ms  p99 ${s.p99.toFixed(3)} ms${ratio}`,
    );
  }
}

async function main() {
  let adminUrl = process.env.DATABASE_URL;
  let stopEmbedded: (() => Promise<void>) | undefined;
  if (!adminUrl) {
    const embedded = await startEmbeddedPostgres(join(tmpdir(), `camp-health-bench-${process.pid}`), { persistent: false });
    adminUrl = embedded.adminUrl;
    stopEmbedded = embedded.stop;
  }
  const name = `camp_health_bench_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const db = new Database(url.toString(), { max: 4 });
  try {
    await migrate(url.toString());
    const tenant = await createTenant(db, "Bench", "admin@bench.test");
    await db.asOwner((sql) => sql.query("update public.api_keys set scopes = '{read,write,care}'"));
    const app = createApp({ db, config: loadConfig({ RATE_LIMIT_PER_MINUTE: "0" }) });
    const headers = { "X-API-Key": tenant.api_key, "Content-Type": "application/json" };
    const request = (method: string, path: string, body?: unknown) =>
      app.request(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const send = async (method: string, path: string, body?: unknown) => {
      const res = await request(method, path, body);
      if (res.status >= 400) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
      return (await res.json()) as { data: { id: string } };
    };
    const instance = (await send("POST", "/api/v1/instances", { name: "Camp", time_zone: "UTC" })).data.id;
    // A second instance of the same size, so the pass has someone else's doses to leave out.
    const otherInstance = (await send("POST", "/api/v1/instances", { name: "Other camp", time_zone: "UTC" })).data.id;
    const seed = async (inst: string, prefix: string) => {
      const ids = await db.asOwner(async (sql) =>
        (
          await sql.query<{ id: string }>(
            `insert into public.participants (tenant_id, instance_id, user_id, first_name, surname)
             select $1, $2, $3 || g, 'First' || g, 'Last' || g from generate_series(1, $4::int) g returning id`,
            [tenant.tenant_id, inst, prefix, PARTICIPANTS],
          )
        ).map((r) => r.id),
      );
      await db.asOwner(async (sql) => {
        await sql.query(
          `insert into public.participant_care (tenant_id, id, care_notes) select $1, id, 'notes' from unnest($2::uuid[]) as p(id)`,
          [tenant.tenant_id, ids],
        );
        // 300 scheduled medications on the first 300 participants: morning, noon and evening doses.
        await sql.query(
          `insert into public.participant_medications (tenant_id, participant_id, name, dose, times)
           select $1, id, 'Med ' || n, '10 mg', '{08:00,12:00,20:00}' from unnest($2::uuid[]) with ordinality as p(id, n)`,
          [tenant.tenant_id, ids.slice(0, MEDICATIONS)],
        );
      });
      return ids;
    };
    const ids = await seed(instance, "u");
    await seed(otherInstance, "o");
    // And the rest of a shared database: another tenant of 50,000 participants in 20 camps, 30,000
    // of them on a scheduled medication, so that the pass must find one instance's doses by index.
    const others = await createTenant(db, "Others", "admin@others.test");
    await db.asOwner(async (sql) => {
      await sql.query(
        `with camps as (
           insert into public.instances (tenant_id, name, time_zone) select $1, 'Camp ' || n, 'UTC' from generate_series(1, 20) n
           returning id),
         people as (
           insert into public.participants (tenant_id, instance_id, user_id, first_name, surname)
           select $1, c.id, 'x' || g, 'First' || g, 'Last' || g from camps c cross join generate_series(1, 2500) g
           returning id, user_id)
         insert into public.participant_medications (tenant_id, participant_id, name, dose, times)
         select $1, id, 'Med', '5 mg', '{08:00,20:00}' from people where substr(user_id, 2)::int <= 1500`,
        [others.tenant_id],
      );
    });
    const one = ids[0] as string;
    const scheduled = (await send("POST", `/api/v1/participants/${one}/medications`, { name: "Insulin", times: ["08:00"] })).data
      .id;
    const asNeeded = (await send("POST", `/api/v1/participants/${one}/medications`, { name: "Paracetamol", prn: true })).data.id;
    const today = new Date().toISOString().slice(0, 10);
    const morning = `${today}T08:00:00.000Z`;
    // A day of charting before the measurements: every scheduled dose of the morning pass charted but one in ten.
    await db.asOwner((sql) =>
      sql.query(
        `insert into public.medication_administrations (tenant_id, participant_id, medication_id, medication_name, outcome, administered_at, due_at)
         select m.tenant_id, m.participant_id, m.id, m.name, 'given', $2::timestamptz + interval '5 minutes', $2::timestamptz
         from public.participant_medications m where m.tenant_id = $1 and m.times is not null
           and right(m.name, 1) <> '0'`,
        [tenant.tenant_id, morning],
      ),
    );
    await db.asOwner((sql) => sql.query("analyze"));

    await compare("charting a dose against the care and participant writes of one participant", ROUNDS, [
      {
        name: "PATCH participant (baseline)",
        run: (i) => request("PATCH", `/api/v1/participants/${one}`, { rank: `r${i}` }),
      },
      {
        name: "PATCH care record",
        run: (i) => request("PATCH", `/api/v1/participants/${one}/care`, { care_notes: `n${i}` }),
      },
      {
        name: "POST administration, scheduled dose",
        run: () =>
          request("POST", `/api/v1/participants/${one}/medication-administrations`, {
            medication_id: scheduled,
            outcome: "given",
            administered_at: `${today}T08:04:00.000Z`,
          }),
      },
      {
        name: "POST administration, as-needed dose",
        run: () =>
          request("POST", `/api/v1/participants/${one}/medication-administrations`, {
            medication_id: asNeeded,
            outcome: "given",
          }),
      },
    ]);

    const passPath = `/api/v1/instances/${instance}/medication-pass?at=${encodeURIComponent(morning)}&window_minutes=60`;
    const listed = (await (await request("GET", passPath)).json()) as { data: unknown[] };
    out(`\nthe pass at ${morning} lists ${listed.data.length} doses of ${PARTICIPANTS} participants`);
    await compare(`medication pass of ${PARTICIPANTS} participants, ${MEDICATIONS} medications`, PASSES, [
      {
        name: "GET participants, a page of 50 (baseline)",
        run: () => request("GET", `/api/v1/participants?instance_id=${instance}`),
      },
      { name: "GET medication-pass (60 min either side)", run: () => request("GET", passPath) },
    ]);

    // What turning JIT off for the pass saved (*_medication_pass_jit.sql): its query with JIT as
    // the server's default has it (on, above jit_above_cost) and off, interleaved.
    const doses = (jit: "on" | "off") => async () => {
      await db.asOwner(async (sql) => {
        await sql.query(`set local jit = ${jit}`);
        await sql.query(
          "select count(*) from private.scheduled_doses($1, $2::timestamptz - interval '1 hour', $2::timestamptz + interval '1 hour')",
          [instance, morning],
        );
      });
      return new Response(null, { status: 204 });
    };
    await compare("the pass's query (private.scheduled_doses), JIT off and on", Math.min(PASSES, 20), [
      { name: "jit = off (as the pass runs it now)", run: doses("off") },
      { name: "jit = on (the server's default)", run: doses("on") },
    ]);

    // The pass's query, as the planner runs it inside private.scheduled_doses.
    const plan = await db.asOwner(async (sql) => {
      const [fn] = await sql.query<{ src: string }>(
        "select prosrc as src from pg_proc where proname = 'scheduled_doses' and pronamespace = 'private'::regnamespace",
      );
      const body = (fn?.src ?? "")
        .replaceAll("p_instance", "$1::uuid")
        .replaceAll("p_from", "$2::timestamptz")
        .replaceAll("p_to", "$3::timestamptz");
      await sql.query(`prepare pass_plan(uuid, timestamptz, timestamptz) as ${body}`);
      // As the pass runs it: JIT off (*_medication_pass_jit.sql), and a generic plan, as a SQL
      // function with a SET clause (not inlined) plans its statement with its arguments as parameters.
      await sql.query("set local jit = off");
      await sql.query("set local plan_cache_mode = force_generic_plan");
      // EXPLAIN EXECUTE takes no bind parameters: the ids and times are ours, written as literals.
      const rows = await sql.query<{ "QUERY PLAN": string }>(
        `explain (analyze, buffers, costs off, summary on) execute pass_plan('${instance}',
           timestamptz '${morning}' - interval '1 hour', timestamptz '${morning}' + interval '1 hour')`,
        [],
      );
      await sql.query("deallocate pass_plan");
      return rows.map((r) => r["QUERY PLAN"]);
    });
    out("\nEXPLAIN of private.scheduled_doses for the pass:");
    for (const line of plan) out(`  ${line}`);
    const indexes = new Set(
      plan.flatMap((line) => /Scan (?:Backward )?using (\w+)|Bitmap Index Scan on (\w+)/.exec(line)?.slice(1, 3) ?? []),
    );
    indexes.delete(undefined as never);
    const scans = plan.filter((line) =>
      /Seq Scan on (participants|participant_medications|medication_administrations)\b/.test(line),
    );
    out(`\nindexes used: ${[...indexes].filter(Boolean).join(", ") || "none"}`);
    out(`sequential scans of the big tables: ${scans.length === 0 ? "none" : `\n${scans.join("\n")}`}`);
  } finally {
    await db.close();
    if (values.keep) out(`\nkept the database ${name}`);
    else await admin.query(`drop database if exists ${name} with (force)`);
    await admin.end();
    await stopEmbedded?.();
  }
}

main().catch((error) => {
  process.stderr.write(`health bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 1;
});
