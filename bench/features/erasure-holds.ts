/**
 * What holding the participant row costs a care write (issue 38,
 * sql/migrations/*_erasure_holds.sql): the care doors lock the participant row
 * FOR SHARE, and a trigger on each care table confirms it, so no write can
 * outrun an erasure. Two scratch databases on one server, migrated alike; on
 * the "off" one the hold is taken away again (the triggers dropped, the doors
 * as they were before). The same requests go to both, interleaved request by
 * request in alternating order (on, off, off, on, ...), so a noisy machine
 * slows both alike: read the ratios.
 *
 *   DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres npm run bench:erasure-holds -- --rounds 400
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
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

const MIGRATIONS = join(import.meta.dirname, "..", "..", "sql", "migrations");

/** A function's definition as an earlier migration created it. */
function definitionOf(file: string, name: string): string {
  const text = readFileSync(join(MIGRATIONS, file), "utf8");
  const start = text.indexOf(`create function ${name}(`);
  const end = text.indexOf("$$;", text.indexOf("as $$", start));
  if (start < 0 || end < 0) throw new Error(`${name} not found in ${file}`);
  return text.slice(start, end + 3).replace("create function", "create or replace function");
}

/** The schema as it was before the hold: no triggers, the doors without the participant's lock. */
const WITHOUT_HOLD = [
  "drop trigger participant_contacts_hold_live_participant on public.participant_contacts",
  "drop trigger participant_consents_hold_live_participant on public.participant_consents",
  "drop trigger participant_care_hold_live_participant on public.participant_care",
  definitionOf("20261125060100_care_records.sql", "private.care_gate"),
  definitionOf("20261125060100_care_records.sql", "private.care_consents_record"),
];

interface Side {
  name: string;
  send(method: string, path: string, body: unknown): Promise<Response> | Response;
  participants: string[];
}

async function side(adminUrl: string, admin: pg.Client, name: string, off: boolean) {
  const database = `camp_hold_bench_${name}_${randomBytes(4).toString("hex")}`;
  await admin.query(`create database ${database}`);
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  await migrate(url.toString());
  const db = new Database(url.toString(), { max: 4 });
  if (off) for (const statement of WITHOUT_HOLD) await db.asOwner((sql) => sql.query(statement));
  const tenant = await createTenant(db, "Bench", "admin@bench.test");
  await db.asOwner((sql) => sql.query("update public.api_keys set scopes = '{read,write,care}'"));
  const app = createApp({ db, config: loadConfig({ RATE_LIMIT_PER_MINUTE: "0" }) });
  const headers = { "X-API-Key": tenant.api_key, "Content-Type": "application/json" };
  const send = (method: string, path: string, body: unknown) =>
    app.request(`/api/v1${path}`, { method, headers, body: JSON.stringify(body) });
  const instance = (await (await send("POST", "/instances", { name: "Camp" })).json()) as { data: { id: string } };
  const participants = await db.asOwner(async (sql) =>
    (
      await sql.query<{ id: string }>(
        `insert into public.participants (tenant_id, instance_id, user_id, first_name, surname)
         select $1, $2, 'u' || g, 'First' || g, 'Last' || g from generate_series(1, 200) g returning id`,
        [tenant.tenant_id, instance.data.id],
      )
    ).map((r) => r.id),
  );
  const close = async () => {
    await db.close();
    await admin.query(`drop database if exists ${database} with (force)`);
  };
  return { side: { name, send, participants } satisfies Side, close };
}

interface Write {
  name: string;
  run(s: Side, i: number): Promise<Response> | Response;
}

const WRITES: Write[] = [
  {
    name: "PUT care record",
    run: (s, i) => s.send("PUT", `/participants/${s.participants[i % 200]}/care`, { care_notes: `n${i}` }),
  },
  {
    name: "PATCH care record",
    run: (s, i) => s.send("PATCH", `/participants/${s.participants[i % 200]}/care`, { dietary_requirements: `d${i}` }),
  },
  {
    name: "POST contact",
    run: (s, i) => s.send("POST", `/participants/${s.participants[i % 200]}/contacts`, { name: `Contact ${i}` }),
  },
  {
    name: "PUT consents",
    run: (s, i) =>
      s.send("PUT", `/participants/${s.participants[i % 200]}/consents`, {
        emergency_medical_treatment: i % 2 ? "granted" : "refused",
      }),
  },
];

async function timed(s: Side, write: Write, i: number): Promise<number> {
  const started = performance.now();
  const res = await write.run(s, i);
  await res.arrayBuffer();
  if (res.status >= 400) throw new Error(`${s.name} ${write.name}: ${res.status}`);
  return performance.now() - started;
}

async function main() {
  let adminUrl = process.env.DATABASE_URL;
  let stopEmbedded: (() => Promise<void>) | undefined;
  if (!adminUrl) {
    const embedded = await startEmbeddedPostgres(join(tmpdir(), `camp-hold-bench-${process.pid}`), { persistent: false });
    adminUrl = embedded.adminUrl;
    stopEmbedded = embedded.stop;
  }
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  const on = await side(adminUrl, admin, "on", false);
  const off = await side(adminUrl, admin, "off", true);
  try {
    // Warm both up, then measure.
    for (const write of WRITES) for (let i = 0; i < 20; i++) for (const s of [on.side, off.side]) await timed(s, write, i);
    out(`care writes with and without the erasure hold (${ROUNDS} rounds each, interleaved on/off, alternating order)`);
    out("| write | hold off, mean | hold on, mean | on/off (mean) | on/off (median) |");
    out("|---|---|---|---|---|");
    for (const write of WRITES) {
      const times = { on: [] as number[], off: [] as number[] };
      for (let i = 20; i < 20 + ROUNDS; i++) {
        const order = i % 2 ? [on.side, off.side] : [off.side, on.side];
        for (const s of order) times[s.name as "on" | "off"].push(await timed(s, write, i));
      }
      const mean = (list: number[]) => list.reduce((a, b) => a + b, 0) / list.length;
      const median = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)] as number;
      out(
        `| ${write.name} | ${mean(times.off).toFixed(2)} ms | ${mean(times.on).toFixed(2)} ms | x${(mean(times.on) / mean(times.off)).toFixed(3)} | x${(median(times.on) / median(times.off)).toFixed(3)} |`,
      );
    }
  } finally {
    await on.close();
    await off.close();
    await admin.end();
    await stopEmbedded?.();
  }
}

main().catch((error) => {
  process.stderr.write(`erasure-holds bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 1;
});
