/**
 * What a keyed POST costs here against another checkout of the service, side
 * by side in one process: each side its own scratch database migrated by its
 * own migrations, requests interleaved one by one, so a noisy machine slows
 * both alike. For a change of the idempotency path (bench/README.md,
 * "Idempotency: before and after").
 *
 *   git -C <repo> archive <commit> | tar -x -C /tmp/base && ln -s $PWD/node_modules /tmp/base/
 *   npm run bench:idempotency -- --base /tmp/base [--rounds 400]
 *
 * Figures to read: the ratios, not the absolute times.
 */
import { randomBytes } from "node:crypto";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import pg from "pg";

const { values } = parseArgs({ options: { base: { type: "string" }, rounds: { type: "string", default: "400" } } });
if (!values.base) throw new Error("--base <directory of the other checkout> is required");
const ROUNDS = Number(values.rounds);
const out = (line = "") => process.stdout.write(`${line}\n`);

interface Side {
  name: string;
  request(path: string, init: RequestInit): Promise<Response> | Response;
  close(): Promise<void>;
  headers: Record<string, string>;
  instanceId: string;
}

/** The service of the checkout at `root`, on a fresh database of the server at `adminUrl`. */
async function sideOf(name: string, root: string, adminUrl: string): Promise<Side> {
  const { createApp } = await import(`${root}/functions/app.ts`);
  const { loadConfig } = await import(`${root}/functions/config.ts`);
  const { Database } = await import(`${root}/functions/db/database.ts`);
  const { createTenant } = await import(`${root}/functions/tenants/provisioning.ts`);
  const { migrate } = await import(`${root}/node/migrate.ts`);
  const database = `camp_idem_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${database}`);
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  await migrate(url.toString());
  const db = new Database(url.toString(), { max: 4 });
  const tenant = await createTenant(db, "Bench", "admin@bench.test");
  const app = createApp({ db, config: loadConfig({ RATE_LIMIT_PER_MINUTE: "0" }) });
  const headers = { "X-API-Key": tenant.api_key, "Content-Type": "application/json" };
  const made = await app.request("/api/v1/instances", { method: "POST", headers, body: JSON.stringify({ name: "Camp" }) });
  const instanceId = ((await made.json()) as { data: { id: string } }).data.id;
  return {
    name,
    headers,
    instanceId,
    request: (path, init) => app.request(path, init),
    async close() {
      await db.close();
      await admin.query(`drop database if exists ${database} with (force)`);
      await admin.end();
    },
  };
}

async function compare(title: string, sides: Side[], run: (side: Side, i: number) => Promise<Response> | Response) {
  const times = sides.map(() => [] as number[]);
  for (let i = 0; i < ROUNDS; i++) {
    for (const [n, side] of sides.entries()) {
      const started = performance.now();
      const res = await run(side, i);
      await res.arrayBuffer();
      if (res.status >= 400) throw new Error(`${side.name}: ${res.status}`);
      (times[n] as number[]).push(performance.now() - started);
    }
  }
  const stats = times.map((list) => {
    const sorted = [...list].sort((a, b) => a - b);
    return { mean: list.reduce((a, b) => a + b, 0) / list.length, p50: sorted[Math.floor(sorted.length / 2)] as number };
  });
  out(`\n${title} (${ROUNDS} rounds, interleaved)`);
  const base = stats[0] as { mean: number; p50: number };
  for (const [n, side] of sides.entries()) {
    const s = stats[n] as { mean: number; p50: number };
    const ratio = n === 0 ? "" : `  x${(s.mean / base.mean).toFixed(2)} mean, x${(s.p50 / base.p50).toFixed(2)} p50`;
    out(`  ${side.name.padEnd(12)} mean ${s.mean.toFixed(3)} ms  p50 ${s.p50.toFixed(3)} ms${ratio}`);
  }
}

async function main() {
  const adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) throw new Error("set DATABASE_URL to a Postgres server (scratch databases are made and dropped there)");
  const here = resolve(new URL("../..", import.meta.url).pathname);
  const sides = [await sideOf("base", resolve(values.base as string), adminUrl), await sideOf("this", here, adminUrl)];
  const body = (side: Side, tag: string) =>
    JSON.stringify({
      user_id: `${tag}-${randomBytes(4).toString("hex")}`,
      instance_id: side.instanceId,
      first_name: "A",
      surname: "B",
    });
  try {
    await compare("warm-up: keyed create", sides, (s, i) =>
      s.request("/api/v1/participants", {
        method: "POST",
        headers: { ...s.headers, "Idempotency-Key": `w-${i}` },
        body: body(s, "w"),
      }),
    );
    await compare("create, no Idempotency-Key", sides, (s) =>
      s.request("/api/v1/participants", { method: "POST", headers: s.headers, body: body(s, "n") }),
    );
    await compare("create with a new Idempotency-Key (lookup, write, stored answer)", sides, (s, i) =>
      s.request("/api/v1/participants", {
        method: "POST",
        headers: { ...s.headers, "Idempotency-Key": `k-${i}` },
        body: body(s, "k"),
      }),
    );
    // The same key and body again: the stored answer, after the rights check.
    const replayed = sides.map((s) => ({ side: s, body: body(s, "r") }));
    for (const { side, body: b } of replayed) {
      await side.request("/api/v1/participants", {
        method: "POST",
        headers: { ...side.headers, "Idempotency-Key": "replay" },
        body: b,
      });
    }
    await compare("replay of a stored create", sides, (s) => {
      const b = replayed.find((r) => r.side === s)?.body as string;
      return s.request("/api/v1/participants", {
        method: "POST",
        headers: { ...s.headers, "Idempotency-Key": "replay" },
        body: b,
      });
    });
  } finally {
    for (const side of sides) await side.close();
  }
}

main().catch((error) => {
  process.stderr.write(`idempotency bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 1;
});
