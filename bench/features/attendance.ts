/**
 * What being on site costs (issue 41): a check-in against a participant
 * PATCH, side by side; an offline sync of 1,000 records (records per second),
 * the same batch uploaded again, and the worst sync a key can send (1,000
 * shuffled movements of one child, each settling its whole timeline); the
 * presence answer of an instance of 2,000 participants; and a morning of 500
 * check-ins in 10 minutes (0.83 a second) against the rate this machine
 * sustains, with the presence answer read while they run.
 *
 *   npm run bench:attendance                 # embedded Postgres, or the server of DATABASE_URL
 *   flock /tmp/camp-heavy.lock npm run bench:attendance -- --rounds 300
 *   flock /tmp/camp-heavy.lock npm run bench:attendance -- --morning [--minutes 10] [--check-ins 500]
 *
 * --morning runs only the paced morning of bench/features/attendance-morning.ts
 * (the real server over HTTP, on the same camp of 2,000) instead of the rest.
 *
 * In process (the app's fetch, no HTTP), one scratch database, requests of
 * the compared kinds interleaved, so a noisy machine slows all alike: read
 * the ratios. Writes a JSON summary to bench/results/attendance-<time>.json.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
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
import { Latencies } from "../harness/stats.ts";
import { morning } from "./attendance-morning.ts";

const { values } = parseArgs({
  options: {
    rounds: { type: "string", default: "300" },
    concurrency: { type: "string", default: "4" },
    "compare-rounds": { type: "string", default: "2" },
    morning: { type: "boolean", default: false },
    minutes: { type: "string", default: "10" },
    "check-ins": { type: "string", default: "500" },
    out: { type: "string" },
  },
});
const MINUTES = Number(values.minutes);
if (!(MINUTES > 0)) throw new Error("--minutes must be a positive number");
const COMPARE_ROUNDS = Number(values["compare-rounds"]);
const ROUNDS = Number(values.rounds);
const CONCURRENCY = Number(values.concurrency);
const PARTICIPANTS = 2_000;
const SYNC = 1_000;
const MORNING = 500;
const MORNING_RATE = MORNING / 600;
// Participants [0, ROUNDS) check in once each; the sync takes [990, 1990), the warm-up the last 10.
if (ROUNDS > PARTICIPANTS - SYNC - 10)
  throw new Error(`--rounds at most ${PARTICIPANTS - SYNC - 10} (one check-in per participant)`);
const out = (line = "") => process.stdout.write(`${line}\n`);
const ms = (n: number) => `${n.toFixed(2)} ms`;

type App = ReturnType<typeof createApp>;

interface Timed {
  latencies: Latencies;
  list: number[];
}
const timedSet = (): Timed => ({ latencies: new Latencies(), list: [] });
const record = (set: Timed, took: number) => {
  set.latencies.recordMs(took);
  set.list.push(took);
};
const mean = (list: number[]) => list.reduce((a, b) => a + b, 0) / list.length;
const summary = (set: Timed) => ({
  n: set.list.length,
  mean_ms: mean(set.list),
  p50_ms: set.latencies.percentileMs(50),
  p99_ms: set.latencies.percentileMs(99),
});

const MIGRATIONS = join(import.meta.dirname, "..", "..", "sql", "migrations");

/** A function's definition as an earlier migration wrote it, as a create or replace. */
function definitionOf(file: string, name: string): string {
  const text = readFileSync(join(MIGRATIONS, file), "utf8");
  let start = text.indexOf(`create function ${name}(`);
  if (start < 0) start = text.indexOf(`create or replace function ${name}(`);
  const end = text.indexOf("$$;", text.indexOf("as $$", start));
  if (start < 0 || end < 0) throw new Error(`${name} not found in ${file}`);
  return text.slice(start, end + 3).replace(/^create function/, "create or replace function");
}

/** The sync's functions as they were before *_attendance_sync_cost.sql. */
const BEFORE_SYNC_COST = [
  definitionOf("20261128030000_attendance.sql", "private.attendance_settle"),
  definitionOf("20261128030400_attendance_events.sql", "private.event_type_of"),
  definitionOf("20261128140000_roll_call_event_counts.sql", "private.derive_events"),
];

/** A scratch database: migrated, a tenant, an instance of `size` participants each with an authorised pickup. */
async function scratch(adminUrl: string, admin: pg.Client, label: string, size: number, before = false) {
  const name = `camp_attendance_bench_${label}_${randomBytes(4).toString("hex")}`;
  await admin.query(`create database ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  await migrate(url.toString());
  const db = new Database(url.toString(), { max: CONCURRENCY + 4 });
  if (before) for (const statement of BEFORE_SYNC_COST) await db.asOwner((sql) => sql.query(statement));
  const tenant = await createTenant(db, "Bench", "admin@bench.test");
  const app: App = createApp({ db, config: loadConfig({ RATE_LIMIT_PER_MINUTE: "0" }) });
  const headers = { "X-API-Key": tenant.api_key, "Content-Type": "application/json" };
  const request = async (method: string, path: string, body?: unknown) => {
    const started = performance.now();
    const res = await app.request(`/api/v1${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    const took = performance.now() - started;
    if (res.status >= 400) throw new Error(`${label}: ${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
    return { took, body: JSON.parse(text) as { data: never } };
  };
  const close = async () => {
    await db.close();
    await admin.query(`drop database if exists ${name} with (force)`);
  };
  return { db, tenant, request, close, size };
}

async function main() {
  let adminUrl = process.env.DATABASE_URL;
  let stopEmbedded: (() => Promise<void>) | undefined;
  if (!adminUrl) {
    const embedded = await startEmbeddedPostgres(join(tmpdir(), `camp-attendance-bench-${process.pid}`), { persistent: false });
    adminUrl = embedded.adminUrl;
    stopEmbedded = embedded.stop;
  }
  const name = `camp_attendance_bench_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const db = new Database(url.toString(), { max: CONCURRENCY + 4 });
  const results: Record<string, unknown> = { rounds: ROUNDS, concurrency: CONCURRENCY, started_at: new Date().toISOString() };
  try {
    await migrate(url.toString());
    const tenant = await createTenant(db, "Bench", "admin@bench.test");
    const config = loadConfig({ RATE_LIMIT_PER_MINUTE: "0" });
    const app: App = createApp({ db, config });
    const headers = { "X-API-Key": tenant.api_key, "Content-Type": "application/json" };
    const request = async (method: string, path: string, body?: unknown) => {
      const started = performance.now();
      const res = await app.request(`/api/v1${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      const took = performance.now() - started;
      if (res.status >= 400) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
      return { took, body: JSON.parse(text) as { data: never } };
    };

    // An instance of 2,000 participants in 6 supergroups of 4 subgroups, 4 blocks of 15
    // rooms, each with one authorised pickup; a second child alone for the worst sync.
    const instance = ((await request("POST", "/instances", { name: "Summer camp" })).body.data as { id: string }).id;
    const ids = await db.asOwner(async (sql) => {
      await sql.query(
        `insert into public.supergroups (tenant_id, instance_id, name) select $1, $2, 'Group ' || g from generate_series(1, 6) g`,
        [tenant.tenant_id, instance],
      );
      await sql.query(
        `insert into public.subgroups (tenant_id, instance_id, parent_supergroup_id, name)
         select $1, $2, s.id, s.name || '.' || g from public.supergroups s cross join generate_series(1, 4) g where s.instance_id = $2`,
        [tenant.tenant_id, instance],
      );
      await sql.query(
        `insert into public.blocks (tenant_id, instance_id, name) select $1, $2, 'Block ' || g from generate_series(1, 4) g`,
        [tenant.tenant_id, instance],
      );
      await sql.query(
        `insert into public.rooms (tenant_id, instance_id, block_id, room_number, capacity)
         select $1, $2, b.id, b.name || '-' || g, 40 from public.blocks b cross join generate_series(1, 15) g where b.instance_id = $2`,
        [tenant.tenant_id, instance],
      );
      const rows = await sql.query<{ id: string }>(
        `with subs as (select s.id, s.parent_supergroup_id, row_number() over (order by s.name) - 1 as n from public.subgroups s where s.instance_id = $2),
              rooms as (select r.id, r.block_id, row_number() over (order by r.room_number) - 1 as n from public.rooms r where r.instance_id = $2)
         insert into public.participants (tenant_id, instance_id, user_id, first_name, surname, super_group_id, sub_group_id, block_id, room_id)
         select $1, $2, 'u' || g, 'First' || g, 'Last' || g, s.parent_supergroup_id, s.id, r.block_id, r.id
         from generate_series(0, $3 - 1) g
         join subs s on s.n = g % 24
         join rooms r on r.n = g % 60
         order by g
         returning id`,
        [tenant.tenant_id, instance, PARTICIPANTS],
      );
      return rows.map((r) => r.id);
    });
    const lone = await db.asOwner(
      async (sql) =>
        (
          await sql.query<{ id: string }>(
            `insert into public.participants (tenant_id, instance_id, user_id, first_name, surname)
             values ($1, $2, 'lone', 'Lone', 'Child') returning id`,
            [tenant.tenant_id, instance],
          )
        )[0]?.id as string,
    );
    const pickups = new Map(
      await db.asOwner(async (sql) =>
        (
          await sql.query<{ id: string; participant_id: string }>(
            `insert into public.participant_contacts (tenant_id, participant_id, name, authorised_pickup)
             select $1, p, 'Parent of ' || p, true from unnest($2::uuid[]) p returning id, participant_id`,
            [tenant.tenant_id, [...ids, lone]],
          )
        ).map((r) => [r.participant_id, r.id] as const),
      ),
    );
    await db.asOwner((sql) => sql.query("analyze"));
    const at = (minutesAgo: number) => new Date(Date.now() - minutesAgo * 60_000).toISOString();
    const save = (kind: string) => {
      results.finished_at = new Date().toISOString();
      const dir = values.out ?? join(import.meta.dirname, "..", "results");
      mkdirSync(dir, { recursive: true });
      const file = join(dir, `${kind}-${results.started_at as string}.json`.replace(/:/g, "-"));
      writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
      out(`results: ${file}`);
    };

    if (values.morning) {
      results.morning_paced = await morning(
        { url: url.toString(), instance, ids, pickups, request },
        MINUTES,
        Number(values["check-ins"]),
        out,
      );
      save("attendance-morning");
      return;
    }

    // Warm up: a few of each request on participants the measured rounds do not use.
    for (let i = 0; i < 10; i++) {
      const id = ids[PARTICIPANTS - 1 - i] as string;
      await request("PATCH", `/participants/${id}`, { rank: `w${i}` });
      await request("POST", "/attendance", { participant_id: id, direction: "in" });
      await request("POST", "/attendance", { participant_id: id, direction: "out", pickup_contact_id: pickups.get(id) });
      await request("GET", `/instances/${instance}/presence`);
    }

    // 1. A check-in against a participant PATCH, interleaved in alternating order.
    const checkIn = timedSet();
    const patch = timedSet();
    for (let i = 0; i < ROUNDS; i++) {
      const id = ids[i] as string;
      const doCheckIn = async () =>
        record(checkIn, (await request("POST", "/attendance", { participant_id: id, direction: "in" })).took);
      const doPatch = async () => record(patch, (await request("PATCH", `/participants/${id}`, { rank: `r${i}` })).took);
      if (i % 2) {
        await doCheckIn();
        await doPatch();
      } else {
        await doPatch();
        await doCheckIn();
      }
    }
    const one = { check_in: summary(checkIn), patch: summary(patch) };
    results.check_in_vs_patch = one;
    out(`\n1. check-in against a participant PATCH (${ROUNDS} rounds, interleaved, alternating order)`);
    out("| request | mean | p50 | p99 |");
    out("|---|---|---|---|");
    out(`| PATCH participant | ${ms(one.patch.mean_ms)} | ${ms(one.patch.p50_ms)} | ${ms(one.patch.p99_ms)} |`);
    out(
      `| POST /attendance (check-in) | ${ms(one.check_in.mean_ms)} | ${ms(one.check_in.p50_ms)} | ${ms(one.check_in.p99_ms)} |`,
    );
    out(
      `| check-in ÷ PATCH | ×${(one.check_in.mean_ms / one.patch.mean_ms).toFixed(2)} | ×${(one.check_in.p50_ms / one.patch.p50_ms).toFixed(2)} | ×${(one.check_in.p99_ms / one.patch.p99_ms).toFixed(2)} |`,
    );

    // 2. Syncs of 1,000 records: check-ins of 1,000 children, the same batch again, their
    // check-outs, and the worst: 1,000 shuffled movements of one child.
    const syncIds = ids.slice(PARTICIPANTS - SYNC - 10, PARTICIPANTS - 10);
    const ins = syncIds.map((id) => ({
      participant_id: id,
      direction: "in",
      recorded_at: at(120),
      nonce: randomUUID(),
      location: "Gate",
    }));
    const outs = syncIds.map((id) => ({
      participant_id: id,
      direction: "out",
      recorded_at: at(60),
      nonce: randomUUID(),
      location: "Gate",
      pickup_contact_id: pickups.get(id),
    }));
    let seed = 41;
    const shuffled = Array.from({ length: SYNC }, (_, i) => ({
      participant_id: lone,
      direction: i % 2 ? "out" : "in",
      recorded_at: at(1_200 - i),
      nonce: randomUUID(),
      location: "x".repeat(200),
      ...(i % 2 ? { pickup_contact_id: pickups.get(lone) } : {}),
    }))
      .map((r) => {
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        return { r, k: seed };
      })
      .sort((a, b) => a.k - b.k)
      .map(({ r }) => r);
    const syncs: Record<string, { ms: number; records_per_s: number; counts: unknown }> = {};
    for (const [label, records] of [
      ["1,000 check-ins of 1,000 children", ins],
      ["the same 1,000 again (all duplicates)", ins],
      ["1,000 check-outs to authorised pickups", outs],
      ["1,000 shuffled movements of one child (worst)", shuffled],
    ] as const) {
      const answer = await request("POST", "/attendance/sync", { records });
      const counts = (answer.body.data as { counts: unknown }).counts;
      syncs[label] = { ms: answer.took, records_per_s: (SYNC * 1000) / answer.took, counts };
    }
    results.syncs = syncs;
    out(`\n2. POST /attendance/sync of ${SYNC} records (one request each)`);
    out("| batch | time | records/s | outcomes |");
    out("|---|---|---|---|");
    for (const [label, s] of Object.entries(syncs)) {
      out(`| ${label} | ${ms(s.ms)} | ${Math.round(s.records_per_s)} | ${JSON.stringify(s.counts)} |`);
    }

    // 3. The presence answer of the instance of 2,000 (ROUNDS checked in now), beside a
    // participant GET and a list page as yardsticks.
    const presence = timedSet();
    const get = timedSet();
    const page = timedSet();
    for (let i = 0; i < ROUNDS; i++) {
      record(presence, (await request("GET", `/instances/${instance}/presence`)).took);
      record(get, (await request("GET", `/participants/${ids[i]}`)).took);
      record(page, (await request("GET", `/participants?instance_id=${instance}&limit=50`)).took);
    }
    const present = ((await request("GET", `/instances/${instance}/presence`)).body.data as { present_ids?: string[] })
      .present_ids?.length;
    const three = { presence: summary(presence), get: summary(get), list_page: summary(page), present };
    results.presence = three;
    out(
      `\n3. GET /instances/{id}/presence, ${PARTICIPANTS + 1} participants (${present ?? "?"} present), ${ROUNDS} rounds interleaved`,
    );
    out("| request | mean | p50 | p99 |");
    out("|---|---|---|---|");
    out(`| GET participant (yardstick) | ${ms(three.get.mean_ms)} | ${ms(three.get.p50_ms)} | ${ms(three.get.p99_ms)} |`);
    out(
      `| GET participants, page of 50 (yardstick) | ${ms(three.list_page.mean_ms)} | ${ms(three.list_page.p50_ms)} | ${ms(three.list_page.p99_ms)} |`,
    );
    out(`| GET presence | ${ms(three.presence.mean_ms)} | ${ms(three.presence.p50_ms)} | ${ms(three.presence.p99_ms)} |`);

    // 4. A morning: 500 check-ins as fast as CONCURRENCY kiosks can send them (of children
    // checked out above), while one reader asks for the presence answer over and over.
    const morningIds = syncIds.slice(0, MORNING);
    const busyPresence = timedSet();
    const morningCheckIns = timedSet();
    let next = 0;
    let running = true;
    const started = performance.now();
    const kiosks = Array.from({ length: CONCURRENCY }, async () => {
      for (;;) {
        const id = morningIds[next++];
        if (id === undefined) return;
        record(
          morningCheckIns,
          (await request("POST", "/attendance", { participant_id: id, direction: "in", location: "Kiosk" })).took,
        );
      }
    });
    const reader = (async () => {
      while (running) record(busyPresence, (await request("GET", `/instances/${instance}/presence`)).took);
    })();
    await Promise.all(kiosks);
    const seconds = (performance.now() - started) / 1000;
    running = false;
    await reader;
    const rate = MORNING / seconds;
    const four = {
      check_ins: MORNING,
      seconds,
      sustained_per_s: rate,
      morning_per_s: MORNING_RATE,
      morning_share_of_sustained: MORNING_RATE / rate,
      check_in: summary(morningCheckIns),
      presence_under_load: summary(busyPresence),
      rate_limit_per_minute: Number(loadConfig({}).RATE_LIMIT_PER_MINUTE),
    };
    results.morning = four;
    out(`\n4. a morning: ${MORNING} check-ins from ${CONCURRENCY} kiosks at full speed, presence read meanwhile`);
    out(`  ${MORNING} check-ins in ${seconds.toFixed(1)} s: ${rate.toFixed(1)} a second sustained`);
    out(
      `  a morning of ${MORNING} in 10 minutes is ${MORNING_RATE.toFixed(2)} a second: ${(100 * four.morning_share_of_sustained).toFixed(1)} % of that (${(1 / four.morning_share_of_sustained).toFixed(0)}× headroom)`,
    );
    out(
      `  check-in under that load: p50 ${ms(four.check_in.p50_ms)}, p99 ${ms(four.check_in.p99_ms)}; presence (${four.presence_under_load.n} reads) p50 ${ms(four.presence_under_load.p50_ms)}, p99 ${ms(four.presence_under_load.p99_ms)} (idle: p50 ${ms(three.presence.p50_ms)}, p99 ${ms(three.presence.p99_ms)})`,
    );
    out(
      `  the per-user rate limit (${four.rate_limit_per_minute}/min by default) against one kiosk taking the whole morning: ${(MORNING / 10).toFixed(0)}/min, ${((100 * MORNING) / 10 / four.rate_limit_per_minute).toFixed(1)} % of it`,
    );

    // 5. What *_attendance_sync_cost.sql saved a sync: the same syncs sent to a database with
    // the functions as they were before it, side by side, alternating which goes first.
    if (COMPARE_ROUNDS > 0) {
      const sides = {
        before: await scratch(adminUrl, admin, "before", SYNC, true),
        after: await scratch(adminUrl, admin, "after", SYNC),
      };
      try {
        const people = Object.fromEntries(
          await Promise.all(
            Object.entries(sides).map(async ([label, side]) => {
              const instance = ((await side.request("POST", "/instances", { name: "Camp" })).body.data as { id: string }).id;
              const rows = await side.db.asOwner((sql) =>
                sql.query<{ id: string; pickup: string }>(
                  `with p as (
                     insert into public.participants (tenant_id, instance_id, user_id, first_name, surname)
                     select $1, $2, 'u' || g, 'F' || g, 'L' || g from generate_series(1, $3) g returning id)
                   insert into public.participant_contacts (tenant_id, participant_id, name, authorised_pickup)
                   select $1, p.id, 'Parent', true from p returning participant_id as id, id as pickup`,
                  [side.tenant.tenant_id, instance, SYNC],
                ),
              );
              await side.db.asOwner((sql) => sql.query("analyze"));
              return [label, rows] as const;
            }),
          ),
        ) as Record<"before" | "after", Array<{ id: string; pickup: string }>>;
        const times = { before: [] as number[], after: [] as number[] };
        for (let round = 0; round < COMPARE_ROUNDS; round++) {
          for (const direction of ["in", "out"] as const) {
            const order =
              (round * 2 + (direction === "out" ? 1 : 0)) % 2 ? (["after", "before"] as const) : (["before", "after"] as const);
            for (const label of order) {
              const records = people[label].map((p) => ({
                participant_id: p.id,
                direction,
                recorded_at: at(600 - round * 120 - (direction === "out" ? 60 : 0)),
                nonce: randomUUID(),
                location: "Gate",
                ...(direction === "out" ? { pickup_contact_id: p.pickup } : {}),
              }));
              const answer = await sides[label].request("POST", "/attendance/sync", { records });
              const counts = (answer.body.data as { counts: { accepted: number } }).counts;
              if (counts.accepted !== SYNC) throw new Error(`${label}: ${JSON.stringify(counts)}`);
              times[label].push(answer.took);
            }
          }
        }
        const five = {
          before_ms: times.before,
          after_ms: times.after,
          after_over_before: mean(times.after) / mean(times.before),
        };
        results.sync_cost_migration = five;
        out(
          `\n5. a sync of ${SYNC} check-ins or check-outs of ${SYNC} children, before / after *_attendance_sync_cost.sql (two databases, alternating)`,
        );
        out(
          `  before: ${times.before.map((t) => ms(t)).join(", ")} (mean ${Math.round((SYNC * 1000) / mean(times.before))} records/s)`,
        );
        out(
          `  after:  ${times.after.map((t) => ms(t)).join(", ")} (mean ${Math.round((SYNC * 1000) / mean(times.after))} records/s)`,
        );
        out(`  after ÷ before: ×${five.after_over_before.toFixed(2)}`);
      } finally {
        await sides.before.close();
        await sides.after.close();
      }
    }

    const written = await db.asOwner((sql) =>
      sql.one<{ movements: number; events: number }>(
        "select (select count(*)::int from public.attendance_movements) as movements, (select count(*)::int from public.events) as events",
      ),
    );
    out(`\nmovements stored: ${written?.movements}; events written: ${written?.events}`);
    save("attendance");
  } finally {
    await db.close();
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.end();
    await stopEmbedded?.();
  }
}

main().catch((error) => {
  process.stderr.write(`attendance bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 1;
});
