import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { say } from "../../node/runtime.ts";
import { installConventionsOff } from "../conventions/conventions-off.ts";
import { type CpuSample, cpuPerRequest, sampleCpu } from "../harness/cpu.ts";
import {
  countParticipants,
  createSeeded,
  databaseName,
  dropDatabase,
  removeBenchWrites,
  sibling,
  vacuumParticipants,
} from "../harness/databases.ts";
import { loadFixtures } from "../harness/fixtures.ts";
import { type Contest, type Measured, type PeersRun, renderPeers } from "../harness/peers-report.ts";
import { SCENARIOS, type Scenario, type Vars, varsSource, WRITE_PREFIX } from "../harness/scenarios.ts";
import { RESULTS_DIR, readSeedFile } from "../harness/seed-file.ts";
import { BenchServer } from "../harness/server-process.ts";
import { Latencies } from "../harness/stats.ts";
import { loadSide, type Round, type SideName } from "./sides.ts";

/**
 * npm run bench [-- --duration 10 --rounds 2 --connections 32 --scenarios get,list,write
 *                  --skip-conventions --conventions rate-limits,request-log,etag,last-used-at,idempotency,control
 *                  --convention-blocks N
 *                  --skip-peers --compare <commit> --smoke --out DIR --profile DIR]
 *
 * Side by side, in alternating rounds, on DATABASE_URL's seeded database, with
 * the same role, RLS and data: the API, the hand-written node:http + pg server
 * and PostGraphile 4, for a get, a list and a single create; then each of the
 * API's per-request conventions on and off, both loaded at once; with
 * --compare, this checkout's API against another commit's, also at once. Every target is printed met or NOT MET. See
 * bench/README.md. The replay of the API's own statements (floor, raw, best)
 * is `npm run bench:diagnosis`.
 */
const { values: args } = parseArgs({
  options: {
    duration: { type: "string" },
    rounds: { type: "string" },
    warmup: { type: "string" },
    connections: { type: "string", default: "32" },
    scenarios: { type: "string", default: SCENARIOS.map((s) => s.name).join(",") },
    "skip-conventions": { type: "boolean", default: false },
    "convention-blocks": { type: "string" },
    conventions: { type: "string" },
    "skip-peers": { type: "boolean", default: false },
    compare: { type: "string" },
    smoke: { type: "boolean", default: false },
    profile: { type: "string" },
    out: { type: "string", default: RESULTS_DIR },
  },
});

const smoke = args.smoke ?? false;
const seconds = Number(args.duration ?? (smoke ? 0.5 : 10));
const rounds = Number(args.rounds ?? (smoke ? 1 : 2));
/** Blocks of four rounds per convention's switched contest (as many as `rounds` unless told). */
const conventionBlocks = Number(args["convention-blocks"] ?? rounds);
const warmup = Number(args.warmup ?? (smoke ? 0 : 2));
const connections = smoke ? 4 : Number(args.connections);
const poolSize = Number(process.env.DB_POOL_SIZE || 10);
const scenarios = SCENARIOS.filter((s) => args.scenarios?.split(",").includes(s.name));

function git(...argv: string[]): string {
  return execFileSync("git", argv, { encoding: "utf8" }).trim();
}

function commit(): string {
  try {
    const dirty = git("status", "--porcelain", "--untracked-files=no");
    return dirty ? `${git("rev-parse", "--short", "HEAD")}+changes` : git("rev-parse", "--short", "HEAD");
  } catch {
    return "unknown";
  }
}

/** The database every side runs on (bench/harness/cpu.ts finds their backends there). */
let benchUrl = "";

/** A contestant: a running server and how to ask it (which side's requests, with which extra headers). */
interface Entrant {
  label: string;
  server: BenchServer;
  side: SideName;
  headers?: () => Record<string, string>;
}

/**
 * Loads the entrants with the scenario in `rounds` rounds. Alternating (the
 * peers): one entrant at a time with every connection, the order turned each
 * round, so that a machine that drifts slows all alike. Together (a read
 * with and without an Idempotency-Key, two commits): all entrants at once,
 * the connections shared out, so both meet the same machine at the same
 * moment and the one that costs more per request serves fewer. Each
 * entrant's figures are its rounds together, and its throughput per round
 * (for throughputRatio and conventionRatio).
 *
 * Switched (a convention on and off, `switched`: one switch server,
 * bench/conventions/switch-server.ts): the two entrants, "on" and "off", are the two apps
 * of one process on one pool, loaded in turn with every connection, switched
 * before each round in blocks of four, on, off, off, on, then off, on, on,
 * off, so that within a block a machine drifting evenly slows both alike and
 * neither side keeps the same places in a block. One process and one pool
 * serve both sides, so nothing that differs between two processes or two
 * pools with the same settings (bench/README.md) is counted as the
 * convention's cost. Its rounds are a
 * quarter as long as the others', four to a block, `--convention-blocks`
 * blocks (as many as `--rounds` unless told: then a contest takes the time of
 * any other).
 */
async function contest(
  scenario: Scenario,
  vars: () => Vars,
  entrants: Entrant[],
  together = false,
  switched?: BenchServer,
): Promise<Measured[]> {
  const totals = entrants.map(() => ({
    ok: 0,
    errors: 0,
    seconds: 0,
    latencies: new Latencies(),
    firstError: "",
    roundRps: [] as number[],
  }));
  const share = together ? Math.max(1, Math.floor(connections / entrants.length)) : connections;
  // CPU per request of each entrant's server and its Postgres backends, where each has a server of its own or is loaded alone.
  const ownServers = !together || new Set(entrants.map((e) => e.server)).size === entrants.length;
  const cpu = entrants.map(() => ({ server: 0, postgres: 0, requests: 0 }));
  const sample = (n: number) => {
    const server = (entrants[n] as Entrant).server;
    return ownServers ? sampleCpu(benchUrl, server.pid, server.appName) : undefined;
  };
  const addCpu = async (n: number, before: CpuSample | undefined, r: Round) => {
    if (!before) return;
    const server = (entrants[n] as Entrant).server;
    const per = await cpuPerRequest(benchUrl, before, server.pid, r.ok, server.appName);
    const total = cpu[n] as (typeof cpu)[number];
    total.server += (per.server_ms ?? 0) * r.ok;
    total.postgres += (per.postgres_ms ?? 0) * r.ok;
    total.requests += r.ok;
  };
  const add = (n: number, r: Round) => {
    const total = totals[n] as (typeof totals)[number];
    total.ok += r.ok;
    total.errors += r.errors;
    total.seconds += r.seconds;
    total.latencies.merge(r.latencies);
    total.firstError ||= r.firstError ?? "";
    total.roundRps.push(r.ok / Math.max(r.seconds, 1e-9));
  };
  const roundCount = switched ? 4 * conventionBlocks : rounds;
  const roundSeconds = switched ? seconds / 4 : seconds;
  if (warmup > 0) {
    const warm = entrants.map((entrant) => async () => {
      await switched?.switchTo(entrant.label === "on" ? "on" : "off");
      await loadSide({ ...ask(entrant, scenario, vars, share), seconds: warmup });
    });
    if (together) await Promise.all(warm.map((w) => w()));
    else for (const w of warm) await w();
  }
  for (let round = 0; round < roundCount; round++) {
    if (switched) {
      // Blocks of on, off, off, on, then off, on, on, off: each side has each place in a block as often.
      const n = (Math.floor(round / 4) % 2 === 0 ? [0, 1, 1, 0] : [1, 0, 0, 1])[round % 4] as number;
      const entrant = entrants[n] as Entrant;
      await switched.switchTo(entrant.label === "on" ? "on" : "off");
      say(`${scenario.name}: ${entrant.label}, round ${round + 1}/${roundCount}, ${roundSeconds} s…`);
      const before = await sample(n);
      const r = await loadSide({ ...ask(entrant, scenario, vars, share), seconds: roundSeconds });
      add(n, r);
      await addCpu(n, before, r);
      continue;
    }
    if (together) {
      say(
        `${scenario.name}: ${entrants.map((e) => e.label).join(" and ")} together, round ${round + 1}/${roundCount}, ${roundSeconds} s…`,
      );
      const before = await Promise.all(entrants.map((_, n) => sample(n)));
      const results = await Promise.all(
        entrants.map((entrant) => loadSide({ ...ask(entrant, scenario, vars, share), seconds: roundSeconds })),
      );
      for (const [n, r] of results.entries()) {
        add(n, r);
        await addCpu(n, before[n], r);
      }
      continue;
    }
    for (let i = 0; i < entrants.length; i++) {
      const n = (i + round) % entrants.length;
      const entrant = entrants[n] as Entrant;
      say(`${scenario.name}: ${entrant.label}, round ${round + 1}/${rounds}, ${seconds} s…`);
      const before = await sample(n);
      const r = await loadSide({ ...ask(entrant, scenario, vars, share), seconds });
      add(n, r);
      await addCpu(n, before, r);
    }
  }
  return entrants.map((entrant, n) => {
    const t = totals[n] as (typeof totals)[number];
    const c = cpu[n] as (typeof cpu)[number];
    return {
      label: entrant.label,
      requests: t.ok,
      errors: t.errors,
      rps: t.ok / Math.max(t.seconds, 1e-9),
      round_rps: t.roundRps,
      ...(c.requests > 0 ? { cpu_ms: { server: c.server / c.requests, postgres: c.postgres / c.requests } } : {}),
      p50_ms: t.latencies.percentileMs(50),
      p99_ms: t.latencies.percentileMs(99),
      ...(t.firstError ? { first_error: t.firstError } : {}),
    };
  });
}

const ask = (entrant: Entrant, scenario: Scenario, vars: () => Vars, share: number) => ({
  url: entrant.server.url,
  side: entrant.side,
  scenario,
  vars,
  connections: share,
  headers: entrant.headers,
});

/** The API with its conventions, switched off one at a time by its settings or by the bench server (conventions-off.ts). */
const CONVENTIONS: Array<{ slug: string; name: string; env: Record<string, string>; scenarios: Scenario["name"][] }> = [
  { slug: "rate-limits", name: "rate limits", env: { RATE_LIMIT_PER_MINUTE: "0" }, scenarios: ["get", "list"] },
  { slug: "request-log", name: "request log", env: { LOG_LEVEL: "warning" }, scenarios: ["get", "list"] },
  { slug: "etag", name: "ETag", env: { BENCH_WITHOUT: "etag" }, scenarios: ["get"] },
  { slug: "last-used-at", name: "key last_used_at", env: { BENCH_WITHOUT: "last_used_at" }, scenarios: ["get", "list"] },
];
/** `--conventions rate-limits,etag`: only these (idempotency: the lookup on reads and a keyed create; control: two identical servers). */
const IDEMPOTENCY = "idempotency";
const CONTROL = "control";
const conventionsWanted = (slug: string) => !args.conventions || args.conventions.split(",").includes(slug);

async function withServers<T>(starts: Array<() => Promise<BenchServer>>, work: (servers: BenchServer[]) => Promise<T>) {
  const servers: BenchServer[] = [];
  try {
    for (const start of starts) servers.push(await start());
    return await work(servers);
  } finally {
    for (const server of servers) await server.stop();
  }
}

/** A checkout of `ref` beside this one, sharing its node_modules, removed afterwards. */
async function checkout(ref: string): Promise<{ root: string; commit: string; remove: () => Promise<void> }> {
  const root = await mkdtemp(join(tmpdir(), "camp-bench-compare-"));
  git("worktree", "add", "--detach", root, ref);
  await symlink(join(process.cwd(), "node_modules"), join(root, "node_modules"));
  return {
    root,
    commit: git("-C", root, "rev-parse", "--short", "HEAD"),
    remove: async () => {
      git("worktree", "remove", "--force", root);
      await rm(root, { recursive: true, force: true });
    },
  };
}

async function main() {
  const serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) throw new Error("set DATABASE_URL (a scratch database; `npm run bench:seed` fills it)");
  const runTag = Date.now().toString(36);
  let url = serverUrl;
  if (smoke) {
    const name = `${databaseName(serverUrl)}_bench_smoke_${runTag}`;
    await createSeeded(serverUrl, name, { tenants: 1, instancesPerTenant: 2, participantsPerInstance: 20, staffPerTenant: 1 });
    url = sibling(serverUrl, name);
  }
  benchUrl = url;
  const seed = await readSeedFile(url);
  if (!seed)
    throw new Error(`no seed file for ${databaseName(url)}: run \`npm run bench:seed\` with the same DATABASE_URL first`);
  const run: PeersRun = {
    date: new Date().toISOString(),
    commit: commit(),
    smoke,
    cpus: cpus().length,
    connections,
    seconds,
    rounds,
    pool_size: poolSize,
    database_participants: await countParticipants(url),
    load_average_before: loadavg(),
    load_average_after: [],
    peers: [],
    conventions: [],
    compare: [],
  };
  const api =
    (env: Record<string, string> = {}) =>
    () =>
      BenchServer.start(url, poolSize, { env, ...(args.profile ? { profileDir: args.profile } : {}) });
  try {
    await vacuumParticipants(url);
    await installConventionsOff(url);
    const vars = varsSource(await loadFixtures(url, seed), runTag);

    if (!args["skip-peers"]) {
      await withServers(
        [
          api(),
          () => BenchServer.start(url, poolSize, { script: "bench/peers/hand-server.ts" }),
          () => BenchServer.start(url, poolSize, { script: "bench/peers/postgraphile-server.ts" }),
        ],
        async ([apiServer, hand, postgraphile]) => {
          for (const scenario of scenarios) {
            const measured = await contest(scenario, vars, [
              { label: "API", server: apiServer as BenchServer, side: "api" },
              { label: "hand-written", server: hand as BenchServer, side: "hand" },
              { label: "PostGraphile", server: postgraphile as BenchServer, side: "postgraphile" },
            ]);
            run.peers.push({ scenario: scenario.name, title: scenario.title, load_average: loadavg(), sides: measured });
          }
        },
      );
    }

    if (!args["skip-conventions"]) {
      const writes = scenarios.find((s) => s.name === "write");
      const reads = scenarios.filter((s) => s.method === "GET");
      // The peers' creates out and the table vacuumed, so every list below counts the same rows the same way.
      await removeBenchWrites(url, WRITE_PREFIX);
      // A switch server: an app with the convention and one without (`off`, its settings), one process.
      const switchServer = (off: Record<string, string>) => () =>
        BenchServer.start(url, poolSize, {
          script: "bench/conventions/switch-server.ts",
          env: { BENCH_OFF_ENV: JSON.stringify(off) },
        });
      const switchedContest = (scenario: Scenario, server: BenchServer) =>
        contest(
          scenario,
          vars,
          [
            { label: "on", server, side: "api" },
            { label: "off", server, side: "api" },
          ],
          false,
          server,
        );
      // The noise floor: a switch server whose two apps are the same, measured as every convention is.
      if (conventionsWanted(CONTROL)) {
        await withServers([switchServer({})], async ([server]) => {
          for (const scenario of reads) {
            const measured = await switchedContest(scenario, server as BenchServer);
            run.conventions.push({
              ...contest2("control: both apps the same", scenario.name, measured),
              switched: true,
              budget: false,
            });
          }
        });
      }
      for (const convention of CONVENTIONS.filter((c) => conventionsWanted(c.slug))) {
        await withServers([switchServer(convention.env)], async ([server]) => {
          for (const scenario of scenarios.filter((s) => convention.scenarios.includes(s.name))) {
            const measured = await switchedContest(scenario, server as BenchServer);
            run.conventions.push({ ...contest2(convention.name, scenario.name, measured), switched: true });
          }
        });
      }
      // The idempotency lookup on get and list: the same server, with and without the header
      // (a read's key is read and ignored); then what a keyed create costs, which is no
      // per-request convention but the work a client asks for (a lock, a lookup, the stored
      // answer): shown, not held to the budget.
      const keyed = () => ({ "idempotency-key": randomBytes(12).toString("hex") });
      const withAndWithout = (scenario: Scenario, server: BenchServer) =>
        contest(
          scenario,
          vars,
          [
            { label: "on", server, side: "api", headers: keyed },
            { label: "off", server, side: "api" },
          ],
          true,
        );
      if (conventionsWanted(IDEMPOTENCY)) {
        await withServers([api()], async ([server]) => {
          for (const scenario of reads) {
            run.conventions.push(
              contest2("idempotency lookup", scenario.name, await withAndWithout(scenario, server as BenchServer)),
            );
          }
          if (writes) {
            const measured = await withAndWithout(writes, server as BenchServer);
            run.conventions.push({ ...contest2("keyed create (Idempotency-Key)", "write", measured), budget: false });
          }
        });
      }
    }

    if (args.compare) {
      const other = await checkout(args.compare);
      try {
        const start = (root?: string) => () =>
          BenchServer.start(url, poolSize, { script: "node/server.ts", ...(root ? { root } : {}) });
        await withServers([start(), start(other.root)], async ([mine, theirs]) => {
          for (const scenario of scenarios) {
            const measured = await contest(
              scenario,
              vars,
              [
                { label: run.commit, server: mine as BenchServer, side: "api" },
                { label: other.commit, server: theirs as BenchServer, side: "api" },
              ],
              true,
            );
            run.compare.push({ scenario: scenario.name, load_average: loadavg(), sides: measured });
          }
        });
      } finally {
        await other.remove();
      }
    }
  } finally {
    await removeBenchWrites(url, WRITE_PREFIX).catch(() => {});
    if (smoke) await dropDatabase(serverUrl, databaseName(url));
  }
  run.load_average_after = loadavg();
  process.stdout.write(`\n${renderPeers(run)}\n`);
  await mkdir(args.out as string, { recursive: true });
  const file = join(args.out as string, `${run.date.replace(/[:.]/g, "-")}-peers${smoke ? "-smoke" : ""}.json`);
  await writeFile(file, `${JSON.stringify(run, null, 2)}\n`);
  say(`figures written to ${file}`);
}

const contest2 = (convention: string, scenario: string, [on, off]: Measured[]): Contest => ({
  convention,
  scenario,
  load_average: loadavg(),
  on: on as Measured,
  off: off as Measured,
});

main().then(
  () => process.exit(0),
  (error) => {
    say(`bench failed: ${(error as Error).stack ?? error}`);
    process.exit(1);
  },
);
