/**
 * What a list feature costs a write: the same creates through the real app on
 * two scratch databases from the same migrations, one with the feature and
 * one without, requests alternating between the two: a single create and a
 * bulk create of 1,000 (POST /participants/bulk), both into one instance.
 * The feature (--feature) is the kept totals (`counts`: the counting
 * triggers of *_list_counts.sql) or the index of letters and pairs for short
 * searches (`short-search`: *_short_search.sql's index).
 *
 *   npm run bench:list-counts                      # embedded Postgres, or the server of DATABASE_URL
 *   npm run bench:list-counts -- --rounds 400 --bulk-rounds 20
 *   npm run bench:list-counts -- --feature short-search
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
  options: {
    rounds: { type: "string", default: "300" },
    "bulk-rounds": { type: "string", default: "16" },
    feature: { type: "string", default: "counts" },
  },
});
const FEATURE = values.feature as string;
if (FEATURE !== "counts" && FEATURE !== "short-search") throw new Error("--feature is counts or short-search");
const ROUNDS = Number(values.rounds);
const BULK_ROUNDS = Number(values["bulk-rounds"]);
const BULK = 1_000;

/** What the "off" side lacks, per feature. */
const WITHOUT: Record<string, string[]> = {
  counts: [
    "participants_count_insert",
    "participants_count_delete",
    "participants_count_move",
    "participants_count_truncate",
  ].map((trigger) => `alter table public.participants disable trigger ${trigger}`),
  "short-search": ["drop index public.participants_search_grams"],
};

interface Side {
  name: string;
  request(path: string, body: unknown): Promise<Response> | Response;
  instanceId: string;
  close(): Promise<void>;
}

async function side(adminUrl: string, admin: pg.Client, name: string, featured: boolean): Promise<Side> {
  const database = `camp_bench_list_counts_${randomBytes(4).toString("hex")}`;
  await admin.query(`create database ${database}`);
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  await migrate(url.toString());
  const db = new Database(url.toString(), { max: 4 });
  if (!featured) for (const statement of WITHOUT[FEATURE] as string[]) await db.query(statement);
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
  const sides: [Side, Side] = [
    await side(adminUrl, admin, `${FEATURE} off`, false),
    await side(adminUrl, admin, `${FEATURE} on`, true),
  ];
  try {
    // Names that differ, as an index of their letters sees them.
    const FIRST = ["Ada", "Grace", "Katherine", "Dorothy", "Hedy", "Radia", "Frances", "Barbara"];
    const SURNAME = ["Lovelace", "Hopper", "Johnson", "Vaughan", "Lamarr", "Perlman", "Allen", "Liskov", "Østergård"];
    const person = (s: Side, userId: string) => {
      const n = userId.length + Number(userId.replace(/\D/g, "").slice(-4) || 0);
      return {
        user_id: userId,
        instance_id: s.instanceId,
        first_name: FIRST[n % FIRST.length],
        surname: `${SURNAME[n % SURNAME.length]}-${userId}`,
      };
    };
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
