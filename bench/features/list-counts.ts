/**
 * What keeping the list totals costs a write: the same creates through the
 * real app on two scratch databases from the same migrations, one with the
 * counting triggers of *_list_counts.sql and one with them disabled,
 * requests alternating between the two: a single create and a bulk create
 * of 1,000 (POST /participants/bulk), both into one instance.
 *
 *   npm run bench:list-counts                      # embedded Postgres, or the server of DATABASE_URL
 *   npm run bench:list-counts -- --rounds 400 --bulk-rounds 20
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
import { alternate } from "../harness/alternating.ts";

const { values } = parseArgs({
  options: { rounds: { type: "string", default: "300" }, "bulk-rounds": { type: "string", default: "16" } },
});
const ROUNDS = Number(values.rounds);
const BULK_ROUNDS = Number(values["bulk-rounds"]);
const BULK = 1_000;

/** The participants' counting triggers: disabled on the "off" side. */
const COUNT_TRIGGERS = [
  "participants_count_insert",
  "participants_count_delete",
  "participants_count_move",
  "participants_count_truncate",
];

interface Side {
  name: string;
  request(path: string, body: unknown): Promise<Response> | Response;
  instanceId: string;
  close(): Promise<void>;
}

async function side(adminUrl: string, admin: pg.Client, name: string, counted: boolean): Promise<Side> {
  const database = `camp_bench_list_counts_${randomBytes(4).toString("hex")}`;
  await admin.query(`create database ${database}`);
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  await migrate(url.toString());
  const db = new Database(url.toString(), { max: 4 });
  if (!counted) {
    for (const trigger of COUNT_TRIGGERS) await db.query(`alter table public.participants disable trigger ${trigger}`);
  }
  const tenant = await createTenant(db, "Bench", "admin@bench.test");
  const app = createApp({ db, config: loadConfig({ RATE_LIMIT_PER_MINUTE: "0", LOG_LEVEL: "error" }) });
  const headers = { "X-API-Key": tenant.api_key, "Content-Type": "application/json" };
  const request = (path: string, body: unknown) => app.request(path, { method: "POST", headers, body: JSON.stringify(body) });
  const made = await request("/api/v1/instances", { name: "Camp" });
  const instanceId = ((await made.json()) as { data: { id: string } }).data.id;
  return {
    name,
    request,
    instanceId,
    async close() {
      await db.close();
      await admin.query(`drop database if exists ${database} with (force)`);
    },
  };
}

async function main() {
  let adminUrl = process.env.DATABASE_URL;
  let stopEmbedded: (() => Promise<void>) | undefined;
  if (!adminUrl) {
    const embedded = await startEmbeddedPostgres(join(tmpdir(), `camp-bench-list-counts-${process.pid}`), { persistent: false });
    adminUrl = embedded.adminUrl;
    stopEmbedded = embedded.stop;
  }
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  const sides: [Side, Side] = [await side(adminUrl, admin, "counts off", false), await side(adminUrl, admin, "counts on", true)];
  try {
    const person = (s: Side, userId: string) => ({
      user_id: userId,
      instance_id: s.instanceId,
      first_name: "Ada",
      surname: "Lovelace",
    });
    await alternate("warm-up", sides, (s, i) => s.request("/api/v1/participants", person(s, `w-${i}`)), 50);
    await alternate(
      "create one participant (POST /participants)",
      sides,
      (s, i) => s.request("/api/v1/participants", person(s, `u-${i}`)),
      ROUNDS,
    );
    await alternate(
      `bulk create of ${BULK.toLocaleString("en")} participants (POST /participants/bulk)`,
      sides,
      (s, i) =>
        s.request("/api/v1/participants/bulk", {
          participants: Array.from({ length: BULK }, (_, j) => person(s, `b-${i}-${j}`)),
        }),
      BULK_ROUNDS,
    );
  } finally {
    for (const s of sides) await s.close();
    await admin.end();
    await stopEmbedded?.();
  }
}

main().catch((error) => {
  process.stderr.write(`list-counts bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 1;
});
