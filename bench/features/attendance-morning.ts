/**
 * A paced morning (issue 41, item 7), `npm run bench:attendance -- --morning`:
 * 500 check-ins (`--check-ins`) spread over `--minutes` (10 by default) as a camp would see
 * them, sent over HTTP to the real Node server (`node/server.ts` with the
 * production defaults: rate limits, request log, webhook worker) in a child
 * process, so its CPU and memory are its own:
 *
 * - 4 kiosks, one staff user each with an `attendance`-only key, each sending
 *   its queue of arrivals one at a time at the scheduled moment: most arrivals
 *   on a bell peaking mid-morning, the rest in two coach loads of 30 children
 *   each within a twentieth of the morning; a few children checked out again
 *   to their authorised pickup (with the slip's code) later on the same kiosk;
 * - 12 leaders' phones, each reading the roster once and then presence every
 *   5 s and the event feed from the roster's cursor every 15 s;
 * - 2 offline devices recording 30 check-ins each and uploading them in two
 *   syncs, the second resending the first batch (duplicates).
 *
 * Measured: each kind's latency (the kiosks' also per tenth of the morning,
 * with how late a kiosk sent against its schedule), the server's and its
 * Postgres backends' CPU time from /proc sampled every few seconds (as a
 * share of one core: mean and the busiest interval) and the server's RSS,
 * with the load average, since the machine is shared.
 */
import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import { cpus, loadavg } from "node:os";
import pg from "pg";
import { BenchServer } from "../harness/server-process.ts";
import { Latencies } from "../harness/stats.ts";

const KIOSKS = 4;
const LEADERS = 12;
const OFFLINE_DEVICES = 2;
const COACHES = [0.3, 0.65];
const PRESENCE_EVERY_S = 5;
const FEED_EVERY_S = 15;
const TENTHS = 10;
const TICKS_PER_SECOND = 100;

type Request = (method: string, path: string, body?: unknown) => Promise<{ took: number; body: { data: never } }>;

export interface MorningCamp {
  /** The scratch database the camp is in. */
  url: string;
  instance: string;
  /** Participants no other part of the bench touches, at least as many as the morning checks in. */
  ids: string[];
  pickups: Map<string, string>;
  /** The tenant's admin, in process: to add the devices' users and keys. */
  request: Request;
}

/** Deterministic: the same schedule every run. */
function random(seed: number) {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const sleepUntil = async (started: number, atMs: number) => {
  const wait = started + atMs - performance.now();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
};

async function cpuMsOf(pid: number): Promise<number | undefined> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

async function statusKb(pid: number, field: string): Promise<number | undefined> {
  try {
    const status = await readFile(`/proc/${pid}/status`, "utf8");
    const value = new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1];
    return value === undefined ? undefined : Number(value);
  } catch {
    return undefined;
  }
}

interface Sample {
  at_s: number;
  server_cpu_ms: number;
  postgres_cpu_ms: number;
  self_cpu_ms: number;
  server_rss_mb: number;
  backends: number;
  load1: number;
}

/**
 * CPU time of the server, of its Postgres backends (by application_name) and
 * of this process, cumulative since the first sample. A backend that closes
 * keeps what it had used when last seen (at most one interval's CPU is lost);
 * one that opens counts from 0, its start-up included.
 */
class Sampler {
  private readonly seen = new Map<number, { first: number; last: number }>();
  private firstServer = 0;
  private firstSelf = 0;
  readonly samples: Sample[] = [];

  private constructor(
    private readonly client: pg.Client,
    private readonly serverPid: number,
    private readonly appName: string,
    private readonly started: number,
  ) {}

  static async start(url: string, serverPid: number, appName: string, started: number) {
    const client = new pg.Client({ connectionString: url, application_name: "camp_morning_sampler" });
    await client.connect();
    const sampler = new Sampler(client, serverPid, appName, started);
    sampler.firstServer = (await cpuMsOf(serverPid)) ?? 0;
    sampler.firstSelf = (await cpuMsOf(process.pid)) ?? 0;
    for (const pid of await sampler.backends()) {
      const cpu = (await cpuMsOf(pid)) ?? 0;
      sampler.seen.set(pid, { first: cpu, last: cpu });
    }
    await sampler.sample();
    return sampler;
  }

  private async backends(): Promise<number[]> {
    const { rows } = await this.client.query<{ pid: number }>(
      "select pid from pg_stat_activity where datname = current_database() and application_name = $1",
      [this.appName],
    );
    return rows.map((r) => r.pid);
  }

  async sample(): Promise<void> {
    const pids = await this.backends();
    for (const pid of pids) {
      const cpu = await cpuMsOf(pid);
      if (cpu === undefined) continue;
      const known = this.seen.get(pid);
      if (known) known.last = cpu;
      else this.seen.set(pid, { first: 0, last: cpu });
    }
    let postgres = 0;
    for (const { first, last } of this.seen.values()) postgres += last - first;
    this.samples.push({
      at_s: (performance.now() - this.started) / 1000,
      server_cpu_ms: ((await cpuMsOf(this.serverPid)) ?? this.firstServer) - this.firstServer,
      postgres_cpu_ms: postgres,
      self_cpu_ms: ((await cpuMsOf(process.pid)) ?? this.firstSelf) - this.firstSelf,
      server_rss_mb: ((await statusKb(this.serverPid, "VmRSS")) ?? 0) / 1024,
      backends: pids.length,
      load1: loadavg()[0] as number,
    });
  }

  async stop(): Promise<{ server_peak_rss_mb: number; backends_rss_anon_mb: number }> {
    let anon = 0;
    for (const pid of await this.backends()) anon += (await statusKb(pid, "RssAnon")) ?? 0;
    await this.client.end();
    return { server_peak_rss_mb: ((await statusKb(this.serverPid, "VmHWM")) ?? 0) / 1024, backends_rss_anon_mb: anon / 1024 };
  }
}

interface Timed {
  latencies: Latencies;
  list: number[];
}
const timed = (): Timed => ({ latencies: new Latencies(), list: [] });
const note = (set: Timed, ms: number) => {
  set.latencies.recordMs(ms);
  set.list.push(ms);
};
const summary = (set: Timed) => ({
  n: set.list.length,
  mean_ms: set.list.length ? set.list.reduce((a, b) => a + b, 0) / set.list.length : 0,
  p50_ms: set.latencies.percentileMs(50),
  p99_ms: set.latencies.percentileMs(99),
  max_ms: set.list.length ? Math.max(...set.list) : 0,
});

interface Arrival {
  at_ms: number;
  participant: string;
  kiosk: number;
  /** Checked out again this much later, on the same kiosk. */
  leaves_after_ms?: number;
}

/**
 * Who arrives when, at which kiosk; who leaves again; who is recorded offline.
 * Of 500 check-ins: 60 offline (30 a device), 2 coach loads of 30, 25 check-outs;
 * in proportion for a smaller morning (a smoke run).
 */
export function schedule(ids: string[], morningMs: number, checkIns: number) {
  const rand = random(41);
  const offlineEach = Math.max(1, Math.round(checkIns * 0.06));
  const coachLoad = Math.max(1, Math.round(checkIns * 0.06));
  const checkOuts = Math.round(checkIns * 0.05);
  const offline = ids.slice(0, OFFLINE_DEVICES * offlineEach);
  const online = ids.slice(OFFLINE_DEVICES * offlineEach, checkIns);
  const coachSpread = morningMs / 20;
  const arrivals: Arrival[] = online.map((participant, i) => {
    const coach = Math.floor(i / coachLoad);
    const at_ms =
      coach < COACHES.length
        ? (COACHES[coach] as number) * morningMs + (rand() - 0.5) * coachSpread
        : // The sum of three uniforms: a bell over the morning, highest in the middle.
          ((rand() + rand() + rand()) / 3) * morningMs;
    return { at_ms, participant, kiosk: Math.floor(rand() * KIOSKS) };
  });
  arrivals.sort((a, b) => a.at_ms - b.at_ms);
  // Children who leave again: among those arriving in the first 60 %, gone 10 to 40 % of the morning later.
  const early = arrivals.filter((a) => a.at_ms < 0.6 * morningMs);
  for (let i = 0; i < checkOuts && early.length > 0; i++) {
    const arrival = early.splice(Math.floor(rand() * early.length), 1)[0] as Arrival;
    arrival.leaves_after_ms = (0.1 + 0.3 * rand()) * morningMs;
  }
  const devices = Array.from({ length: OFFLINE_DEVICES }, (_, d) => {
    const mine = offline.slice(d * offlineEach, (d + 1) * offlineEach);
    const syncs = d === 0 ? [0.35, 0.8] : [0.5, 0.92];
    // Recorded from the start until just before the last upload.
    const recorded = mine
      .map((participant) => ({ participant, at_ms: rand() * ((syncs[1] as number) - 0.02) * morningMs, nonce: randomUUID() }))
      .sort((a, b) => a.at_ms - b.at_ms);
    return { syncs: syncs.map((s) => s * morningMs), recorded };
  });
  return { arrivals, devices };
}

export async function morning(camp: MorningCamp, minutes: number, checkIns: number, out: (line?: string) => void) {
  if (camp.ids.length < checkIns) throw new Error(`a morning of ${checkIns} needs as many participants`);
  const morningMs = minutes * 60_000;
  const { arrivals, devices } = schedule(camp.ids, morningMs, checkIns);

  // A staff user and an attendance-only key for every device.
  const keyOf = async (name: string) => {
    const email = `${name.toLowerCase().replace(/ /g, "-")}@bench.test`;
    await camp.request("POST", "/users", { email, role: "staff" });
    const key = await camp.request("POST", "/api-keys", { email, name, scopes: ["attendance"] });
    return (key.body.data as { key: string }).key;
  };
  const kioskKeys = await Promise.all(Array.from({ length: KIOSKS }, (_, i) => keyOf(`Kiosk ${i + 1}`)));
  const leaderKeys = await Promise.all(Array.from({ length: LEADERS }, (_, i) => keyOf(`Leader ${i + 1}`)));
  const deviceKeys = await Promise.all(Array.from({ length: OFFLINE_DEVICES }, (_, i) => keyOf(`Field device ${i + 1}`)));

  // node/server.ts as `npm start` runs it: the production defaults, not the bench's.
  const server = await BenchServer.start(camp.url, 10, {
    script: "node/server.ts",
    env: { RATE_LIMIT_PER_MINUTE: "1200", WEBHOOK_WORKER: "true", LOG_LEVEL: "info" },
  });
  const errors: string[] = [];
  let rateLimited = 0;
  const call = async (key: string, method: string, path: string, body?: unknown) => {
    const started = performance.now();
    const res = await fetch(`${server.url}/api/v1${path}`, {
      method,
      headers: { "X-API-Key": key, "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    const took = performance.now() - started;
    if (res.status === 429) rateLimited++;
    if (res.status >= 400) {
      errors.push(`${method} ${path}: ${res.status} ${text.slice(0, 200)}`);
      return { took, ok: false as const, data: undefined };
    }
    return { took, ok: true as const, data: (JSON.parse(text) as { data: unknown; meta?: { next?: string } }).data, text };
  };

  try {
    // Warm the server: a presence read and a roster on a leader's key, before the clock starts.
    const alone = { presence_ms: [] as number[], roster_ms: [] as number[] };
    for (let i = 0; i < 3; i++) {
      alone.presence_ms.push((await call(leaderKeys[0] as string, "GET", `/instances/${camp.instance}/presence`)).took);
      alone.roster_ms.push((await call(leaderKeys[0] as string, "GET", `/instances/${camp.instance}/roster`)).took);
    }
    out(
      `  before the morning, alone: presence ${alone.presence_ms.map((t) => t.toFixed(1)).join(", ")} ms; roster ${alone.roster_ms.map((t) => t.toFixed(1)).join(", ")} ms`,
    );
    if (errors.length) throw new Error(`warm-up: ${errors[0]}`);

    const checkIn = timed();
    const checkOut = timed();
    const presence = timed();
    const roster = timed();
    const feed = timed();
    const syncs: Array<{ device: number; at_s: number; records: number; ms: number; counts: unknown }> = [];
    const checkInByTenth = Array.from({ length: TENTHS }, () => timed());
    const presenceByTenth = Array.from({ length: TENTHS }, () => timed());
    let latestSend = 0;
    const tenth = (atMs: number) => Math.min(TENTHS - 1, Math.max(0, Math.floor((atMs / morningMs) * TENTHS)));

    const started = performance.now();
    const sampler = await Sampler.start(camp.url, server.pid as number, server.appName, started);
    const sampleEveryMs = Math.min(5_000, Math.max(250, morningMs / 120));
    let running = true;
    const sampling = (async () => {
      while (running) {
        await new Promise((r) => setTimeout(r, sampleEveryMs));
        await sampler.sample();
      }
    })();

    const kiosks = Array.from({ length: KIOSKS }, async (_, k) => {
      const key = kioskKeys[k] as string;
      const queue: Array<{ at_ms: number; participant: string; direction: "in" | "out" }> = [];
      for (const a of arrivals.filter((a) => a.kiosk === k)) {
        queue.push({ at_ms: a.at_ms, participant: a.participant, direction: "in" });
        if (a.leaves_after_ms !== undefined)
          queue.push({ at_ms: Math.min(a.at_ms + a.leaves_after_ms, morningMs), participant: a.participant, direction: "out" });
      }
      queue.sort((a, b) => a.at_ms - b.at_ms);
      const codes = new Map<string, string | null>();
      for (const item of queue) {
        await sleepUntil(started, Math.max(0, item.at_ms));
        latestSend = Math.max(latestSend, performance.now() - started - Math.max(0, item.at_ms));
        if (item.direction === "in") {
          const answer = await call(key, "POST", "/attendance", {
            participant_id: item.participant,
            direction: "in",
            location: `Kiosk ${k + 1}`,
          });
          note(checkIn, answer.took);
          note(checkInByTenth[tenth(item.at_ms)] as Timed, answer.took);
          if (answer.ok) codes.set(item.participant, (answer.data as { security_code: string | null }).security_code);
        } else {
          const answer = await call(key, "POST", "/attendance", {
            participant_id: item.participant,
            direction: "out",
            location: `Kiosk ${k + 1}`,
            pickup_contact_id: camp.pickups.get(item.participant),
            security_code: codes.get(item.participant) ?? null,
          });
          note(checkOut, answer.took);
        }
      }
    });

    const leaders = Array.from({ length: LEADERS }, async (_, l) => {
      const key = leaderKeys[l] as string;
      const rand = random(1_000 + l);
      await sleepUntil(started, rand() * Math.min(30_000, morningMs / 20));
      const first = await call(key, "GET", `/instances/${camp.instance}/roster`);
      note(roster, first.took);
      let cursor = first.ok ? (first.data as { cursor: string }).cursor : "now";
      let nextFeed = performance.now() - started + FEED_EVERY_S * 1000 * rand();
      // At least one read each, even when the roster took the whole (shortened) morning.
      for (;;) {
        const at = performance.now() - started;
        const read = await call(key, "GET", `/instances/${camp.instance}/presence`);
        note(presence, read.took);
        note(presenceByTenth[tenth(at)] as Timed, read.took);
        if (performance.now() - started >= nextFeed) {
          const page = await call(key, "GET", `/events?after=${encodeURIComponent(cursor)}`);
          note(feed, page.took);
          if (page.ok) cursor = (JSON.parse(page.text) as { meta: { next: string } }).meta.next;
          nextFeed += FEED_EVERY_S * 1000;
        }
        const next = at + PRESENCE_EVERY_S * 1000 * (0.8 + 0.4 * rand());
        if (next >= morningMs) break;
        await sleepUntil(started, next);
      }
    });

    const offline = devices.map(async (device, d) => {
      const key = deviceKeys[d] as string;
      const wallStart = Date.now();
      let sent = 0;
      let firstBatch: unknown[] = [];
      for (const [n, at] of device.syncs.entries()) {
        await sleepUntil(started, at);
        const upTo = device.recorded.filter((r) => r.at_ms <= at - 1).length;
        const fresh = device.recorded.slice(sent, upTo).map((r) => ({
          participant_id: r.participant,
          direction: "in",
          recorded_at: new Date(wallStart + r.at_ms).toISOString(),
          nonce: r.nonce,
          location: `Field ${d + 1}`,
        }));
        sent = upTo;
        // The second upload sends the first again: the device never saw the first answer.
        const records = n === 0 ? fresh : [...firstBatch, ...fresh];
        if (n === 0) firstBatch = fresh;
        const answer = await call(key, "POST", "/attendance/sync", { records });
        syncs.push({
          device: d + 1,
          at_s: at / 1000,
          records: records.length,
          ms: answer.took,
          counts: answer.ok ? (answer.data as { counts: unknown }).counts : undefined,
        });
      }
    });

    await Promise.all([...kiosks, ...leaders, ...offline]);
    const seconds = (performance.now() - started) / 1000;
    running = false;
    await sampling;
    await sampler.sample();
    const memory = await sampler.stop();
    const present = await call(leaderKeys[0] as string, "GET", `/instances/${camp.instance}/presence`);

    // CPU as a share of one core: over the whole morning and in the busiest sampling interval.
    const samples = sampler.samples;
    const last = samples[samples.length - 1] as Sample;
    const share = (cpuMs: number, wallS: number) => cpuMs / (wallS * 1000);
    let busiest = { at_s: 0, server: 0, postgres: 0, total: 0, seconds: 0 };
    for (let i = 1; i < samples.length; i++) {
      const [a, b] = [samples[i - 1] as Sample, samples[i] as Sample];
      const wall = b.at_s - a.at_s;
      if (wall <= 0) continue;
      const server = share(b.server_cpu_ms - a.server_cpu_ms, wall);
      const postgres = share(b.postgres_cpu_ms - a.postgres_cpu_ms, wall);
      if (server + postgres > busiest.total)
        busiest = { at_s: a.at_s, server, postgres, total: server + postgres, seconds: wall };
    }
    const tenthCpu = Array.from({ length: TENTHS }, (_, t) => {
      const from = (t * morningMs) / TENTHS / 1000;
      const to = ((t + 1) * morningMs) / TENTHS / 1000;
      const inside = samples.filter((s) => s.at_s >= from - 1e-9 && s.at_s <= to + 1e-9);
      const a = inside[0];
      const b = inside[inside.length - 1];
      if (!a || !b || b.at_s <= a.at_s) return undefined;
      return share(b.server_cpu_ms - a.server_cpu_ms + b.postgres_cpu_ms - a.postgres_cpu_ms, b.at_s - a.at_s);
    });
    const onlineIns = arrivals.length;
    const offlineIns = devices.reduce((n, d) => n + d.recorded.length, 0);
    const requests =
      checkIn.list.length + checkOut.list.length + presence.list.length + roster.list.length + feed.list.length + syncs.length;
    const result = {
      minutes,
      seconds,
      alone,
      cores: cpus().length,
      devices: { kiosks: KIOSKS, leaders: LEADERS, offline: OFFLINE_DEVICES },
      check_ins: { online: onlineIns, offline: offlineIns, total: onlineIns + offlineIns },
      check_outs: checkOut.list.length,
      requests,
      errors: errors.length,
      first_errors: errors.slice(0, 5),
      rate_limited: rateLimited,
      kiosk_latest_send_ms: latestSend,
      present_at_end: present.ok ? ((present.data as { present_ids: string[] }).present_ids?.length ?? null) : null,
      latency: {
        check_in: summary(checkIn),
        check_out: summary(checkOut),
        presence: summary(presence),
        roster: summary(roster),
        event_feed: summary(feed),
      },
      syncs,
      by_tenth: checkInByTenth.map((set, t) => ({
        tenth: t + 1,
        check_ins: set.list.length,
        check_in: summary(set),
        presence: summary(presenceByTenth[t] as Timed),
        cpu_share: tenthCpu[t],
      })),
      cpu: {
        server_ms: last.server_cpu_ms,
        postgres_ms: last.postgres_cpu_ms,
        load_generator_ms: last.self_cpu_ms,
        server_share: share(last.server_cpu_ms, last.at_s),
        postgres_share: share(last.postgres_cpu_ms, last.at_s),
        share_of_one_core: share(last.server_cpu_ms + last.postgres_cpu_ms, last.at_s),
        busiest_interval: busiest,
        per_request_ms: (last.server_cpu_ms + last.postgres_cpu_ms) / Math.max(1, requests),
        sample_every_s: sampleEveryMs / 1000,
      },
      memory: {
        server_rss_mb_start: samples[0]?.server_rss_mb,
        server_rss_mb_end: last.server_rss_mb,
        server_rss_mb_max_sampled: Math.max(...samples.map((s) => s.server_rss_mb)),
        ...memory,
        backends_max: Math.max(...samples.map((s) => s.backends)),
      },
      load: {
        start: samples[0]?.load1,
        mean_1min: samples.reduce((n, s) => n + s.load1, 0) / samples.length,
        max_1min: Math.max(...samples.map((s) => s.load1)),
        end: loadavg(),
      },
    };

    const ms = (n: number) => `${n.toFixed(1)} ms`;
    const pct = (n: number | undefined) => (n === undefined ? "–" : `${(100 * n).toFixed(1)} %`);
    const l = result.latency;
    out(
      `\nmorning: ${result.check_ins.total} check-ins (${onlineIns} at ${KIOSKS} kiosks, ${offlineIns} from ${OFFLINE_DEVICES} offline devices in ${syncs.length} syncs) and ${result.check_outs} check-outs over ${minutes} min (${seconds.toFixed(1)} s); ${LEADERS} leaders reading presence every ${PRESENCE_EVERY_S} s and the feed every ${FEED_EVERY_S} s`,
    );
    out(
      `  node/server.ts in a child process, production defaults; ${requests} requests, ${errors.length} errors, ${rateLimited} rate-limited`,
    );
    out("| request | n | mean | p50 | p99 | max |");
    out("|---|---|---|---|---|---|");
    for (const [label, s] of [
      ["check-in (kiosk)", l.check_in],
      ["check-out (kiosk)", l.check_out],
      ["presence (leader)", l.presence],
      ["roster (leader)", l.roster],
      ["event feed (leader)", l.event_feed],
    ] as const) {
      out(`| ${label} | ${s.n} | ${ms(s.mean_ms)} | ${ms(s.p50_ms)} | ${ms(s.p99_ms)} | ${ms(s.max_ms)} |`);
    }
    for (const s of syncs)
      out(`  sync: device ${s.device} at ${s.at_s.toFixed(0)} s, ${s.records} records, ${ms(s.ms)}: ${JSON.stringify(s.counts)}`);
    out(`  a kiosk sent at most ${ms(latestSend)} after its schedule; present at the end: ${result.present_at_end}`);
    out("| tenth | check-ins | check-in p50 | p99 | presence p50 | p99 | server + Postgres CPU, share of one core |");
    out("|---|---|---|---|---|---|---|");
    for (const t of result.by_tenth) {
      out(
        `| ${t.tenth} | ${t.check_ins} | ${ms(t.check_in.p50_ms)} | ${ms(t.check_in.p99_ms)} | ${ms(t.presence.p50_ms)} | ${ms(t.presence.p99_ms)} | ${pct(t.cpu_share)} |`,
      );
    }
    const c = result.cpu;
    out(
      `  CPU over the morning: server ${(c.server_ms / 1000).toFixed(1)} s, Postgres backends ${(c.postgres_ms / 1000).toFixed(1)} s = ${pct(c.share_of_one_core)} of one core (server ${pct(c.server_share)}, Postgres ${pct(c.postgres_share)}), ${pct(c.share_of_one_core / result.cores)} of the machine's ${result.cores}; ${c.per_request_ms.toFixed(1)} ms a request`,
    );
    out(
      `  busiest ${c.busiest_interval.seconds.toFixed(1)} s interval (from ${c.busiest_interval.at_s.toFixed(0)} s): ${pct(c.busiest_interval.total)} of one core (server ${pct(c.busiest_interval.server)}, Postgres ${pct(c.busiest_interval.postgres)}); the load generator used ${(c.load_generator_ms / 1000).toFixed(1)} s`,
    );
    const m = result.memory;
    out(
      `  server RSS ${m.server_rss_mb_start?.toFixed(0)} MB at the start, ${m.server_rss_mb_end.toFixed(0)} MB at the end, peak ${m.server_peak_rss_mb.toFixed(0)} MB; its ${m.backends_max} Postgres backends' private memory ${m.backends_rss_anon_mb.toFixed(0)} MB at the end`,
    );
    out(
      `  load average (1 min): ${result.load.start?.toFixed(2)} at the start, mean ${result.load.mean_1min.toFixed(2)}, max ${result.load.max_1min.toFixed(2)}; at the end ${result.load.end.map((n) => n.toFixed(2)).join(" ")}`,
    );
    return result;
  } finally {
    await server.stop();
  }
}
