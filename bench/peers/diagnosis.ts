import { execFileSync } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import pg from "pg";
import { say } from "../../node/runtime.ts";
import { runApi, sendOne } from "../harness/api.ts";
import { cpuPerRequest, sampleCpu } from "../harness/cpu.ts";
import {
  countParticipants,
  createSeeded,
  databaseName,
  dropDatabase,
  removeBenchWrites,
  scaleDatabase,
  sibling,
  vacuumParticipants,
} from "../harness/databases.ts";
import { loadFixtures } from "../harness/fixtures.ts";
import { type RunResult, renderTable, type ScaleResult, type ScenarioResult, TARGETS } from "../harness/report.ts";
import { SCENARIOS, type Scenario, type Vars, varsSource, WRITE_PREFIX } from "../harness/scenarios.ts";
import { RESULTS_DIR, readSeedFile, type SeedFile } from "../harness/seed-file.ts";
import { BenchServer } from "../harness/server-process.ts";
import { encodeVars, FLOOR_VARS_HEADER } from "../harness/server-protocol.ts";
import { runBest } from "./best.ts";
import { compile, runRaw } from "./raw.ts";

/**
 * npm run bench:diagnosis [-- --duration 20 --connections 32 --scenarios list,get,write --skip-scale --smoke
 *                  --out DIR --profile DIR]
 * Load against the Node server on DATABASE_URL's (seeded) database, the Node
 * floor and the raw baseline of the same statements, and the per-instance list at 10,000 vs
 * 1,000,000 participants. See bench/README.md.
 */
const { values: args } = parseArgs({
  options: {
    duration: { type: "string" },
    connections: { type: "string", default: "32" },
    warmup: { type: "string" },
    scenarios: { type: "string", default: SCENARIOS.map((s) => s.name).join(",") },
    "skip-scale": { type: "boolean", default: false },
    smoke: { type: "boolean", default: false },
    profile: { type: "string" },
    out: { type: "string", default: RESULTS_DIR },
  },
});

const smoke = args.smoke ?? false;
const seconds = Number(args.duration ?? (smoke ? 0.5 : 20));
const warmup = Number(args.warmup ?? (smoke ? 0 : 3));
const connections = smoke ? 4 : Number(args.connections);
const poolSize = Number(process.env.DB_POOL_SIZE || 10);
const SCALES = [10_000, 1_000_000];

function commit(): string {
  try {
    const head = execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
    const dirty = execFileSync("git", ["status", "--porcelain", "--untracked-files=no"], { encoding: "utf8" }).trim();
    return dirty ? `${head}+changes` : head;
  } catch {
    return "unknown";
  }
}

interface Harness {
  server: BenchServer;
  floor: BenchServer;
  /** The raw baseline's pool, sized like the server's. */
  pool: pg.Pool;
  url: string;
  vars: () => Vars;
}

/**
 * One scenario: capture one request's statements, load the API, then the
 * floor (a bare node:http server replaying the statements), then replay the
 * statements raw.
 */
async function measureScenario(h: Harness, scenario: Scenario): Promise<ScenarioResult> {
  say(`${scenario.name}: API ${seconds} s…`);
  const run = { url: h.server.url, scenario, vars: h.vars, connections };
  if (warmup > 0) await runApi({ ...run, seconds: warmup });
  // Captured with the server quiet: a request waiting for a pooled client
  // would otherwise run on in the context of the request that released it.
  await h.server.settleQueryCount();
  // The same request twice just before, by the captured caller (a write with
  // a user id of its own): the pool hands the captured one the connection the
  // last used, where its statements are prepared, and the caller's rate lease
  // is in hand, as both are for nearly every request under load; a capture
  // that took a lease would have the replay repeat it.
  const first = h.vars();
  for (let i = 0; i < 2; i++) await sendOne(h.server.url, scenario, { ...first, writeUserId: h.vars().writeUserId });
  const statements = await h.server.capture(() => sendOne(h.server.url, scenario, first));
  await h.server.settleQueryCount();
  const apiCpu = await sampleCpu(h.url, h.server.pid);
  const api = await runApi({ ...run, seconds });
  const underLoad = (await h.server.settleQueryCount()) / Math.max(1, api.sent);
  const apiCpuPerRequest = await cpuPerRequest(h.url, apiCpu, h.server.pid, api.requests);

  say(`${scenario.name}: floor ${seconds} s…`);
  const templates = compile(statements, first);
  await h.floor.serve(templates, scenario.status);
  const floorRun = { ...run, url: h.floor.url, headers: (v: Vars) => ({ [FLOOR_VARS_HEADER]: encodeVars(v) }) };
  if (warmup > 0) await runApi({ ...floorRun, seconds: warmup });
  const floorCpu = await sampleCpu(h.url, h.floor.pid);
  const floor = await runApi({ ...floorRun, seconds });
  const floorCpuPerRequest = await cpuPerRequest(h.url, floorCpu, h.floor.pid, floor.requests);

  say(`${scenario.name}: raw ${seconds} s…`);
  const replay = { pool: h.pool, templates, vars: h.vars, connections };
  if (warmup > 0) await runRaw({ ...replay, seconds: warmup });
  const rawCpu = await sampleCpu(h.url, undefined);
  const raw = await runRaw({ ...replay, seconds });
  const rawCpuPerRequest = await cpuPerRequest(h.url, rawCpu, undefined, raw.requests);

  say(`${scenario.name}: best ${seconds} s…`);
  if (warmup > 0) await runBest({ ...replay, seconds: warmup });
  const bestCpu = await sampleCpu(h.url, undefined);
  const best = await runBest({ ...replay, seconds });
  const bestCpuPerRequest = await cpuPerRequest(h.url, bestCpu, undefined, best.requests);
  return {
    name: scenario.name,
    title: scenario.title,
    api: { ...api, round_trips: statements.length, round_trips_under_load: underLoad, cpu: apiCpuPerRequest },
    floor: { ...floor, round_trips: statements.length, cpu: floorCpuPerRequest },
    raw: { ...raw, round_trips: statements.length, cpu: rawCpuPerRequest },
    best: { ...best, round_trips: 1, cpu: bestCpuPerRequest },
    ratio: api.rps / raw.rps,
    target_ratio: TARGETS[scenario.name],
    statements: statements.map((s) => s.text.replace(/\s+/g, " ")),
    load_average: loadavg(),
  };
}

/** API and raw figures for each scenario on one database. */
async function measure(url: string, seed: SeedFile, runTag: string): Promise<ScenarioResult[]> {
  await vacuumParticipants(url);
  const vars = varsSource(await loadFixtures(url, seed), runTag);
  const server = await BenchServer.start(url, poolSize, { profileDir: args.profile });
  const floor = await BenchServer.start(url, poolSize, { script: "bench/peers/floor-server.ts" });
  const pool = new pg.Pool({ connectionString: url, max: poolSize });
  pool.on("error", () => {});
  const results: ScenarioResult[] = [];
  try {
    for (const scenario of SCENARIOS.filter((s) => args.scenarios?.split(",").includes(s.name))) {
      results.push(await measureScenario({ server, floor, pool, url, vars }, scenario));
    }
  } finally {
    await pool.end();
    await floor.stop();
    await server.stop();
    await removeBenchWrites(url, WRITE_PREFIX);
  }
  return results;
}

/** The list scenario alone, on databases of two sizes. */
async function measureScale(serverUrl: string, runTag: string): Promise<ScaleResult[]> {
  const list = SCENARIOS.find((s) => s.name === "list");
  if (!list) return [];
  const results: ScaleResult[] = [];
  for (const participants of SCALES) {
    const url = await scaleDatabase(serverUrl, participants, say);
    const seed = (await readSeedFile(url)) as SeedFile;
    const vars = varsSource(await loadFixtures(url, seed), runTag);
    const server = await BenchServer.start(url, poolSize);
    try {
      say(`scale ${participants.toLocaleString("en")}: list ${seconds} s…`);
      const run = { url: server.url, scenario: list, vars, connections };
      if (warmup > 0) await runApi({ ...run, seconds: warmup });
      results.push({ participants, database: databaseName(url), list: await runApi({ ...run, seconds }) });
    } finally {
      await server.stop();
    }
  }
  return results;
}

async function main() {
  const serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) throw new Error("set DATABASE_URL (a scratch database; `npm run bench:seed` fills it)");
  const runTag = Date.now().toString(36);
  let url = serverUrl;
  let seed = await readSeedFile(url);
  if (smoke) {
    url = (await createSeededSmoke(serverUrl, runTag)).url;
    seed = await readSeedFile(url);
  } else if (!seed) {
    throw new Error(`no seed file for ${databaseName(url)}: run \`npm run bench:seed\` with the same DATABASE_URL first`);
  }
  const result: RunResult = {
    date: new Date().toISOString(),
    commit: commit(),
    smoke,
    cpus: cpus().length,
    connections,
    seconds,
    pool_size: poolSize,
    database_participants: await countParticipants(url),
    load_average_before: loadavg(),
    load_average_after: [],
    scenarios: [],
    scale: [],
  };
  try {
    result.scenarios = await measure(url, seed as SeedFile, runTag);
  } finally {
    if (smoke) await dropDatabase(serverUrl, databaseName(url));
  }
  if (!smoke && !args["skip-scale"]) {
    result.scale = await measureScale(serverUrl, runTag);
    const [small, large] = [result.scale[0], result.scale.at(-1)];
    if (small && large && small !== large) result.scale_ratio = large.list.p50_ms / small.list.p50_ms;
  }
  result.load_average_after = loadavg();
  process.stdout.write(`\n${renderTable(result)}\n`);
  await mkdir(args.out as string, { recursive: true });
  const file = join(args.out as string, `${result.date.replace(/[:.]/g, "-")}${smoke ? "-smoke" : ""}.json`);
  await writeFile(file, `${JSON.stringify(result, null, 2)}\n`);
  say(`figures written to ${file}`);
}

/** A tiny database of its own for --smoke, dropped afterwards. */
async function createSeededSmoke(serverUrl: string, runTag: string) {
  const name = `${databaseName(serverUrl)}_bench_smoke_${runTag}`;
  await createSeeded(serverUrl, name, { tenants: 1, instancesPerTenant: 2, participantsPerInstance: 20, staffPerTenant: 1 });
  return { url: sibling(serverUrl, name) };
}

main().then(
  () => process.exit(0),
  (error) => {
    say(`bench failed: ${(error as Error).stack ?? error}`);
    process.exit(1);
  },
);
