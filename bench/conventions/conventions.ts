/**
 * What the client conventions cost per request: rate limiting (a counter
 * upsert folded into the key lookup), idempotency (the request in one
 * transaction with an advisory lock, a lookup and the stored answer) and
 * ETags (the row version read with the record; If-None-Match answered 304).
 *
 *   npm run bench:conventions                 # embedded Postgres, or the server of DATABASE_URL
 *   npm run bench:conventions -- --rounds 400
 *
 * Each pair of variants runs interleaved, request by request, in one process
 * against one scratch database, so a noisy machine slows both alike; the
 * figures to read are the differences and ratios, not the absolute times.
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
    const embedded = await startEmbeddedPostgres(join(tmpdir(), `camp-conventions-${process.pid}`), { persistent: false });
    adminUrl = embedded.adminUrl;
    stopEmbedded = embedded.stop;
  }
  const name = `camp_conventions_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const db = new Database(url.toString(), { max: 4 });
  try {
    await migrate(url.toString());
    const tenant = await createTenant(db, "Bench", "admin@bench.test");
    const key = tenant.api_key;
    const appWith = (env: Record<string, string>): App => createApp({ db, config: loadConfig(env) });
    const limited = appWith({ RATE_LIMIT_PER_MINUTE: "1000000" });
    const open = appWith({ RATE_LIMIT_PER_MINUTE: "0" });
    const headers = { "X-API-Key": key, "Content-Type": "application/json" };
    const instance = (await (
      await open.request("/api/v1/instances", { method: "POST", headers, body: JSON.stringify({ name: "Camp" }) })
    ).json()) as { data: { id: string } };
    const create =
      (app: App, extra: Record<string, string> = {}) =>
      (i: number) =>
        app.request("/api/v1/participants", {
          method: "POST",
          headers: { ...headers, ...extra },
          body: JSON.stringify({
            user_id: `${Object.keys(extra).length}-${i}-${randomBytes(3).toString("hex")}`,
            instance_id: instance.data.id,
            first_name: "A",
            surname: "B",
          }),
        });
    const made = (await (await create(open)(0)).json()) as { data: { id: string } };
    const one = `/api/v1/participants/${made.data.id}`;
    const etag = (await open.request(one, { headers })).headers.get("etag") as string;

    await compare("rate limiting (GET one participant)", [
      { name: "limits off", run: () => open.request(one, { headers }) },
      { name: "limits counted (never reached)", run: () => limited.request(one, { headers }) },
    ]);
    await compare("idempotency (POST a participant)", [
      { name: "no Idempotency-Key", run: create(open) },
      {
        name: "with an Idempotency-Key",
        run: (i) => create(open, { "Idempotency-Key": `k-${i}-${randomBytes(4).toString("hex")}` })(i),
      },
    ]);
    await compare("ETag (GET one participant)", [
      { name: "plain GET (ETag computed and sent)", run: () => open.request(one, { headers }) },
      { name: "If-None-Match matching: 304", run: () => open.request(one, { headers: { ...headers, "If-None-Match": etag } }) },
    ]);
  } finally {
    await db.close();
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.end();
    await stopEmbedded?.();
  }
}

main().catch((error) => {
  process.stderr.write(`conventions bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 1;
});
