/** The figures of `npm run bench` (bench/peers/load.ts), as printed and as written to bench/results/<timestamp>-peers.json. */

export interface Measured {
  label: string;
  /** Successful answers (200, 201 for the API's create; GraphQL answers without `errors`). */
  requests: number;
  /** Any other status, GraphQL `errors`, socket errors and timeouts. */
  errors: number;
  rps: number;
  /** Throughput of each round, in order (throughputRatio). */
  round_rps?: number[];
  /** CPU milliseconds per request: the side's server process and its Postgres backends (bench/harness/cpu.ts, Linux). */
  cpu_ms?: { server: number; postgres: number };
  p50_ms: number;
  p99_ms: number;
  first_error?: string;
}

export interface PeerScenario {
  scenario: string;
  title: string;
  load_average: number[];
  /** API, hand-written, PostGraphile, in that order. */
  sides: Measured[];
}

/** One convention's cost: the API with it (on) and without it (off), side by side. */
export interface Contest {
  convention: string;
  /** False for a figure shown but not held to the 5 % budget (the control, a keyed create). */
  budget?: boolean;
  /** Measured in one process switched between an app with the convention and one without, in turn (bench/conventions/switch-server.ts). */
  switched?: boolean;
  scenario: string;
  load_average: number[];
  on: Measured;
  off: Measured;
}

export interface PeersRun {
  date: string;
  commit: string;
  smoke: boolean;
  cpus: number;
  connections: number;
  seconds: number;
  rounds: number;
  pool_size: number;
  database_participants: number;
  load_average_before: number[];
  load_average_after: number[];
  peers: PeerScenario[];
  conventions: Contest[];
  compare: Array<{ scenario: string; load_average: number[]; sides: Measured[] }>;
}

const median = (xs: number[]): number => {
  const sorted = [...xs].sort((x, y) => x - y);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
};

/** Each round's a/b, where both ran the same rounds side by side (their figures have round_rps). */
function roundRatios(a: Measured, b: Measured): number[] | undefined {
  const ar = a.round_rps ?? [];
  const br = b.round_rps ?? [];
  if (ar.length === 0 || ar.length !== br.length) return undefined;
  return ar.map((x, i) => x / Math.max(br[i] as number, 1e-9));
}

/**
 * a's throughput over b's: the median of their rounds' ratios when both ran
 * the same rounds (each round meets the machine as it was then), else the
 * ratio of their totals.
 */
export function throughputRatio(a: Measured, b: Measured): number {
  const ratios = roundRatios(a, b);
  return ratios ? median(ratios) : a.rps / b.rps;
}

/**
 * A convention's on/off. For a switched contest, whose sides ran in turn in
 * blocks of four rounds of the same length (on, off, off, on), the median
 * over the blocks of the block's on/off in requests: within a block a machine
 * drifting evenly weighs on both alike, and the median leaves out a block a
 * passing burst of other work fell on. Else throughputRatio.
 */
export function conventionRatio(c: Contest): number {
  if (!c.switched) return throughputRatio(c.on, c.off);
  const on = c.on.round_rps ?? [];
  const off = c.off.round_rps ?? [];
  const blocks: number[] = [];
  for (let i = 0; i + 1 < Math.min(on.length, off.length); i += 2) {
    blocks.push(((on[i] as number) + (on[i + 1] as number)) / Math.max((off[i] as number) + (off[i + 1] as number), 1e-9));
  }
  return blocks.length > 0 ? median(blocks) : c.on.rps / c.off.rps;
}

/** Issue 28's targets: the API's throughput over each peer's, per scenario, and each convention's cost. */
export const PEER_TARGETS: Record<string, { postgraphile: number; hand?: number }> = {
  get: { postgraphile: 1.5, hand: 0.8 },
  list: { postgraphile: 2.5, hand: 1.2 },
  write: { postgraphile: 1.5 },
};
/** The most a convention may take of the API's throughput (1 − on/off). */
export const CONVENTION_BUDGET = 0.05;

export interface Verdict {
  target: string;
  measured: string;
  met: boolean;
}

export function verdicts(run: PeersRun): Verdict[] {
  const out: Verdict[] = [];
  for (const s of run.peers) {
    const [api, hand, postgraphile] = s.sides as [Measured, Measured, Measured];
    const target = PEER_TARGETS[s.scenario];
    if (!target) continue;
    const overPg = throughputRatio(api, postgraphile);
    out.push({
      target: `${s.scenario}: API ≥ ${target.postgraphile} × PostGraphile`,
      measured: `${overPg.toFixed(2)} ×`,
      met: overPg >= target.postgraphile,
    });
    if (target.hand !== undefined) {
      const overHand = throughputRatio(api, hand);
      out.push({
        target: `${s.scenario}: API ≥ ${target.hand} × hand-written`,
        measured: `${overHand.toFixed(2)} ×`,
        met: overHand >= target.hand,
      });
    }
    const errors = s.sides.map((side) => side.errors);
    out.push({
      target: `${s.scenario}: no errors (API, hand-written, PostGraphile)`,
      measured: errors.join(", "),
      met: errors.every((e) => e === 0),
    });
  }
  for (const c of run.conventions) {
    if (c.budget === false) continue;
    const cost = 1 - conventionRatio(c);
    out.push({
      target: `${c.convention} on ${c.scenario}: costs ≤ ${CONVENTION_BUDGET * 100} %`,
      measured: `${(cost * 100).toFixed(1)} %${c.on.errors + c.off.errors > 0 ? ` (errors ${c.on.errors}, ${c.off.errors})` : ""}`,
      met: cost <= CONVENTION_BUDGET && c.on.errors + c.off.errors === 0,
    });
  }
  return out;
}

/** How much more CPU per request `on` spent than `off` (server and backends together), where both were measured. */
export function cpuCost(on: Measured, off: Measured): number | undefined {
  if (!on.cpu_ms || !off.cpu_ms) return undefined;
  const total = (m: { server: number; postgres: number }) => m.server + m.postgres;
  return total(on.cpu_ms) / total(off.cpu_ms) - 1;
}

const cpuText = (m: Measured) =>
  m.cpu_ms ? `  CPU/req ${m.cpu_ms.server.toFixed(3)} + ${m.cpu_ms.postgres.toFixed(3)} ms (server + Postgres)` : "";

const num = (n: number, digits = 0) => n.toLocaleString("en", { minimumFractionDigits: digits, maximumFractionDigits: digits });
const load = (l: number[]) => l.map((x) => x.toFixed(2)).join(" ");
const figures = (m: Measured) =>
  `${num(m.rps).padStart(7)} req/s  p50 ${num(m.p50_ms, 2).padStart(6)}  p99 ${num(m.p99_ms, 2).padStart(7)} ms  ${String(m.errors).padStart(3)} err`;

export function renderPeers(run: PeersRun): string {
  const lines: string[] = [];
  lines.push(
    `${run.date}  commit ${run.commit}  ${run.cpus} cpus  load average ${load(run.load_average_before)} → ${load(run.load_average_after)}`,
  );
  lines.push(
    `concurrency ${run.connections}, ${run.rounds} alternating rounds of ${run.seconds} s per side, DB_POOL_SIZE ${run.pool_size}, ` +
      `${num(run.database_participants)} participants${run.smoke ? "  (SMOKE RUN: figures mean nothing)" : ""}`,
  );
  for (const s of run.peers) {
    const [api, hand, postgraphile] = s.sides as [Measured, Measured, Measured];
    lines.push("", `${s.scenario.padEnd(6)} ${s.title}   (load ${load(s.load_average)})`);
    for (const side of s.sides) lines.push(`  ${side.label.padEnd(14)}${figures(side)}${cpuText(side)}`);
    lines.push(
      `  API/hand-written ${throughputRatio(api, hand).toFixed(2)}   API/PostGraphile ${throughputRatio(api, postgraphile).toFixed(2)}`,
    );
  }
  if (run.conventions.length > 0) {
    lines.push(
      "",
      "conventions (the API with each on and off: one process switched between two apps on one pool, loaded in turn in blocks of on, off, off, on and off, on, on, off;",
      "cost: 1 − the median over the blocks of on/off; the idempotency lookup: one server with and without the header, both loaded at once):",
    );
    for (const c of run.conventions) {
      lines.push(`  ${`${c.convention}, ${c.scenario}`.padEnd(40)} on ${figures(c.on)}${cpuText(c.on)}`);
      const byCpu = cpuCost(c.on, c.off);
      const cost = `${((1 - conventionRatio(c)) * 100).toFixed(1)} %${byCpu === undefined ? "" : ` (CPU per request ${(byCpu * 100).toFixed(1)} %)`}`;
      lines.push(
        `  ${"".padEnd(40)} off${figures(c.off)}${cpuText(c.off)}   ${c.budget === false ? `difference ${cost} (no budget)` : `cost ${cost}`}`,
      );
    }
  }
  if (run.compare.length > 0) {
    lines.push("", "compare (the API of two commits, both loaded at once; ratio: median of the rounds'):");
    for (const s of run.compare) {
      const [mine, theirs] = s.sides as [Measured, Measured];
      lines.push(`  ${s.scenario.padEnd(6)} ${mine.label.padEnd(16)}${figures(mine)}`);
      lines.push(
        `  ${"".padEnd(6)} ${theirs.label.padEnd(16)}${figures(theirs)}   ratio ${throughputRatio(mine, theirs).toFixed(2)}`,
      );
    }
  }
  lines.push("", "targets (issue 28, ratios within this run):");
  for (const v of verdicts(run)) lines.push(`  ${v.met ? "met    " : "NOT MET"}  ${v.target.padEnd(52)} ${v.measured}`);
  const failed = [...run.peers.flatMap((s) => s.sides), ...run.conventions.flatMap((c) => [c.on, c.off])].filter(
    (m) => m.first_error,
  );
  for (const m of failed) lines.push(`  first error of ${m.label}: ${m.first_error}`);
  return lines.join("\n");
}
