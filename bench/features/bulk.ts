import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { stringify } from "csv-stringify/sync";
import pg from "pg";
import { from as copyFrom } from "pg-copy-streams";
import { Database } from "../../functions/db/database.ts";
import {
  addCamp,
  type BenchParticipant,
  benchTenant,
  dropScratch,
  load,
  log,
  participant,
  ServerProcess,
  scratchDatabase,
} from "../harness/bulk-support.ts";

/**
 * npm run bench:bulk — 10,000 participants through POST /api/v1/participants/bulk
 * (ten requests of 1,000, one after the other, to the real Node server), side
 * by side with a raw COPY of the same rows into the same table as the owner.
 * COPY runs the same triggers and foreign keys; it skips HTTP, JSON, the API's
 * validation and checks, RLS and the tenant transaction. Each round uses fresh
 * camps; the best and median rounds are printed. Target: ≥ 5,000 rows/s.
 */

const ROWS = 10_000;
const BATCH = 1_000;
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const PORT = Number(process.env.BENCH_PORT ?? 8731);

const COPY_COLUMNS = [
  "tenant_id",
  "instance_id",
  "user_id",
  "first_name",
  "surname",
  "gender",
  "status",
  "date_of_birth",
  "school_year",
  "unit_name",
  "school_institute",
  "arrival_date",
  "departure_date",
  "super_group_id",
  "sub_group_id",
  "block_id",
  "room_id",
  "room_number",
];

const apiRow = ({ filled: _filled, names: _names, ...row }: BenchParticipant) => row;

async function viaApi(server: ServerProcess, key: string, rows: BenchParticipant[]): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < rows.length; i += BATCH) {
    const response = await fetch(`${server.url}/api/v1/participants/bulk`, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-API-Key": key },
      body: JSON.stringify({ participants: rows.slice(i, i + BATCH).map(apiRow) }),
    });
    if (response.status !== 201) throw new Error(`bulk answered ${response.status}: ${(await response.text()).slice(0, 500)}`);
    await response.arrayBuffer();
  }
  return performance.now() - started;
}

async function viaCopy(url: string, tenantId: string, rows: BenchParticipant[]): Promise<number> {
  const csv = stringify(
    rows.map((r) => ({ tenant_id: tenantId, ...apiRow(r), ...r.filled })),
    { columns: COPY_COLUMNS },
  );
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const started = performance.now();
    await client.query("begin");
    await pipeline(
      Readable.from([csv]),
      client.query(copyFrom(`copy public.participants (${COPY_COLUMNS.join(", ")}) from stdin with (format csv)`)),
    );
    await client.query("commit");
    return performance.now() - started;
  } finally {
    await client.end();
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
const rate = (ms: number) => Math.round((ROWS / ms) * 1000);

async function main() {
  log(`load average before: ${load()}`);
  const url = await scratchDatabase("bench_bulk");
  const db = new Database(url, { max: 2 });
  const server = await ServerProcess.start(url, PORT);
  const api: number[] = [];
  const copy: number[] = [];
  try {
    const { tenantId, key } = await benchTenant(db);
    for (let round = 1; round <= ROUNDS; round++) {
      const apiCamp = await addCamp(db, tenantId, `API round ${round}`);
      const copyCamp = await addCamp(db, tenantId, `COPY round ${round}`);
      const apiMs = await viaApi(
        server,
        key,
        Array.from({ length: ROWS }, (_, n) => participant(apiCamp, n, "api")),
      );
      const copyMs = await viaCopy(
        url,
        tenantId,
        Array.from({ length: ROWS }, (_, n) => participant(copyCamp, n, "copy")),
      );
      api.push(apiMs);
      copy.push(copyMs);
      log(
        `round ${round}: bulk API ${Math.round(apiMs)} ms (${rate(apiMs)} rows/s), COPY ${Math.round(copyMs)} ms ` +
          `(${rate(copyMs)} rows/s), ratio ${(apiMs / copyMs).toFixed(2)}; load ${load()}`,
      );
    }
  } finally {
    await server.stop();
    await db.close();
    await dropScratch(url);
  }
  const summary = {
    rows: ROWS,
    requests: ROWS / BATCH,
    rounds: ROUNDS,
    bulk_api: {
      best_ms: Math.round(Math.min(...api)),
      median_ms: Math.round(median(api)),
      best_rows_per_s: rate(Math.min(...api)),
    },
    copy: {
      best_ms: Math.round(Math.min(...copy)),
      median_ms: Math.round(median(copy)),
      best_rows_per_s: rate(Math.min(...copy)),
    },
    ratio_of_medians: Number((median(api) / median(copy)).toFixed(2)),
    target_rows_per_s: 5_000,
    load_average_after: load(),
  };
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
}

await main();
