import type { CpuPerRequest } from "./cpu.ts";
import type { LoadFigures } from "./stats.ts";

/** The figures of one run, as printed and as written to bench/results/<timestamp>.json. */

export interface ScenarioResult {
  name: string;
  title: string;
  /** round_trips: pg queries of one captured request; under load: all queries / requests sent. */
  api: LoadFigures & { round_trips: number; round_trips_under_load: number; sent: number; cpu: CpuPerRequest };
  /** The Node floor: a bare node:http server replaying the same statements (bench/peers/floor-server.ts). */
  floor: LoadFigures & { round_trips: number; sent: number; cpu: CpuPerRequest };
  raw: LoadFigures & { round_trips: number; cpu: CpuPerRequest };
  /** The same statements in one round trip per request (bench/peers/best.ts). */
  best: LoadFigures & { round_trips: number; cpu: CpuPerRequest };
  /** API requests/s divided by raw requests/s. */
  ratio: number;
  target_ratio: number;
  /** The statements one request issued, in order (values left out). */
  statements: string[];
  load_average: number[];
}

export interface ScaleResult {
  participants: number;
  database: string;
  list: LoadFigures;
}

export interface RunResult {
  date: string;
  commit: string;
  smoke: boolean;
  cpus: number;
  connections: number;
  seconds: number;
  pool_size: number;
  database_participants: number;
  load_average_before: number[];
  load_average_after: number[];
  scenarios: ScenarioResult[];
  scale: ScaleResult[];
  /** p50 at the largest scale divided by p50 at the smallest. */
  scale_ratio?: number;
}

/**
 * Issue 19's targets, all ratios measured in one run: API/raw throughput per
 * scenario, API p99 against raw p99, the most round trips a read and a write
 * may take, and the per-instance list's p50 at 1,000,000 against 10,000.
 */
export const TARGETS = {
  list: 0.85,
  get: 0.8,
  write: 0.8,
  p99OverRaw: 1.3,
  readRoundTrips: 2,
  writeRoundTrips: 3,
  scaleRatio: 1.2,
};

export interface Verdict {
  target: string;
  measured: string;
  met: boolean;
}

/**
 * Every target against this run's figures. The throughput and p99 targets also
 * show what the Node floor reached in the same run: a bare node:http server
 * sending the same statements, the most any Node HTTP API could hope for.
 */
export function verdicts(run: RunResult): Verdict[] {
  const out: Verdict[] = [];
  for (const s of run.scenarios) {
    const floorRatio = s.floor.rps / s.raw.rps;
    out.push({
      target: `${s.name}: API/raw ≥ ${s.target_ratio}`,
      measured: `${s.ratio.toFixed(2)}     (floor/raw ${floorRatio.toFixed(2)})`,
      met: Number.isFinite(s.ratio) && s.ratio >= s.target_ratio,
    });
    const p99 = s.api.p99_ms / s.raw.p99_ms;
    const floorP99 = s.floor.p99_ms / s.raw.p99_ms;
    out.push({
      target: `${s.name}: API p99 ≤ ${TARGETS.p99OverRaw} × raw p99`,
      measured: `${p99.toFixed(2)} ×  (floor ${floorP99.toFixed(2)} ×)`,
      met: Number.isFinite(p99) && p99 <= TARGETS.p99OverRaw,
    });
    const limit = s.name === "write" ? TARGETS.writeRoundTrips : TARGETS.readRoundTrips;
    out.push({
      target: `${s.name}: round trips ≤ ${limit}`,
      measured: String(s.api.round_trips),
      met: s.api.round_trips <= limit,
    });
    // A ratio to a baseline that failed means nothing, so its errors count too.
    const errors = [s.api, s.floor, s.raw, s.best].map((side) => side.errors);
    out.push({
      target: `${s.name}: no errors (API, floor, raw, best)`,
      measured: errors.join(", "),
      met: errors.every((n) => n === 0),
    });
  }
  if (run.scale_ratio !== undefined) {
    out.push({
      target: `scale: list p50 at 1,000,000 ≤ ${TARGETS.scaleRatio} × at 10,000`,
      measured: run.scale_ratio.toFixed(2),
      met: run.scale_ratio <= TARGETS.scaleRatio,
    });
  }
  return out;
}

const num = (n: number, digits = 0) => n.toLocaleString("en", { minimumFractionDigits: digits, maximumFractionDigits: digits });
const cell = (text: string, width: number) => text.padStart(width);
const load = (l: number[]) => l.map((x) => x.toFixed(2)).join(" ");

function side(f: LoadFigures & { round_trips: number }): string {
  return [
    cell(num(f.rps), 8),
    cell(num(f.p50_ms, 2), 8),
    cell(num(f.p99_ms, 2), 8),
    cell(num(f.errors), 7),
    cell(num(f.round_trips, 1), 5),
  ].join("");
}

export function renderTable(run: RunResult): string {
  const lines: string[] = [];
  lines.push(
    `${run.date}  commit ${run.commit}  ${run.cpus} cpus  load average ${load(run.load_average_before)} → ${load(run.load_average_after)}`,
  );
  lines.push(
    `concurrency ${run.connections}, ${run.seconds} s per side, DB_POOL_SIZE ${run.pool_size}, ${num(run.database_participants)} participants in the database${run.smoke ? "  (SMOKE RUN: figures mean nothing)" : ""}`,
  );
  lines.push("");
  for (const s of run.scenarios) lines.push(`${s.name.padEnd(8)}${s.title}`);
  lines.push("");
  const head = ["   req/s", "  p50 ms", "  p99 ms", " errors", "   rt"].join("");
  const sides = ["API", "Node floor", "raw pg", "best pg"].map((t) => t.padEnd(36)).join("│");
  lines.push(`${"".padEnd(8)}│${sides}│ API/raw API/best API/floor floor/raw`);
  lines.push(`${"".padEnd(8)}│${head}│${head}│${head}│${head}│`);
  for (const s of run.scenarios) {
    const ratios = [
      cell(s.ratio.toFixed(2), 8),
      cell((s.api.rps / s.best.rps).toFixed(2), 9),
      cell((s.api.rps / s.floor.rps).toFixed(2), 10),
      cell((s.floor.rps / s.raw.rps).toFixed(2), 10),
    ].join("");
    lines.push(`${s.name.padEnd(8)}│${side(s.api)}│${side(s.floor)}│${side(s.raw)}│${side(s.best)}│${ratios}`);
  }
  lines.push(
    "rt = database round trips per request; the floor replays the API's statements behind a bare node:http server; " +
      "raw replays them through pg; best sends them in one round trip (prepared where the API prepares)",
  );
  lines.push("");
  const cpuHead = "  client  server postgres   total";
  lines.push(
    `${"CPU ms".padEnd(8)}│${cpuHead.padEnd(36)}│${cpuHead.padEnd(36)}│${"  client postgres   total".padEnd(36)}│ raw/API`,
  );
  const ms = (x: number | undefined) => cell(x === undefined ? "–" : num(x, 2), 8);
  const total = (c: CpuPerRequest) => (c.load_generator_ms ?? 0) + (c.server_ms ?? 0) + (c.postgres_ms ?? 0);
  const serverSide = (c: CpuPerRequest) => `${ms(c.load_generator_ms)}${ms(c.server_ms)}${ms(c.postgres_ms)}${ms(total(c))}    `;
  for (const s of run.scenarios) {
    const [a, f, r] = [s.api.cpu, s.floor.cpu, s.raw.cpu];
    lines.push(
      `${s.name.padEnd(8)}│${serverSide(a)}│${serverSide(f)}│${ms(r.load_generator_ms)}${ms(r.postgres_ms)}${ms(total(r))}            │ ${total(a) > 0 ? (total(r) / total(a)).toFixed(2) : "–"}`,
    );
  }
  lines.push("client = the load generator (autocannon, or pg for raw); CPU figures hold even on a shared machine");
  for (const s of run.scale) {
    lines.push(
      `scale: per-instance list on ${num(s.participants)} participants: p50 ${num(s.list.p50_ms, 2)} ms, p99 ${num(s.list.p99_ms, 2)} ms, ${num(s.list.rps)} req/s, ${s.list.errors} errors`,
    );
  }
  if (run.scale_ratio !== undefined) {
    lines.push(
      `scale: p50 at ${num(run.scale.at(-1)?.participants ?? 0)} / p50 at ${num(run.scale[0]?.participants ?? 0)} = ${run.scale_ratio.toFixed(2)} (target ≤ ${TARGETS.scaleRatio})`,
    );
  }
  lines.push("");
  lines.push("targets (issue 19, ratios within this run):");
  for (const v of verdicts(run)) lines.push(`  ${v.met ? "met    " : "NOT MET"}  ${v.target.padEnd(44)} ${v.measured}`);
  return lines.join("\n");
}
