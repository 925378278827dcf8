/**
 * npm run bench:edge [-- --duration 30 --rounds 3 --connections 16 --starts 7 --participants 2000]
 *
 * The Edge Function entry under Deno against the Node server, on one database:
 *   1. cold start: from spawning `deno run supabase/functions/api/index.ts` to
 *      its first 200 on /health (packages already in Deno's cache, as they are
 *      in a deployed bundle), several starts; each start with Deno's V8 code
 *      cache (filled by the first start, as on a machine that has run the entry
 *      before) is followed by one with `--no-code-cache` (every module compiled
 *      from source: what a platform that keeps no code cache would see);
 *   2. throughput of GET /api/v1/participants (a 50-row page of a tenant with
 *      `--participants` rows) with autocannon: both servers up, taking turns for
 *      `--rounds` rounds, same pool size and connections.
 * Targets: Deno at least 90% of Node's requests/s on the list (issue 19; issue 5 asked 80%); cold start under 300 ms (issue 5).
 * Needs DATABASE_URL (a server where it may create and drop a scratch database).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { loadavg } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import autocannon from "autocannon";
import pg from "pg";
import { Database } from "../../functions/db/database.ts";
import { createTenant } from "../../functions/tenants/provisioning.ts";
import { migrate } from "../../node/migrate.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const DENO = `${ROOT}node_modules/.bin/deno`;
const DENO_DIR = `${ROOT}node_modules/.cache/deno`;
const TARGETS = { denoShareOfNode: 0.9, coldStartMs: 300 };

const { values: args } = parseArgs({
  options: {
    duration: { type: "string", default: "30" },
    rounds: { type: "string", default: "3" },
    warmup: { type: "string", default: "2" },
    connections: { type: "string", default: "16" },
    starts: { type: "string", default: "7" },
    participants: { type: "string", default: "2000" },
    pool: { type: "string", default: "10" },
  },
});
const duration = Number(args.duration);
const connections = Number(args.connections);
const pool = String(Number(args.pool));

const say = (line: string) => process.stderr.write(`${line}\n`);

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

interface Server {
  origin: string;
  child: ChildProcess;
  /** Milliseconds from spawn to the first 200 on the health path. */
  startMs: number;
  /** Milliseconds from spawn to the server's "Listening on" line (modules loaded, app built; no database yet). */
  listenMs: number;
  /** CPU time the process used until then: the part of the start that a busy machine does not stretch. */
  startCpuMs: number;
}

/** User plus system CPU time of a process so far, from /proc (Linux; NaN elsewhere). */
async function cpuMs(pid: number | undefined): Promise<number> {
  try {
    const fields = (await readFile(`/proc/${pid}/stat`, "utf8")).split(") ")[1]?.split(" ") ?? [];
    // utime and stime are fields 14 and 15 of stat, in clock ticks (100 per second on Linux).
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return Number.NaN;
  }
}

/** Spawns a server and polls its health path until it answers 200 (bounded). */
async function startServer(command: string, argv: string[], env: NodeJS.ProcessEnv, healthPath: string): Promise<Server> {
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const started = performance.now();
  const child = spawn(command, argv, {
    cwd: ROOT,
    env: { RATE_LIMIT_PER_MINUTE: "1000000", ...process.env, ...env, PORT: String(port), HOST: "127.0.0.1" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  let listenMs = Number.NaN;
  const onOutput = (chunk: Buffer) => {
    output = (output + chunk).slice(-3000);
    if (Number.isNaN(listenMs) && /listening on/i.test(output)) listenMs = performance.now() - started;
  };
  child.stdout?.on("data", onOutput);
  child.stderr?.on("data", onOutput);
  const deadline = started + 120_000;
  while (performance.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${command} exited:\n${output}`);
    try {
      if ((await fetch(`${origin}${healthPath}`)).status === 200) {
        const startMs = performance.now() - started;
        return { origin, child, startMs, listenMs, startCpuMs: await cpuMs(child.pid) };
      }
    } catch {
      // Not listening yet.
    }
    await new Promise((r) => setTimeout(r, 2));
  }
  child.kill("SIGKILL");
  throw new Error(`${command} did not answer ${healthPath} in time:\n${output}`);
}

async function stop(server: Server): Promise<void> {
  if (server.child.exitCode !== null) return;
  await new Promise<void>((done) => {
    server.child.once("exit", () => done());
    server.child.kill("SIGTERM");
  });
}

const denoServer = (databaseUrl: string, flags: string[] = []) =>
  startServer(
    DENO,
    [
      "run",
      "--allow-net",
      "--allow-env",
      "--allow-read",
      "--node-modules-dir=none",
      ...flags,
      "--config",
      "supabase/functions/api/deno.json",
      "supabase/functions/api/index.ts",
    ],
    { DATABASE_URL: databaseUrl, DB_POOL_SIZE: pool, DENO_DIR, NO_COLOR: "1" },
    "/api/health",
  );

const nodeServer = (databaseUrl: string) =>
  startServer(`${ROOT}node_modules/.bin/tsx`, ["node/server.ts"], { DATABASE_URL: databaseUrl, DB_POOL_SIZE: pool }, "/health");

async function load(url: string, key: string, seconds: number) {
  const result = await autocannon({ url, connections, duration: seconds, headers: { "x-api-key": key } });
  return {
    requestsPerSecond: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
  };
}

type LoadResult = Awaited<ReturnType<typeof load>>;

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;

/** Mean requests/s over the rounds, median latencies, summed failures. */
function summarise(results: LoadResult[]): LoadResult {
  return {
    requestsPerSecond: results.reduce((sum, r) => sum + r.requestsPerSecond, 0) / results.length,
    p50Ms: median(results.map((r) => r.p50Ms)),
    p99Ms: median(results.map((r) => r.p99Ms)),
    non2xx: results.reduce((sum, r) => sum + r.non2xx, 0),
    errors: results.reduce((sum, r) => sum + r.errors, 0),
  };
}

/** A scratch database with one tenant, one instance and `count` participants in it. */
async function seed(serverUrl: string, count: number) {
  const name = `camp_bench_edge_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  await migrate(url.toString());
  const db = new Database(url.toString(), { max: 2 });
  const tenant = await createTenant(db, "Bench tenant", "bench@example.test");
  await db.asOwner(async (sql) => {
    const instance = await sql.one<{ id: string }>(
      "insert into public.instances (tenant_id, name, status) values ($1, 'Bench camp', 'active') returning id",
      [tenant.tenant_id],
    );
    await sql.query(
      `insert into public.participants (tenant_id, instance_id, user_id, first_name, surname)
       select $1, $2, 'bench-' || n, 'First' || n, 'Surname' || n from generate_series(1, $3) as n`,
      [tenant.tenant_id, instance?.id, count],
    );
  });
  await db.close();
  return { name, url: url.toString(), key: tenant.api_key };
}

async function main() {
  const serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) throw new Error("set DATABASE_URL to a Postgres server where a scratch database may be created");
  const loadAtStart = loadavg();
  const data = await seed(serverUrl, Number(args.participants));
  say(`seeded ${args.participants} participants in ${data.name}`);
  try {
    // The first start fills Deno's package cache (and its V8 code cache); it is not a cold start of a deployed function.
    await stop(await denoServer(data.url));
    const starts: number[] = [];
    const startCpu: number[] = [];
    const listens: number[] = [];
    const uncached: number[] = [];
    const uncachedCpu: number[] = [];
    for (let i = 0; i < Number(args.starts); i++) {
      const server = await denoServer(data.url);
      starts.push(server.startMs);
      startCpu.push(server.startCpuMs);
      listens.push(server.listenMs);
      await stop(server);
      const compiled = await denoServer(data.url, ["--no-code-cache"]);
      uncached.push(compiled.startMs);
      uncachedCpu.push(compiled.startCpuMs);
      await stop(compiled);
    }
    starts.sort((a, b) => a - b);
    const coldStart = {
      medianMs: starts[Math.floor(starts.length / 2)] ?? Number.NaN,
      minMs: starts[0] ?? Number.NaN,
      maxMs: starts[starts.length - 1] ?? Number.NaN,
      cpuMedianMs: median(startCpu),
      listenMedianMs: median(listens),
      noCodeCache: { medianMs: median(uncached), cpuMedianMs: median(uncachedCpu), samplesMs: uncached.map(Math.round) },
    };
    say(
      `Deno cold start: median ${coldStart.medianMs.toFixed(0)} ms (min ${coldStart.minMs.toFixed(0)}, max ${coldStart.maxMs.toFixed(0)}), CPU ${coldStart.cpuMedianMs.toFixed(0)} ms; ` +
        `without code cache: median ${coldStart.noCodeCache.medianMs.toFixed(0)} ms, CPU ${coldStart.noCodeCache.cpuMedianMs.toFixed(0)} ms`,
    );

    // Both servers run side by side and take turns under load, round after round, so a
    // change in the machine's load during the run falls on both alike.
    const servers = { node: await nodeServer(data.url), deno: await denoServer(data.url) };
    const paths = { node: "/api/v1/participants?limit=50", deno: "/api/api/v1/participants?limit=50" };
    const rounds: Record<"node" | "deno", Array<Awaited<ReturnType<typeof load>>>> = { node: [], deno: [] };
    try {
      for (const label of ["node", "deno"] as const) {
        await load(`${servers[label].origin}${paths[label]}`, data.key, Number(args.warmup));
      }
      for (let round = 0; round < Number(args.rounds); round++) {
        for (const label of ["node", "deno"] as const) {
          const result = await load(`${servers[label].origin}${paths[label]}`, data.key, duration / Number(args.rounds));
          rounds[label].push(result);
          say(
            `round ${round + 1} ${label}: ${result.requestsPerSecond.toFixed(0)} req/s, p50 ${result.p50Ms} ms, p99 ${result.p99Ms} ms`,
          );
        }
      }
    } finally {
      await stop(servers.node);
      await stop(servers.deno);
    }
    const node = summarise(rounds.node);
    const deno = summarise(rounds.deno);
    const share = deno.requestsPerSecond / node.requestsPerSecond;
    const report = {
      at: new Date().toISOString(),
      settings: {
        duration,
        rounds: Number(args.rounds),
        connections,
        pool: Number(pool),
        participants: Number(args.participants),
        page: 50,
      },
      loadAverage: { start: loadAtStart, end: loadavg() },
      coldStart: { ...coldStart, samplesMs: starts.map((s) => Math.round(s)) },
      throughput: { node, deno, denoShareOfNode: share },
      targets: TARGETS,
      met: { throughput: share >= TARGETS.denoShareOfNode, coldStart: coldStart.medianMs < TARGETS.coldStartMs },
    };
    process.stdout.write(
      [
        "",
        "| measure | Node | Deno | target | met |",
        "|---|---|---|---|---|",
        `| GET /api/v1/participants req/s | ${node.requestsPerSecond.toFixed(0)} | ${deno.requestsPerSecond.toFixed(0)} (${(share * 100).toFixed(0)}%) | Deno ≥ ${(TARGETS.denoShareOfNode * 100).toFixed(0)}% of Node | ${report.met.throughput ? "yes" : "NO"} |`,
        `| latency p50 / p99 ms | ${node.p50Ms} / ${node.p99Ms} | ${deno.p50Ms} / ${deno.p99Ms} | | |`,
        `| Deno cold start ms (median of ${starts.length}) | | ${coldStart.medianMs.toFixed(0)} | < 300 | ${report.met.coldStart ? "yes" : "NO"} |`,
        `| of which to "Listening on" ms (median) | | ${coldStart.listenMedianMs.toFixed(0)} | | |`,
        `| Deno cold start CPU ms (median) | | ${coldStart.cpuMedianMs.toFixed(0)} | | |`,
        `| Deno cold start without V8 code cache ms (median; CPU) | | ${coldStart.noCodeCache.medianMs.toFixed(0)} (CPU ${coldStart.noCodeCache.cpuMedianMs.toFixed(0)}) | | |`,
        `| load average at start / end | ${loadAtStart[0]?.toFixed(1)} | ${report.loadAverage.end[0]?.toFixed(1)} | | |`,
        "",
      ].join("\n"),
    );
    const dir = join(ROOT, "bench", "results");
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, `edge-vs-node-${Date.now()}.json`), `${JSON.stringify(report, null, 2)}\n`);
  } finally {
    const admin = new pg.Client({ connectionString: serverUrl });
    await admin.connect();
    await admin.query(`drop database if exists ${data.name} with (force)`);
    await admin.end();
  }
}

main().catch((error) => {
  say(`bench:edge failed: ${(error as Error).message}`);
  process.exit(1);
});
