import { Database } from "../../functions/db/database.ts";
import { addCamp, benchTenant, dropScratch, load, log, mb, ServerProcess, scratchDatabase } from "../harness/bulk-support.ts";

/**
 * npm run bench:export — GET /api/v1/participants/export.csv of 100,000
 * participants from the real Node server, reading the download as it comes,
 * while the server's resident memory (/proc/<pid>/status VmRSS) is sampled
 * every 10 ms. Growth is the peak over the resident size just before the
 * export (after a warm-up export, so code loading does not count).
 *
 * Two controls, each on a fresh server: the same 100,000 rows paged through
 * the JSON list (GET /api/v1/participants, limit 1000), which is what a
 * client would do without the export; and the export again with V8's old
 * space capped (--max-old-space-size=64), which shows how much of the growth
 * is garbage V8 lets pile up before collecting rather than memory in use.
 * Target: growth under 50 MB.
 */

const ROWS = Number(process.env.ROWS ?? 100_000);
const PORT = Number(process.env.BENCH_PORT ?? 8732);

/** The participants in one statement as the owner, spread over the camp's subgroups and rooms; triggers run. */
async function seedParticipants(db: Database, tenantId: string, instanceId: string): Promise<void> {
  await db.asOwner((sql) =>
    sql.query(
      `with sub as (select id, parent_supergroup_id, row_number() over (order by id) - 1 as n from subgroups where instance_id = $2),
            room as (select id, block_id, room_number, row_number() over (order by id) - 1 as n from rooms where instance_id = $2)
       insert into participants (tenant_id, instance_id, user_id, first_name, surname, gender, date_of_birth, school_year,
         unit_name, school_institute, super_group_id, sub_group_id, block_id, room_id, room_number)
       select $1, $2, 'p-' || g, (array['Olivia','Zoë','José','Siobhán','=cmd'])[1 + g % 5],
         (array['O''Brien','Nguyễn','Müller','Okafor'])[1 + g % 4], (array['Male','Female','Other'])[1 + g % 3],
         date '2010-01-01' + g % 2500, 'Year ' || (5 + g % 6), 'Unit ' || g % 40, 'School ' || g % 120,
         sub.parent_supergroup_id, sub.id, room.block_id, room.id, room.room_number
       from generate_series(1, $3) g
       join sub on sub.n = g % 16
       join room on room.n = g % 60`,
      [tenantId, instanceId, ROWS],
    ),
  );
}

/** Runs `work` while sampling the server's resident memory every 10 ms; returns the peak seen. */
async function sampled<T>(server: ServerProcess, work: () => Promise<T>): Promise<{ result: T; maxRss: number; ms: number }> {
  let maxRss = server.memory().rss;
  const sampler = setInterval(() => {
    maxRss = Math.max(maxRss, server.memory().rss);
  }, 10);
  const started = performance.now();
  try {
    const result = await work();
    return { result, maxRss: Math.max(maxRss, server.memory().rss), ms: performance.now() - started };
  } finally {
    clearInterval(sampler);
  }
}

/** Downloads the export as it streams; returns its size in bytes and rows. */
async function download(server: ServerProcess, key: string, query: string) {
  const response = await fetch(`${server.url}/api/v1/participants/export.csv${query}`, { headers: { "X-API-Key": key } });
  if (response.status !== 200 || !response.body) throw new Error(`export answered ${response.status}`);
  let bytes = 0;
  let lines = 0;
  for await (const chunk of response.body) {
    bytes += chunk.length;
    for (const byte of chunk) if (byte === 10) lines++;
  }
  return { bytes, rows: lines - 1 };
}

/** The same rows through the JSON list, 1,000 a page. */
async function pageThrough(server: ServerProcess, key: string, instanceId: string) {
  let rows = 0;
  for (let offset = 0; offset < ROWS; offset += 1000) {
    const response = await fetch(`${server.url}/api/v1/participants?instance_id=${instanceId}&limit=1000&offset=${offset}`, {
      headers: { "X-API-Key": key },
    });
    rows += ((await response.json()) as { data: unknown[] }).data.length;
  }
  return { rows, bytes: 0 };
}

type Work = (server: ServerProcess) => Promise<{ rows: number; bytes: number }>;

/** On a fresh server: `warmUp`, then `work` with the server's memory sampled. */
async function measure(url: string, flags: string[], warmUp: (server: ServerProcess) => Promise<unknown>, work: Work) {
  const server = await ServerProcess.start(url, PORT, flags);
  try {
    await warmUp(server);
    const before = server.memory();
    const run = await sampled(server, () => work(server));
    return {
      rows: run.result.rows,
      seconds: Number((run.ms / 1000).toFixed(2)),
      rss_before: mb(before.rss),
      rss_peak: mb(run.maxRss),
      rss_growth: mb(run.maxRss - before.rss),
    };
  } finally {
    await server.stop();
  }
}

async function main() {
  log(`load average before: ${load()}`);
  const url = await scratchDatabase("bench_export");
  const db = new Database(url, { max: 2 });
  try {
    const { tenantId, key } = await benchTenant(db);
    const camp = await addCamp(db, tenantId, "Export");
    const small = await addCamp(db, tenantId, "Warm-up");
    const seeding = performance.now();
    await seedParticipants(db, tenantId, camp.instanceId);
    log(`seeded ${ROWS.toLocaleString("en")} participants in ${Math.round(performance.now() - seeding)} ms`);
    await db.asOwner((sql) => sql.query("analyze participants"));

    const exportAll: Work = (server) => download(server, key, `?instance_id=${camp.instanceId}`);
    // Warm-up: the code paths and the pool, on an empty instance and on one page.
    const warmUp = async (server: ServerProcess) => {
      await download(server, key, `?instance_id=${small.instanceId}`);
      await download(server, key, `?instance_id=${camp.instanceId}&q=p-1000`);
      const page = await fetch(`${server.url}/api/v1/participants?instance_id=${camp.instanceId}&limit=1000`, {
        headers: { "X-API-Key": key },
      });
      await page.arrayBuffer();
    };
    const exporting = await measure(url, [], warmUp, exportAll);
    const summary = {
      rows: ROWS,
      export: exporting,
      control_json_list_paging: await measure(url, [], warmUp, (server) => pageThrough(server, key, camp.instanceId)),
      export_with_old_space_capped_at_64_mb: await measure(url, ["--max-old-space-size=64"], warmUp, exportAll),
      target_growth: "under 50 MB",
      load_average_after: load(),
    };
    if (exporting.rows !== ROWS) throw new Error(`exported ${exporting.rows} rows, expected ${ROWS}`);
    process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  } finally {
    await db.close();
    await dropScratch(url);
  }
}

await main();
