/**
 * What an event costs a write: the same writes through the real app on two
 * scratch databases from the same migrations, one with the trigger that
 * derives events from the audit trail (audit_events_derive_events) and one
 * with it disabled, requests alternating between the two.
 *
 *   npm run bench:events                     # embedded Postgres, or the server of DATABASE_URL
 *   npm run bench:events -- --rounds 600
 *
 * Read the ratios, not the absolute times (a busy 2-core machine).
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

const { values } = parseArgs({ options: { rounds: { type: "string", default: "400" } } });
const ROUNDS = Number(values.rounds);
const out = (line = "") => process.stdout.write(`${line}\n`);

interface Side {
  name: string;
  request(path: string, init: RequestInit): Promise<Response> | Response;
  key: string;
  instanceId: string;
  participantId: string;
}

async function side(
  adminUrl: string,
  admin: pg.Client,
  name: string,
  events: boolean,
): Promise<Side & { close(): Promise<void> }> {
  const database = `camp_bench_events_${randomBytes(4).toString("hex")}`;
  await admin.query(`create database ${database}`);
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  await migrate(url.toString());
  const db = new Database(url.toString(), { max: 4 });
  if (!events) await db.query("alter table public.audit_events disable trigger audit_events_derive_events");
  const tenant = await createTenant(db, "Bench", "admin@bench.test");
  const app = createApp({ db, config: loadConfig({ RATE_LIMIT_PER_MINUTE: "0", LOG_LEVEL: "error" }) });
  const headers = { "X-API-Key": tenant.api_key, "Content-Type": "application/json" };
  const post = async (path: string, body: unknown) =>
    (
      (await (await app.request(path, { method: "POST", headers, body: JSON.stringify(body) })).json()) as {
        data: { id: string };
      }
    ).data;
  const instanceId = (await post("/api/v1/instances", { name: "Camp" })).id;
  const participantId = (
    await post("/api/v1/participants", { user_id: "p0", instance_id: instanceId, first_name: "A", surname: "B" })
  ).id;
  return {
    name,
    request: (path, init) => app.request(path, { ...init, headers: { ...headers, ...(init.headers as Record<string, string>) } }),
    key: tenant.api_key,
    instanceId,
    participantId,
    async close() {
      await db.close();
      await admin.query(`drop database if exists ${database} with (force)`);
    },
  };
}

async function compare(title: string, sides: Side[], run: (s: Side, i: number) => Promise<Response> | Response, rounds = ROUNDS) {
  const times = sides.map(() => [] as number[]);
  for (let i = 0; i < rounds; i++) {
    // Alternate which side goes first, so neither always follows the other's write.
    const order = i % 2 === 0 ? [0, 1] : [1, 0];
    for (const n of order) {
      const s = sides[n] as Side;
      const started = performance.now();
      const res = await run(s, i);
      await res.arrayBuffer();
      if (res.status >= 400) throw new Error(`${s.name}: ${res.status}`);
      (times[n] as number[]).push(performance.now() - started);
    }
  }
  const stat = (list: number[]) => {
    const sorted = [...list].sort((a, b) => a - b);
    return { mean: list.reduce((a, b) => a + b, 0) / list.length, p50: sorted[Math.floor(sorted.length / 2)] as number };
  };
  const [off, on] = times.map(stat) as [{ mean: number; p50: number }, { mean: number; p50: number }];
  out(`\n${title} (${rounds} rounds, alternating)`);
  out(`  events off  mean ${off.mean.toFixed(3)} ms  p50 ${off.p50.toFixed(3)} ms`);
  out(
    `  events on   mean ${on.mean.toFixed(3)} ms  p50 ${on.p50.toFixed(3)} ms  ` +
      `(mean x${(on.mean / off.mean).toFixed(3)}, p50 x${(on.p50 / off.p50).toFixed(3)})`,
  );
}

async function main() {
  let adminUrl = process.env.DATABASE_URL;
  let stopEmbedded: (() => Promise<void>) | undefined;
  if (!adminUrl) {
    const embedded = await startEmbeddedPostgres(join(tmpdir(), `camp-bench-events-${process.pid}`), { persistent: false });
    adminUrl = embedded.adminUrl;
    stopEmbedded = embedded.stop;
  }
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  const off = await side(adminUrl, admin, "events off", false);
  const on = await side(adminUrl, admin, "events on", true);
  try {
    const sides = [off, on];
    const body = (s: Side, i: number, extra = "") =>
      JSON.stringify({ user_id: `u${extra}-${i}`, instance_id: s.instanceId, first_name: "Ada", surname: "Lovelace" });
    // Warm both sides' connections and plans first.
    await compare("warm-up", sides, (s, i) => s.request("/api/v1/participants", { method: "POST", body: body(s, i, "w") }), 50);
    await compare("create one participant (POST /participants)", sides, (s, i) =>
      s.request("/api/v1/participants", { method: "POST", body: body(s, i) }),
    );
    await compare("update one participant (PATCH /participants/{id})", sides, (s, i) =>
      s.request(`/api/v1/participants/${s.participantId}`, { method: "PATCH", body: JSON.stringify({ surname: `S${i}` }) }),
    );
    await compare(
      "bulk create of 100 participants (POST /participants/bulk)",
      sides,
      (s, i) =>
        s.request("/api/v1/participants/bulk", {
          method: "POST",
          body: JSON.stringify({
            participants: Array.from({ length: 100 }, (_, j) => ({
              user_id: `b-${i}-${j}`,
              instance_id: s.instanceId,
              first_name: "Bulk",
              surname: "Row",
            })),
          }),
        }),
      Math.max(20, Math.floor(ROUNDS / 10)),
    );
  } finally {
    await off.close();
    await on.close();
    await admin.end();
    await stopEmbedded?.();
  }
}

main().catch((error) => {
  process.stderr.write(`events bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 1;
});
