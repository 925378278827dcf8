import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Database } from "../../functions/db/database.ts";
import { MAX_PHOTO_BYTES, MAX_PHOTO_FRAMES } from "../../functions/photos/limits.ts";
import { gifOfEmptyComments, pngOfEmptyChunks } from "../../tests/support/images.ts";
import { addCamp, benchTenant, dropScratch, load, log, participant, scratchDatabase } from "../harness/bulk-support.ts";

/**
 * npm run bench:hostile — what one hostile body costs the server, and what it
 * costs another tenant. For each case a fresh server process (node/server.ts,
 * as `npm start` runs it, heap capped at HEAP_MB so a runaway case cannot take
 * the shared machine with it) takes one hostile request from tenant A while
 * tenant B lists its participants in a loop. Printed per case: A's status and
 * time, the server's resident memory before and at its peak (VmRSS sampled
 * every 10 ms), B's slowest and median answer, B's failures, and whether the
 * server still answers afterwards.
 *
 *   npm run bench:hostile [-- --checkout DIR] [-- --cases a,b] [-- --out FILE]
 *
 * `--checkout DIR` runs the server of another checkout (a worktree of an older
 * commit, node_modules linked), for before/after figures side by side;
 * `--compare FILE` prints a saved run's figures beside this run's.
 */

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const HEAP_MB = Number(process.env.HEAP_MB ?? 1536);
const MB = 1_048_576;
/** The servers' photo store (DATA_DIR/photos), removed at the end. */
const DATA_DIR = mkdtempSync(join(tmpdir(), "bench-hostile-"));

const arg = (name: string) => {
  const at = process.argv.indexOf(`--${name}`);
  return at === -1 ? undefined : process.argv[at + 1];
};

interface Context {
  url: string;
  key: string;
  instanceId: string;
  otherTarget: string;
}

interface Hostile {
  method: string;
  path: (c: Context) => string;
  type: string;
  /** The body, or a generator of chunks sent without Content-Length. */
  body: () => Uint8Array | Promise<Uint8Array> | (() => AsyncGenerator<Uint8Array>);
}

const text = (s: string) => new TextEncoder().encode(s);
const importPath = (dry: boolean) => (c: Context) => `/api/v1/participants/import?instance_id=${c.instanceId}&dry_run=${dry}`;

/** Every field of a participant wrong, so each line gives as many issues as it can. */
const BAD_HEADER =
  "user_id,first_name,surname,date_of_birth,gender,status,arrival_date,departure_date,email,phone,super_group_id,room_id";
const badLine = (n: number) => `,${"\u0001"},${"\u0001"},2011-02-30,robot,gone,x,y,not-an-email,abc,nope,nope-${n}`;

/** A multipart body of one `photo` part; the boundary is fixed so that the case's type can name it. */
const BOUNDARY = "----bench-hostile-photo";
const PHOTO_TYPE = `multipart/form-data; boundary=${BOUNDARY}`;
const photoHead = (type: string) =>
  text(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="photo"; filename="p"\r\nContent-Type: ${type}\r\n\r\n`);
const photoTail = text(`\r\n--${BOUNDARY}--\r\n`);
const photoBody = (type: string, photo: Uint8Array) => Buffer.concat([photoHead(type), photo, photoTail]);
/** A participant of the hostile tenant's camp (seeded below as p-0 … p-19999). */
const photoPath = () => "/api/v1/photos/user/p-0";

const CASES: Record<string, Hostile> = {
  // Issue 27's first finding: ~10 MB of one-character lines.
  "import-one-char-lines": {
    method: "POST",
    path: importPath(true),
    type: "text/csv",
    body: () => text(`user_id,first_name,surname\n${"a\n".repeat((10_000_000 - 27) / 2)}`),
  },
  // Issue 27's second finding: 9.9 MB of commas.
  "import-commas": { method: "POST", path: importPath(true), type: "text/csv", body: () => text(",".repeat(9_900_000)) },
  "import-one-long-cell": {
    method: "POST",
    path: importPath(true),
    type: "text/csv",
    body: () => text(`user_id,first_name,surname\nu,"${"x".repeat(10_000_000)}",s\n`),
  },
  "import-blank-lines": {
    method: "POST",
    path: importPath(true),
    type: "text/csv",
    body: () => text(`user_id,first_name,surname\n${",,\n".repeat(3_400_000)}`),
  },
  "import-20000-bad-lines": {
    method: "POST",
    path: importPath(true),
    type: "text/csv",
    body: () => text(`${BAD_HEADER}\n${Array.from({ length: 20_000 }, (_, n) => badLine(n)).join("\n")}\n`),
  },
  "import-chunked-50mb": {
    method: "POST",
    path: importPath(true),
    type: "text/csv",
    body: () =>
      async function* () {
        yield text("user_id,first_name,surname\n");
        for (let i = 0; i < 50; i++) yield text("u,Ada,Lovelace\n".repeat(MB / 15));
      },
  },
  "bulk-5mb-array": {
    method: "POST",
    path: () => "/api/v1/participants/bulk",
    type: "application/json",
    body: () => text(`{"participants":[${"0,".repeat(2_600_000)}0]}`),
  },
  "bulk-1000-bad-rows": {
    method: "POST",
    path: () => "/api/v1/participants/bulk",
    type: "application/json",
    body: () =>
      text(
        JSON.stringify({
          participants: Array.from({ length: 1000 }, () => ({
            instance_id: "nope",
            user_id: "",
            first_name: "\u0001",
            surname: "\u0001",
            date_of_birth: "2011-02-30",
            gender: "robot",
            status: "gone",
            email: "x",
            phone: "abc",
          })),
        }),
      ),
  },
  "json-1mb-nesting": {
    method: "POST",
    path: () => "/api/v1/instances",
    type: "application/json",
    body: () => text(`{"name":${"[".repeat(1_048_500)}`),
  },
  "json-chunked-50mb": {
    method: "POST",
    path: () => "/api/v1/instances",
    type: "application/json",
    body: () =>
      async function* () {
        yield text('{"name":"');
        for (let i = 0; i < 50; i++) yield text("x".repeat(MB));
      },
  },
  "photo-chunked-50mb": {
    method: "POST",
    path: photoPath,
    type: PHOTO_TYPE,
    body: () =>
      async function* () {
        yield photoHead("image/png");
        for (let i = 0; i < 50; i++) yield new Uint8Array(MB);
        yield photoTail;
      },
  },
  // The most chunks (12 bytes each) a 5 MB PNG can make the metadata walker visit.
  "photo-png-empty-chunks": {
    method: "POST",
    path: photoPath,
    type: PHOTO_TYPE,
    body: async () => photoBody("image/png", (await pngOfEmptyChunks(MAX_PHOTO_BYTES)).photo),
  },
  // The most frames allowed, and the most blocks (3-byte comments) a 5 MB GIF can hold besides.
  "photo-gif-empty-comments": {
    method: "POST",
    path: photoPath,
    type: PHOTO_TYPE,
    body: () => photoBody("image/gif", gifOfEmptyComments(MAX_PHOTO_BYTES, MAX_PHOTO_FRAMES).photo),
  },
  "export-20000-rows": {
    method: "GET",
    path: (c) => `/api/v1/participants/export.csv?instance_id=${c.instanceId}`,
    type: "",
    body: () => text(""),
  },
};

interface Figures {
  status: number | string;
  seconds: number;
  rss_before_mb: number;
  rss_peak_mb: number;
  other_tenant_max_ms: number;
  other_tenant_median_ms: number;
  other_tenant_failures: number;
  /** The other tenant's slowest answer in the 1.5 s before the hostile request. */
  other_tenant_alone_max_ms?: number;
  alive_after: boolean;
}

function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.on("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? done(address.port) : fail(new Error("no port"))));
    });
  });
}

function rssMb(pid: number): number {
  try {
    return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) / 1024;
  } catch {
    return 0;
  }
}

async function startServer(checkout: string, databaseUrl: string) {
  const port = await freePort();
  const child = spawn(process.execPath, [`--max-old-space-size=${HEAP_MB}`, "--import", "tsx", "node/server.ts"], {
    cwd: checkout,
    env: {
      ...process.env,
      RATE_LIMIT_PER_MINUTE: "0",
      LOG_LEVEL: "error",
      DATABASE_URL: databaseUrl,
      DATA_DIR,
      PORT: String(port),
    },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (d) => {
    stderr = (stderr + d).slice(-4000);
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    try {
      if ((await fetch(`${url}/health`)).ok) return { child, url, stderr: () => stderr };
    } catch {
      // Not listening yet.
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  child.kill("SIGKILL");
  throw new Error(`server did not start: ${stderr}`);
}

async function* listed(pieces: Uint8Array[]): AsyncGenerator<Uint8Array> {
  yield* pieces;
}

function streamOf(chunks: AsyncGenerator<Uint8Array>): ReadableStream<Uint8Array> {
  return new ReadableStream({
    async pull(controller) {
      const next = await chunks.next();
      if (next.done) controller.close();
      else controller.enqueue(next.value);
    },
  });
}

/** The body made before the clock starts: making it would hold up this process's own requests of the other tenant. */
async function prepare(hostile: Hostile): Promise<Uint8Array | Uint8Array[] | undefined> {
  const made = hostile.method === "GET" ? undefined : await hostile.body();
  if (made === undefined || made instanceof Uint8Array) return made;
  const pieces: Uint8Array[] = [];
  for await (const piece of made()) pieces.push(piece);
  return pieces;
}

async function send(c: Context, hostile: Hostile, made: Uint8Array | Uint8Array[] | undefined): Promise<number | string> {
  const body = made === undefined ? undefined : made instanceof Uint8Array ? made : streamOf(listed(made));
  try {
    const response = await fetch(`${c.url}${hostile.path(c)}`, {
      method: hostile.method,
      headers: { "X-API-Key": c.key, ...(hostile.type ? { "Content-Type": hostile.type } : {}) },
      body,
      ...(body instanceof ReadableStream ? { duplex: "half" } : {}),
      signal: AbortSignal.timeout(180_000),
    } as RequestInit);
    const bytes = (await response.arrayBuffer()).byteLength;
    return `${response.status} (${(bytes / 1024).toFixed(0)} KB)`;
  } catch (error) {
    return `failed: ${(error as Error).cause ?? (error as Error).message}`.slice(0, 80);
  }
}

async function runCase(checkout: string, databaseUrl: string, a: Context, b: Context, hostile: Hostile): Promise<Figures> {
  const server = await startServer(checkout, databaseUrl);
  const pid = server.child.pid as number;
  const ctxA = { ...a, url: server.url };
  const ctxB = { ...b, url: server.url };
  // Warm both paths so the figures are of the hostile body, not of first use.
  for (let i = 0; i < 5; i++) await fetch(`${server.url}${b.otherTarget}`, { headers: { "X-API-Key": b.key } });
  await new Promise((r) => setTimeout(r, 500));
  const made = await prepare(hostile);
  // The other tenant alone first: this machine's noise, to read the figures under load against.
  const idle: number[] = [];
  for (const until = performance.now() + 1500; performance.now() < until; ) {
    const started = performance.now();
    await (await fetch(`${server.url}${b.otherTarget}`, { headers: { "X-API-Key": b.key } })).arrayBuffer();
    idle.push(performance.now() - started);
    await new Promise((r) => setTimeout(r, 20));
  }
  const before = rssMb(pid);
  let peak = before;
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssMb(pid));
  }, 10);
  let done = false;
  const latencies: number[] = [];
  let failures = 0;
  const other = (async () => {
    while (!done) {
      const started = performance.now();
      try {
        const r = await fetch(`${server.url}${b.otherTarget}`, {
          headers: { "X-API-Key": b.key },
          signal: AbortSignal.timeout(120_000),
        });
        await r.arrayBuffer();
        if (r.status !== 200) failures++;
      } catch {
        failures++;
      }
      latencies.push(performance.now() - started);
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  const started = performance.now();
  const status = await send(ctxA, hostile, made);
  const seconds = (performance.now() - started) / 1000;
  await new Promise((r) => setTimeout(r, 300));
  done = true;
  await other;
  clearInterval(sampler);
  let alive = false;
  try {
    alive = (await fetch(`${ctxB.url}/health`, { signal: AbortSignal.timeout(5000) })).ok;
  } catch {
    alive = false;
  }
  server.child.kill("SIGKILL");
  const sorted = [...latencies].sort((x, y) => x - y);
  return {
    status,
    seconds: Number(seconds.toFixed(2)),
    rss_before_mb: Math.round(before),
    rss_peak_mb: Math.round(peak),
    other_tenant_max_ms: Math.round(sorted.at(-1) ?? 0),
    other_tenant_median_ms: Math.round(sorted[Math.floor(sorted.length / 2)] ?? 0),
    other_tenant_failures: failures,
    other_tenant_alone_max_ms: Math.round(Math.max(...idle)),
    alive_after: alive,
  };
}

async function main() {
  const checkout = arg("checkout") ?? ROOT;
  const only = arg("cases")?.split(",");
  const url = await scratchDatabase("bench_hostile");
  const db = new Database(url, { max: 2 });
  const results: Record<string, Figures> = {};
  try {
    const hostile = await benchTenant(db);
    const victim = await benchTenant(db);
    const hostileCamp = await addCamp(db, hostile.tenantId, "Hostile camp");
    const victimCamp = await addCamp(db, victim.tenantId, "Victim camp");
    // The hostile tenant's camp holds 20,000 participants for the export case; the victim's 50 for its list.
    await db.asOwner(async (sql) => {
      for (const [camp, tenantId, count] of [
        [hostileCamp, hostile.tenantId, 20_000],
        [victimCamp, victim.tenantId, 50],
      ] as const) {
        const rows = Array.from({ length: count }, (_, n) => participant(camp, n, "p"));
        await sql.query(
          `insert into participants (tenant_id, instance_id, user_id, first_name, surname, gender, status, date_of_birth, school_institute)
           select $1, $2, u, f, s, g, st, d::date, sc from unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[]) as t(u, f, s, g, st, d, sc)`,
          [
            tenantId,
            camp.instanceId,
            rows.map((r) => r.user_id),
            rows.map((r) => r.first_name),
            rows.map((r) => r.surname),
            rows.map((r) => r.gender),
            rows.map((r) => r.status),
            rows.map((r) => r.date_of_birth),
            rows.map((r) => r.school_institute),
          ],
        );
      }
    });
    const target = `/api/v1/participants?instance_id=${victimCamp.instanceId}&limit=50`;
    const a: Context = { url: "", key: hostile.key, instanceId: hostileCamp.instanceId, otherTarget: target };
    const b: Context = { url: "", key: victim.key, instanceId: victimCamp.instanceId, otherTarget: target };
    log(`checkout ${checkout}; load average before: ${load()}`);
    for (const [name, hostileCase] of Object.entries(CASES)) {
      if (only && !only.includes(name)) continue;
      results[name] = await runCase(checkout, url, a, b, hostileCase);
      log(`${name}: ${JSON.stringify(results[name])} (load ${load()})`);
    }
  } finally {
    await db.close();
    await dropScratch(url);
    rmSync(DATA_DIR, { recursive: true, force: true });
  }
  const compare = arg("compare");
  const earlier: Record<string, Figures> = compare ? JSON.parse(readFileSync(compare, "utf8")).results : {};
  const row = (name: string, f: Figures | undefined) =>
    f
      ? `${f.status} in ${f.seconds} s; RSS ${f.rss_before_mb}→${f.rss_peak_mb} MB; other tenant max ${f.other_tenant_max_ms} ms (median ${f.other_tenant_median_ms}; alone before: max ${f.other_tenant_alone_max_ms ?? "?"}), ${f.other_tenant_failures} failed; ${f.alive_after ? "alive" : "DEAD"}`
      : `${name}: not run`;
  for (const [name, f] of Object.entries(results)) {
    process.stdout.write(`${name}\n  now:     ${row(name, f)}\n`);
    if (compare) process.stdout.write(`  earlier: ${row(name, earlier[name])}\n`);
  }
  const out = arg("out");
  if (out) writeFileSync(out, `${JSON.stringify({ checkout, heap_mb: HEAP_MB, load: load(), results }, null, 2)}\n`);
}

await main();
