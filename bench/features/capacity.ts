/**
 * What enforcing room capacity costs a write: the same writes through the
 * real app on two scratch databases from the same migrations, one with the
 * capacity rule (the counting triggers of *_room_occupancy_counts.sql and
 * the check they queue) and one with those triggers disabled, requests
 * alternating between the two. Every participant goes into a room with a
 * capacity (100 places), so the enforced side updates the room's count on
 * every placement; the
 * single writes run with 0 to 30 people in a room, a dormitory's size (the
 * bulk rounds then add 50 more to each of the API's 20 rooms). The same
 * single writes are then compared as SQL alone (no HTTP), where the
 * rule's extra work stands out of far less noise.
 *
 *   npm run bench:capacity                   # embedded Postgres, or the server of DATABASE_URL
 *   npm run bench:capacity -- --rounds 600
 *
 * Read the ratios, not the absolute times (a busy 2-core machine).
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
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

const { values } = parseArgs({
  options: { rounds: { type: "string", default: "400" }, only: { type: "string" } },
});
/** `--only api` or `--only sql`: one of the two comparisons. */
const ONLY = values.only;
const ROUNDS = Number(values.rounds);
const ROOMS = 20;
const CAPACITY = 100;
/** The rule: disabled on the "off" side. */
const CAPACITY_TRIGGERS: Array<[table: string, trigger: string]> = [
  ["public.participants", "participants_count_room_insert"],
  ["public.participants", "participants_count_room_update"],
  ["public.participants", "participants_count_room_delete"],
  ["public.rooms", "rooms_track_capacity_insert"],
  ["public.rooms", "rooms_track_capacity_update"],
  ["private.room_occupancy", "room_occupancy_within_capacity"],
  ["public.audit_events", "audit_events_note_capacity_override"],
];
const out = (line = "") => process.stdout.write(`${line}\n`);

interface Side {
  name: string;
  /** The database's URL and the tenant's claims, for the SQL-level comparison. */
  url: string;
  claims: string;
  request(path: string, init: RequestInit): Promise<Response> | Response;
  instanceId: string;
  rooms: string[];
  /** A participant in rooms[0], renamed by one scenario. */
  resident: string;
  /** A participant moved between rooms[0] and rooms[1] by another. */
  mover: string;
}

async function side(
  adminUrl: string,
  admin: pg.Client,
  name: string,
  enforced: boolean,
): Promise<Side & { close(): Promise<void> }> {
  const database = `camp_bench_capacity_${randomBytes(4).toString("hex")}`;
  await admin.query(`create database ${database}`);
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  await migrate(url.toString());
  const db = new Database(url.toString(), { max: 4 });
  if (!enforced) {
    for (const [table, trigger] of CAPACITY_TRIGGERS) await db.query(`alter table ${table} disable trigger ${trigger}`);
  }
  const tenant = await createTenant(db, "Bench", "admin@bench.test");
  const app = createApp({ db, config: loadConfig({ RATE_LIMIT_PER_MINUTE: "0", LOG_LEVEL: "error" }) });
  const headers = { "X-API-Key": tenant.api_key, "Content-Type": "application/json" };
  const post = async (path: string, body: unknown) => {
    const res = await app.request(path, { method: "POST", headers, body: JSON.stringify(body) });
    if (res.status !== 201) throw new Error(`${name}: set-up ${path} answered ${res.status}: ${await res.text()}`);
    return ((await res.json()) as { data: { id: string } }).data;
  };
  const instanceId = (await post("/api/v1/instances", { name: "Camp" })).id;
  const blockId = (await post("/api/v1/blocks", { name: "North", instance_id: instanceId })).id;
  const rooms: string[] = [];
  // ROOMS for the API's writes, twice as many for the SQL-only creates (which are three times as many).
  for (let i = 0; i < ROOMS * 3; i++) {
    rooms.push(
      (await post("/api/v1/rooms", { room_number: `${i + 1}`, instance_id: instanceId, block_id: blockId, capacity: CAPACITY }))
        .id,
    );
  }
  const person = (user_id: string, room_id: string) => ({
    user_id,
    instance_id: instanceId,
    first_name: "A",
    surname: "B",
    room_id,
  });
  const resident = (await post("/api/v1/participants", person("resident", rooms[0] as string))).id;
  // Statistics, as a database in use has them: on a fresh one the planner, knowing nothing of
  // participants, may count a room's occupants by reading them all (until autovacuum analyzes).
  await db.query("analyze");
  const mover = (await post("/api/v1/participants", person("mover", rooms[0] as string))).id;
  const claims = JSON.stringify({ role: "camp_api", tenant_id: tenant.tenant_id, sub: tenant.user_id, app_role: "admin" });
  return {
    name,
    url: url.toString(),
    claims,
    request: (path, init) => app.request(path, { ...init, headers: { ...headers, ...(init.headers as Record<string, string>) } }),
    instanceId,
    rooms,
    resident,
    mover,
    async close() {
      await db.close();
      await admin.query(`drop database if exists ${database} with (force)`);
    },
  };
}

interface Stat {
  mean: number;
  p50: number;
}

const stat = (list: number[]): Stat => {
  const sorted = [...list].sort((a, b) => a - b);
  return { mean: list.reduce((a, b) => a + b, 0) / list.length, p50: sorted[Math.floor(sorted.length / 2)] as number };
};

async function compare(title: string, sides: Side[], run: (s: Side, i: number) => Promise<Response> | Response, rounds = ROUNDS) {
  const times = sides.map(() => [] as number[]);
  for (let i = 0; i < rounds; i++) {
    // Alternate which side goes first, so neither always follows the other's write.
    const order = i % 2 === 0 ? [0, 1] : [1, 0];
    for (const n of order) {
      const s = sides[n] as Side;
      const started = performance.now();
      const res = await run(s, i);
      const text = await res.text();
      if (res.status >= 400) throw new Error(`${s.name}: ${res.status} ${text}`);
      (times[n] as number[]).push(performance.now() - started);
    }
  }
  const [off, on] = times.map(stat) as [Stat, Stat];
  out(`\n${title} (${rounds} rounds, alternating)`);
  out(`  rule off  mean ${off.mean.toFixed(3)} ms  p50 ${off.p50.toFixed(3)} ms`);
  out(
    `  rule on   mean ${on.mean.toFixed(3)} ms  p50 ${on.p50.toFixed(3)} ms  ` +
      `(mean x${(on.mean / off.mean).toFixed(3)}, p50 x${(on.p50 / off.p50).toFixed(3)})`,
  );
}

/** CPU time (user + system) a process has used, in ms, where /proc shows it (Postgres on this machine). */
function processCpuMs(pid: number): number | undefined {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
    // utime and stime: fields 14 and 15 of the line, in clock ticks (100 a second on Linux).
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
}

/**
 * The same placements without HTTP: one transaction per write on one
 * connection per side, opened as the API opens one (role, claims), the
 * write a prepared statement as the API's are, without waiting for the WAL
 * flush (synchronous_commit off: both sides would wait alike, and on a busy
 * disk the wait is most of the time and all of the noise). Besides the
 * time, the CPU the side's backend spent (from /proc, when Postgres runs on
 * this machine): a busy machine stretches times, hardly CPU.
 */
async function compareSql(
  title: string,
  sides: Side[],
  text: (s: Side) => string,
  values: (s: Side, i: number) => unknown[],
  rounds = ROUNDS * 3,
) {
  const clients = await Promise.all(
    sides.map(async (s) => {
      const client = new pg.Client({ connectionString: s.url });
      await client.connect();
      const pid = (await client.query<{ pid: number }>("select pg_backend_pid() as pid")).rows[0]?.pid as number;
      return { client, pid };
    }),
  );
  try {
    const times = sides.map(() => [] as number[]);
    const cpu = sides.map(() => 0);
    for (let i = 0; i < rounds; i++) {
      const order = i % 2 === 0 ? [0, 1] : [1, 0];
      for (const n of order) {
        const s = sides[n] as Side;
        const { client, pid } = clients[n] as { client: pg.Client; pid: number };
        const started = performance.now();
        const before = processCpuMs(pid);
        await client.query(
          `begin; select set_config('role', 'camp_api', true), set_config('synchronous_commit', 'off', true), set_config('request.jwt.claims', ${client.escapeLiteral(s.claims)}, true)`,
        );
        await client.query({ name: title.replace(/\W+/g, "_"), text: text(s), values: values(s, i) });
        await client.query("commit");
        const after = processCpuMs(pid);
        if (before !== undefined && after !== undefined) cpu[n] = (cpu[n] as number) + after - before;
        (times[n] as number[]).push(performance.now() - started);
      }
    }
    const [off, on] = times.map(stat) as [Stat, Stat];
    const [cpuOff, cpuOn] = cpu.map((ms) => (ms * 1000) / rounds) as [number, number];
    out(`\n${title} (${rounds} rounds, alternating, SQL only)`);
    out(
      `  rule off  mean ${(off.mean * 1000).toFixed(0)} µs  p50 ${(off.p50 * 1000).toFixed(0)} µs  backend CPU ${cpuOff.toFixed(0)} µs`,
    );
    out(
      `  rule on   mean ${(on.mean * 1000).toFixed(0)} µs  p50 ${(on.p50 * 1000).toFixed(0)} µs  backend CPU ${cpuOn.toFixed(0)} µs  ` +
        `(p50 x${(on.p50 / off.p50).toFixed(3)}; CPU +${(cpuOn - cpuOff).toFixed(0)} µs, x${(cpuOn / cpuOff).toFixed(3)})`,
    );
  } finally {
    for (const { client } of clients) await client.end();
  }
}

async function main() {
  let adminUrl = process.env.DATABASE_URL;
  let stopEmbedded: (() => Promise<void>) | undefined;
  if (!adminUrl) {
    const embedded = await startEmbeddedPostgres(join(tmpdir(), `camp-bench-capacity-${process.pid}`), { persistent: false });
    adminUrl = embedded.adminUrl;
    stopEmbedded = embedded.stop;
  }
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  const off = await side(adminUrl, admin, "rule off", false);
  const on = await side(adminUrl, admin, "rule on", true);
  try {
    const sides = [off, on];
    const create = (s: Side, i: number, tag = "") =>
      s.request("/api/v1/participants", {
        method: "POST",
        body: JSON.stringify({
          user_id: `u${tag}-${i}`,
          instance_id: s.instanceId,
          first_name: "Ada",
          surname: "Lovelace",
          room_id: s.rooms[i % ROOMS],
        }),
      });
    // Warm both sides' connections and plans first.
    if (ONLY !== "sql") await apiComparisons(sides, create);
    if (ONLY !== "api") await sqlComparisons(sides);
  } finally {
    await off.close();
    await on.close();
    await admin.end();
    await stopEmbedded?.();
  }
}

async function apiComparisons(sides: Side[], create: (s: Side, i: number, tag?: string) => Promise<Response> | Response) {
  await compare("warm-up", sides, (s, i) => create(s, i, "w"), 50);
  await compare("create one participant into a room (POST /participants)", sides, (s, i) => create(s, i));
  await compare("move one participant to another room (PATCH /participants/{id} {room_id})", sides, (s, i) =>
    s.request(`/api/v1/participants/${s.mover}`, {
      method: "PATCH",
      body: JSON.stringify({ room_id: s.rooms[(i + 1) % 2] }),
    }),
  );
  // The control: the rule does not run for this write; its ratio is the noise of the run.
  await compare("update one participant in a room, room unchanged (PATCH /participants/{id} {surname})", sides, (s, i) =>
    s.request(`/api/v1/participants/${s.resident}`, { method: "PATCH", body: JSON.stringify({ surname: `S${i}` }) }),
  );
  await compare(
    "bulk create of 100 participants over 20 rooms (POST /participants/bulk)",
    sides,
    (s, i) =>
      s.request("/api/v1/participants/bulk", {
        method: "POST",
        body: JSON.stringify({
          participants: Array.from({ length: 100 }, (_, j) => ({
            user_id: `b-${i}-${j}`,
            instance_id: s.instanceId,
            first_name: "Bulk",
            surname: "Row",
            room_id: s.rooms[j % ROOMS],
          })),
        }),
      }),
    // Ten rounds add 50 to each room, within the 100 places after the single creates.
    10,
  );
}

async function sqlComparisons(sides: Side[]) {
  await compareSql(
    "create one participant into a room",
    sides,
    () => `insert into public.participants (instance_id, user_id, first_name, surname, block_id, room_id)
      select $1, $2, 'Ada', 'Lovelace', r.block_id, r.id from public.rooms r where r.id = $3`,
    (s, i) => [s.instanceId, `sql-${i}`, s.rooms[ROOMS + (i % (2 * ROOMS))]],
  );
  await compareSql(
    "move one participant to another room",
    sides,
    () => "update public.participants set room_id = $2 where id = $1",
    (s, i) => [s.mover, s.rooms[(i + 1) % 2]],
  );
  await compareSql(
    "update one participant in a room, room unchanged (control)",
    sides,
    () => "update public.participants set surname = $2 where id = $1",
    (s, i) => [s.resident, `S${i}`],
  );
}

main().catch((error) => {
  process.stderr.write(`capacity bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 1;
});
