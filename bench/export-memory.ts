import { Database } from "../functions/db/database.ts";
import { addCamp, benchTenant, dropScratch, load, log, mb, ServerProcess, scratchDatabase } from "./bulk-support.ts";

/**
 * npm run bench:export — GET /api/v1/participants/export.csv of 100,000
 * participants from the real Node server, reading the download as it comes,
 * while the server's resident memory (/proc/<pid>/status VmRSS) is sampled
 * every 10 ms. Reports the peak growth over the resident size just before the
 * export (after a warm-up export, so code loading does not count), the peak
 * (VmHWM) and the time taken. Target: growth under 50 MB.
 */

const ROWS = Number(process.env.ROWS ?? 100_000);
const PORT = Number(process.env.BENCH_PORT ?? 8732);

/** 100,000 participants in one statement as the owner, spread over the camp's subgroups and rooms; triggers run. */
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

/** Downloads the export, sampling the server's memory meanwhile; returns what it saw. */
async function download(server: ServerProcess, key: string, query: string) {
  let maxRss = server.memory().rss;
  const sampler = setInterval(() => {
    maxRss = Math.max(maxRss, server.memory().rss);
  }, 10);
  const started = performance.now();
  try {
    const response = await fetch(`${server.url}/api/v1/participants/export.csv${query}`, { headers: { "X-API-Key": key } });
    if (response.status !== 200 || !response.body) throw new Error(`export answered ${response.status}`);
    let bytes = 0;
    let lines = 0;
    for await (const chunk of response.body) {
      bytes += chunk.length;
      for (const byte of chunk) if (byte === 10) lines++;
    }
    return { ms: performance.now() - started, bytes, rows: lines - 1, maxRss: Math.max(maxRss, server.memory().rss) };
  } finally {
    clearInterval(sampler);
  }
}

async function main() {
  log(`load average before: ${load()}`);
  const url = await scratchDatabase("bench_export");
  const db = new Database(url, { max: 2 });
  let server: ServerProcess | undefined;
  try {
    const { tenantId, key } = await benchTenant(db);
    const camp = await addCamp(db, tenantId, "Export");
    const small = await addCamp(db, tenantId, "Warm-up");
    const seeding = performance.now();
    await seedParticipants(db, tenantId, camp.instanceId);
    log(`seeded ${ROWS.toLocaleString("en")} participants in ${Math.round(performance.now() - seeding)} ms`);
    await db.asOwner((sql) => sql.query("analyze participants"));

    server = await ServerProcess.start(url, PORT);
    // Warm-up: load the export's code paths and fill the pool, on an instance with no participants and one page.
    await download(server, key, `?instance_id=${small.instanceId}`);
    await download(server, key, `?instance_id=${camp.instanceId}&q=p-1000`);
    const before = server.memory();
    const run = await download(server, key, `?instance_id=${camp.instanceId}`);
    const after = server.memory();
    const summary = {
      rows: run.rows,
      bytes: run.bytes,
      seconds: Number((run.ms / 1000).toFixed(2)),
      rows_per_s: Math.round((run.rows / run.ms) * 1000),
      rss_before: mb(before.rss),
      rss_max_sampled: mb(run.maxRss),
      rss_growth: mb(run.maxRss - before.rss),
      peak_vmhwm_before: mb(before.peak),
      peak_vmhwm_after: mb(after.peak),
      target_growth: "under 50 MB",
      load_average_after: load(),
    };
    if (run.rows !== ROWS) throw new Error(`exported ${run.rows} rows, expected ${ROWS}`);
    process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  } finally {
    await server?.stop();
    await db.close();
    await dropScratch(url);
  }
}

await main();
