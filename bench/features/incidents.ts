/**
 * What incidents cost (issue 42, item 4): the list (a door that applies every
 * incident's amendments to find its current values, filters on them and
 * writes one care-read audit event per listed incident), the list of those
 * needing attention, one incident, a report and an amendment, against the
 * participant list and a participant PATCH of the same tenant, interleaved
 * request by request. The tenant has 500 participants and --incidents
 * incidents (half of them amended once); another tenant of 20,000 incidents
 * shares the database.
 *
 *   npm run bench:incidents                      # embedded Postgres, or the server of DATABASE_URL
 *   npm run bench:incidents -- --rounds 100 --incidents 2000
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
    rounds: { type: "string", default: "100" },
    incidents: { type: "string", default: "2000" },
  },
});
const ROUNDS = Number(values.rounds);
const INCIDENTS = Number(values.incidents);
const PARTICIPANTS = 500;
const out = (line = "") => process.stdout.write(`${line}\n`);

interface Variant {
  name: string;
  run(i: number): Promise<Response> | Response;
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;

function summary(list: number[]) {
  const sorted = [...list].sort((a, b) => a - b);
  return { mean: list.reduce((a, b) => a + b, 0) / list.length, p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
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
      `  ${variant.name.padEnd(44)} mean ${s.mean.toFixed(3)} ms  p50 ${s.p50.toFixed(3)} ms  p99 ${s.p99.toFixed(3)} ms${ratio}`,
    );
  }
}

/** Incidents of a tenant written straight into the tables (as the owner): one or two participants each, half amended. */
async function seedIncidents(db: Database, tenantId: string, instance: string, participants: string[], count: number) {
  await db.asOwner(async (sql) => {
    await sql.query(
      `with src as (select gen_random_uuid() as id, g from generate_series(1, $3::int) g)
       , made as (
         insert into public.incidents (id, tenant_id, instance_id, occurred_at, location, category, severity, description,
                                       actions_taken, guardian_notified_at, guardian_notified_by, recorded_at)
         select s.id, $1, $2, now() - (s.g || ' minutes')::interval, 'Field ' || (s.g % 7),
                (array['injury','illness','behaviour','near_miss','other'])[1 + s.g % 5],
                (array['minor','moderate','serious'])[1 + s.g % 3], 'What happened ' || s.g, 'First aid',
                case when s.g % 4 = 0 then null else now() - (s.g || ' minutes')::interval + interval '30 minutes' end,
                'Nurse', now() - (s.g || ' minutes')::interval + interval '1 minute'
         from src s
         returning 1)
       , linked as (
         insert into public.incident_participants (tenant_id, incident_id, participant_id)
         select distinct $1::uuid, s.id, p.id from src s
         cross join lateral unnest(array[($4::uuid[])[1 + s.g % $5], ($4::uuid[])[1 + (s.g * 7) % $5]]) as p(id)
         returning 1)
       insert into public.incident_amendments (tenant_id, incident_id, changes, reason)
       select $1, s.id, jsonb_build_object('actions_taken', 'Seen by the doctor'), 'follow-up' from src s where s.g % 2 = 0`,
      [tenantId, instance, count, participants, participants.length],
    );
  });
}

async function main() {
  let adminUrl = process.env.DATABASE_URL;
  let stopEmbedded: (() => Promise<void>) | undefined;
  if (!adminUrl) {
    const embedded = await startEmbeddedPostgres(join(tmpdir(), `camp-incidents-bench-${process.pid}`), { persistent: false });
    adminUrl = embedded.adminUrl;
    stopEmbedded = embedded.stop;
  }
  const name = `camp_incidents_bench_${randomBytes(4).toString("hex")}`;
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
    const instance = (await send("POST", "/api/v1/instances", { name: "Camp" })).data.id;
    const people = async (tenantId: string, inst: string, prefix: string, n: number) =>
      db.asOwner(async (sql) =>
        (
          await sql.query<{ id: string }>(
            `insert into public.participants (tenant_id, instance_id, user_id, first_name, surname)
             select $1, $2, $3 || g, 'First' || g, 'Last' || g from generate_series(1, $4::int) g returning id`,
            [tenantId, inst, prefix, n],
          )
        ).map((r) => r.id),
      );
    const ids = await people(tenant.tenant_id, instance, "u", PARTICIPANTS);
    await seedIncidents(db, tenant.tenant_id, instance, ids, INCIDENTS);
    const others = await createTenant(db, "Others", "admin@others.test");
    const otherInstance = (
      await db.asOwner((sql) =>
        sql.query<{ id: string }>("insert into public.instances (tenant_id, name) values ($1, 'Other') returning id", [
          others.tenant_id,
        ]),
      )
    )[0]?.id as string;
    await seedIncidents(db, others.tenant_id, otherInstance, await people(others.tenant_id, otherInstance, "o", 2000), 20_000);
    await db.asOwner((sql) => sql.query("analyze"));
    const one = (await send("GET", "/api/v1/incidents?limit=1")) as unknown as { data: Array<{ id: string }> };
    const incident = one.data[0]?.id as string;
    const child = ids[0] as string;

    await compare(`reading incidents (${INCIDENTS} in the tenant, 20,000 in another)`, ROUNDS, [
      { name: "GET /participants?limit=100 (baseline)", run: () => request("GET", "/api/v1/participants?limit=100") },
      { name: "GET /incidents?limit=100", run: () => request("GET", "/api/v1/incidents?limit=100") },
      {
        name: "GET /incidents?needs_attention=true&limit=100",
        run: () => request("GET", "/api/v1/incidents?needs_attention=true&limit=100"),
      },
      {
        name: "GET /incidents?participant_id=…",
        run: () => request("GET", `/api/v1/incidents?participant_id=${child}`),
      },
      { name: "GET /incidents/{id}", run: () => request("GET", `/api/v1/incidents/${incident}`) },
    ]);
    await compare("writing incidents", ROUNDS, [
      {
        name: "PATCH participant (baseline)",
        run: (i) => request("PATCH", `/api/v1/participants/${child}`, { rank: `r${i}` }),
      },
      {
        name: "POST /incidents",
        run: () =>
          request("POST", "/api/v1/incidents", {
            instance_id: instance,
            occurred_at: new Date(Date.now() - 60_000).toISOString(),
            location: "Pool",
            category: "injury",
            severity: "minor",
            participant_ids: [child, ids[1]],
            description: "Slipped",
            actions_taken: "Ice",
            guardian_notified_at: new Date().toISOString(),
          }),
      },
      {
        name: "POST /incidents/{id}/amendments",
        run: (i) =>
          request("POST", `/api/v1/incidents/${incident}/amendments`, {
            changes: { location: `Pool ${i}` },
            reason: "more precise",
          }),
      },
    ]);
  } finally {
    await db.close();
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.end();
    await stopEmbedded?.();
  }
}

await main();
