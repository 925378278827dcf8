/**
 * What the safeguarding records cost per request: a care read goes through a
 * database door (private.care_*: the caller's care access from users and
 * api_keys, the participant looked up, a read event inserted into the audit
 * trail) where a participant read is one select; and the participant list's
 * severe_allergy filter (the door's id set, and one audit event per listed
 * participant) against the same list without it.
 *
 *   npm run bench:care                 # embedded Postgres, or the server of DATABASE_URL
 *   npm run bench:care -- --rounds 400
 *
 * Variants run interleaved, request by request, in one process against one
 * scratch database, so a noisy machine slows all alike: read the ratios.
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

const { values } = parseArgs({ options: { rounds: { type: "string", default: "300" } } });
const ROUNDS = Number(values.rounds);
const out = (line = "") => process.stdout.write(`${line}\n`);

type App = ReturnType<typeof createApp>;

interface Variant {
  name: string;
  run(i: number): Promise<Response> | Response;
}

/** Runs the variants interleaved and prints each one's mean and median in milliseconds. */
async function compare(title: string, variants: Variant[]) {
  const times = variants.map(() => [] as number[]);
  for (let i = 0; i < ROUNDS; i++) {
    for (const [n, variant] of variants.entries()) {
      const started = performance.now();
      const res = await variant.run(i);
      await res.arrayBuffer();
      if (res.status >= 400) throw new Error(`${variant.name}: ${res.status}`);
      (times[n] as number[]).push(performance.now() - started);
    }
  }
  const stats = times.map((list) => {
    const sorted = [...list].sort((a, b) => a - b);
    return { mean: list.reduce((a, b) => a + b, 0) / list.length, p50: sorted[Math.floor(sorted.length / 2)] as number };
  });
  out(`\n${title} (${ROUNDS} rounds, interleaved)`);
  const base = stats[0] as { mean: number; p50: number };
  for (const [n, variant] of variants.entries()) {
    const s = stats[n] as { mean: number; p50: number };
    const delta =
      n === 0
        ? ""
        : `  ${s.mean - base.mean >= 0 ? "+" : ""}${(s.mean - base.mean).toFixed(3)} ms (x${(s.mean / base.mean).toFixed(2)})`;
    out(`  ${variant.name.padEnd(34)} mean ${s.mean.toFixed(3)} ms  p50 ${s.p50.toFixed(3)} ms${delta}`);
  }
}

async function main() {
  let adminUrl = process.env.DATABASE_URL;
  let stopEmbedded: (() => Promise<void>) | undefined;
  if (!adminUrl) {
    const embedded = await startEmbeddedPostgres(join(tmpdir(), `camp-care-bench-${process.pid}`), { persistent: false });
    adminUrl = embedded.adminUrl;
    stopEmbedded = embedded.stop;
  }
  const name = `camp_care_bench_${randomBytes(4).toString("hex")}`;
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
    const app: App = createApp({ db, config: loadConfig({ RATE_LIMIT_PER_MINUTE: "0" }) });
    const headers = { "X-API-Key": tenant.api_key, "Content-Type": "application/json" };
    const send = async (method: string, path: string, body?: unknown) => {
      const res = await app.request(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      if (res.status >= 400) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
      return (await res.json()) as { data: { id: string } };
    };
    const instance = (await send("POST", "/api/v1/instances", { name: "Camp" })).data.id;
    // 1,000 participants, one in ten with a severe allergy, each with a care record.
    const ids = await db.asOwner(async (sql) =>
      (
        await sql.query<{ id: string }>(
          `insert into public.participants (tenant_id, instance_id, user_id, first_name, surname)
           select $1, $2, 'u' || g, 'First' || g, 'Last' || g from generate_series(1, 1000) g returning id`,
          [tenant.tenant_id, instance],
        )
      ).map((r) => r.id),
    );
    await db.asOwner((sql) =>
      sql.query(
        `insert into public.participant_care (tenant_id, id, allergies)
         select $1, id, case when row_number() over () % 10 = 0 then '[{"name": "peanut", "severity": "severe"}]'::jsonb
                             else '[{"name": "dust", "severity": "mild"}]'::jsonb end
         from unnest($2::uuid[]) as p(id)`,
        [tenant.tenant_id, ids],
      ),
    );
    const one = ids[0] as string;
    for (const n of [1, 2, 3]) {
      await send("POST", `/api/v1/participants/${one}/contacts`, {
        name: `Contact ${n}`,
        phone: "+44 20 7946 0958",
        emergency: true,
        emergency_order: n,
      });
    }
    await send("PUT", `/api/v1/participants/${one}/consents`, { photo: "granted", emergency_medical_treatment: "granted" });
    const get = (path: string) => () => app.request(path, { headers });

    await compare("reads of one participant", [
      { name: "GET participant (baseline)", run: get(`/api/v1/participants/${one}`) },
      { name: "GET care record (door + audit)", run: get(`/api/v1/participants/${one}/care`) },
      { name: "GET 3 contacts (door + audit)", run: get(`/api/v1/participants/${one}/contacts`) },
      { name: "GET consents (door + audit)", run: get(`/api/v1/participants/${one}/consents`) },
    ]);
    await compare("writes of one participant", [
      {
        name: "PATCH participant (baseline)",
        run: (i) =>
          app.request(`/api/v1/participants/${one}`, { method: "PATCH", headers, body: JSON.stringify({ rank: `r${i}` }) }),
      },
      {
        name: "PATCH care record (door + audit)",
        run: (i) =>
          app.request(`/api/v1/participants/${one}/care`, {
            method: "PATCH",
            headers,
            body: JSON.stringify({ care_notes: `n${i}` }),
          }),
      },
    ]);
    await compare("participant list, 50 of 1,000 (100 with a severe allergy)", [
      { name: "instance_id only (baseline)", run: get(`/api/v1/participants?instance_id=${instance}`) },
      { name: "with severe_allergy=true", run: get(`/api/v1/participants?instance_id=${instance}&severe_allergy=true`) },
    ]);
    const events = await db.asOwner((sql) => sql.one<{ n: number }>("select count(*)::int as n from public.audit_events"));
    out(`\naudit events written by the run: ${events?.n}`);
  } finally {
    await db.close();
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.end();
    await stopEmbedded?.();
  }
}

main().catch((error) => {
  process.stderr.write(`care bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 1;
});
