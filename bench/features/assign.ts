import pg from "pg";
import { Database } from "../../functions/db/database.ts";
import {
  addCamp,
  benchTenant,
  type Camp,
  dropScratch,
  load,
  log,
  ServerProcess,
  scratchDatabase,
} from "../harness/bulk-support.ts";

/**
 * npm run bench:assign — 1,000 participants moved in one
 * POST /api/v1/participants/assign to the real Node server: a rotation of
 * everyone one room on (and one subgroup on) through 50 rooms of 20 beds,
 * every room full before and after, so the capacity rule is judged on the
 * final state of 1,000 moves at once. Side by side, in each round:
 *
 * - the same set as a dry run (planned, written in a savepoint, checked, rolled back);
 * - the floor: the route's one UPDATE of the same 1,000 rows sent as the owner over
 *   one connection (the same triggers, foreign keys, audit events and capacity
 *   checks at commit; no HTTP, JSON, validation, planning reads or RLS);
 * - what a client does without assign: 1,000 PATCH /participants/{id} one after the
 *   other (in a camp whose rooms have no capacity: one at a time, full rooms refuse
 *   every step of a rotation).
 *
 * The best and median of ROUNDS rounds are printed, with the load average.
 */

const PEOPLE = 1_000;
const ROOMS = 50;
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const PORT = Number(process.env.BENCH_PORT ?? 8741);

interface Person {
  id: string;
  n: number;
}

/** PEOPLE participants of the camp, participant n in room n % ROOMS and subgroup n % 16, as the owner. */
async function seatEveryone(db: Database, tenantId: string, camp: Camp, tag: string, capacity: number | null): Promise<Person[]> {
  return db.asOwner(async (sql) => {
    const rows = Array.from({ length: PEOPLE }, (_, n) => {
      const room = camp.rooms[n % ROOMS] as Camp["rooms"][number];
      const sub = camp.subgroups[n % camp.subgroups.length] as Camp["subgroups"][number];
      return {
        id: crypto.randomUUID(),
        n,
        user_id: `${tag}-${n}`,
        super_group_id: sub.supergroupId,
        sub_group_id: sub.id,
        block_id: room.blockId,
        room_id: room.id,
        room_number: room.number,
      };
    });
    await sql.query(
      `insert into public.participants (id, tenant_id, instance_id, user_id, first_name, surname,
         super_group_id, sub_group_id, block_id, room_id, room_number)
       select r.id, $1, $2, r.user_id, 'Kim', 'Camper', r.super_group_id, r.sub_group_id, r.block_id, r.room_id, r.room_number
       from jsonb_to_recordset($3::jsonb)
         as r(id uuid, user_id text, super_group_id uuid, sub_group_id uuid, block_id uuid, room_id uuid, room_number text)`,
      [tenantId, camp.instanceId, JSON.stringify(rows)],
    );
    await sql.query("update public.rooms set capacity = $2 where id = any($1::uuid[])", [
      camp.rooms.slice(0, ROOMS).map((r) => r.id),
      capacity,
    ]);
    return rows.map(({ id, n }) => ({ id, n }));
  });
}

/** Where participant n goes after `turn` rotations: `turn` rooms and subgroups on. */
function target(camp: Camp, person: Person, turn: number) {
  const room = camp.rooms[(person.n + turn) % ROOMS] as Camp["rooms"][number];
  const sub = camp.subgroups[(person.n + turn) % camp.subgroups.length] as Camp["subgroups"][number];
  return { room, sub };
}

const entries = (camp: Camp, people: Person[], turn: number) =>
  people.map((p) => {
    const { room, sub } = target(camp, p, turn);
    return { participant_id: p.id, room_id: room.id, sub_group_id: sub.id };
  });

async function assign(server: ServerProcess, key: string, body: unknown, dryRun: boolean): Promise<number> {
  const started = performance.now();
  const response = await fetch(`${server.url}/api/v1/participants/assign${dryRun ? "?dry_run=true" : ""}`, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-API-Key": key },
    body: JSON.stringify({ assignments: body }),
  });
  const answer = (await response.json()) as { data?: { changed: number; would_fail: unknown } };
  const ms = performance.now() - started;
  if (response.status !== 200 || answer.data?.changed !== PEOPLE || answer.data.would_fail !== null) {
    throw new Error(`assign answered ${response.status}: ${JSON.stringify(answer).slice(0, 500)}`);
  }
  return ms;
}

/** The route's UPDATE, as the owner, in a transaction of its own (its deferred capacity checks run at commit). */
async function floor(url: string, camp: Camp, people: Person[], turn: number): Promise<number> {
  const rows = people.map((p) => {
    const { room, sub } = target(camp, p, turn);
    return {
      id: p.id,
      super_group_id: sub.supergroupId,
      sub_group_id: sub.id,
      block_id: room.blockId,
      room_id: room.id,
      room_number: room.number,
    };
  });
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const started = performance.now();
    await client.query("begin");
    await client.query(
      `update public.participants t
       set super_group_id = v.super_group_id, sub_group_id = v.sub_group_id, block_id = v.block_id,
           room_id = v.room_id, room_number = v.room_number
       from jsonb_to_recordset($1::jsonb)
         as v(id uuid, super_group_id uuid, sub_group_id uuid, block_id uuid, room_id uuid, room_number text)
       where t.id = v.id and t.deleted_at is null`,
      [JSON.stringify(rows)],
    );
    await client.query("commit");
    return performance.now() - started;
  } finally {
    await client.end();
  }
}

async function patches(server: ServerProcess, key: string, camp: Camp, people: Person[], turn: number): Promise<number> {
  const started = performance.now();
  for (const person of people) {
    const { room, sub } = target(camp, person, turn);
    const response = await fetch(`${server.url}/api/v1/participants/${person.id}`, {
      method: "PATCH",
      headers: { "Content-Type": "application/json", "X-API-Key": key },
      body: JSON.stringify({ room_id: room.id, sub_group_id: sub.id }),
    });
    if (response.status !== 200) throw new Error(`PATCH answered ${response.status}: ${(await response.text()).slice(0, 300)}`);
    await response.arrayBuffer();
  }
  return performance.now() - started;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
const figures = (values: number[]) => ({ best_ms: Math.round(Math.min(...values)), median_ms: Math.round(median(values)) });

async function main() {
  log(`load average before: ${load()}`);
  const url = await scratchDatabase("bench_assign");
  const db = new Database(url, { max: 2 });
  const server = await ServerProcess.start(url, PORT);
  const runs = { assign: [] as number[], dry_run: [] as number[], floor: [] as number[], patches: [] as number[] };
  try {
    const { tenantId, key } = await benchTenant(db);
    const full = await addCamp(db, tenantId, "Full rooms");
    const open = await addCamp(db, tenantId, "Rooms without capacity");
    const seated = await seatEveryone(db, tenantId, full, "full", PEOPLE / ROOMS);
    const loose = await seatEveryone(db, tenantId, open, "open", null);
    // Warm up: the server's first request of a kind prepares its statements.
    await assign(server, key, entries(full, seated, 1), true);
    let turn = 0;
    for (let round = 1; round <= ROUNDS; round++) {
      const dryMs = await assign(server, key, entries(full, seated, turn + 1), true);
      const assignMs = await assign(server, key, entries(full, seated, ++turn), false);
      const floorMs = await floor(url, full, seated, ++turn);
      const patchMs = await patches(server, key, open, loose, round);
      runs.assign.push(assignMs);
      runs.dry_run.push(dryMs);
      runs.floor.push(floorMs);
      runs.patches.push(patchMs);
      log(
        `round ${round}: assign ${Math.round(assignMs)} ms, dry run ${Math.round(dryMs)} ms, ` +
          `owner's UPDATE ${Math.round(floorMs)} ms, 1,000 PATCHes ${Math.round(patchMs)} ms; load ${load()}`,
      );
    }
  } finally {
    await server.stop();
    await db.close();
    await dropScratch(url);
  }
  const summary = {
    moves: PEOPLE,
    rooms: `${ROOMS} rooms of ${PEOPLE / ROOMS} beds, all full before and after`,
    rounds: ROUNDS,
    assign: { ...figures(runs.assign), best_moves_per_s: Math.round((PEOPLE / Math.min(...runs.assign)) * 1000) },
    assign_dry_run: figures(runs.dry_run),
    owner_update_floor: figures(runs.floor),
    patch_one_by_one: figures(runs.patches),
    ratio_assign_to_floor: Number((median(runs.assign) / median(runs.floor)).toFixed(2)),
    ratio_patches_to_assign: Number((median(runs.patches) / median(runs.assign)).toFixed(2)),
    load_average_after: load(),
  };
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
}

await main();
