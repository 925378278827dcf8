/**
 * Resident memory of the Node server while it takes 8 concurrent 5 MB photo
 * uploads (issue 4: growth over idle must stay within ~100 MB).
 *
 *   npm run bench:photos
 *
 * Starts the real server (node/server.ts) as a child process on a scratch
 * database — on DATABASE_URL's server when it is set, else on an embedded
 * Postgres — with photos as files in a temporary DATA_DIR. Reads the child's
 * VmRSS from /proc (Linux) every 10 ms. Prints the figures as JSON and keeps
 * them in bench/results/. Every loop is bounded; the run stops by itself.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import sharp from "sharp";
import { Database } from "../../functions/db/database.ts";
import { MAX_PHOTO_BYTES } from "../../functions/photos/limits.ts";
import { createTenant } from "../../functions/tenants/provisioning.ts";
import { startEmbeddedPostgres } from "../../node/embedded-db.ts";
import { migrate } from "../../node/migrate.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const CONCURRENT = 8;
const ROUNDS = 3;
const log = (line: string) => process.stderr.write(`${line}\n`);

async function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.on("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? done(address.port) : fail(new Error("no port"))));
    });
  });
}

const rssMb = (pid: number) => {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return Number(match?.[1] ?? 0) / 1024;
};

/** A high-entropy JPEG (noise at quality 100) as close under 5,242,880 bytes as a few tries get. */
async function photoNearLimit(): Promise<Buffer> {
  let width = 1400;
  for (let attempt = 0; attempt < 12; attempt++) {
    const noise = randomBytes(width * width * 3);
    const jpeg = await sharp(noise, { raw: { width, height: width, channels: 3 } })
      .jpeg({ quality: 100 })
      .toBuffer();
    if (jpeg.length <= MAX_PHOTO_BYTES && jpeg.length > MAX_PHOTO_BYTES * 0.9) return jpeg;
    width = Math.floor(width * Math.sqrt((MAX_PHOTO_BYTES * 0.95) / jpeg.length));
  }
  throw new Error("could not make a photo near 5 MB");
}

function multipart(photo: Buffer): { body: Buffer; type: string } {
  const boundary = `----bench${randomBytes(8).toString("hex")}`;
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="photo"; filename="p.jpg"\r\nContent-Type: image/jpeg\r\n\r\n`;
  return {
    body: Buffer.concat([Buffer.from(head), photo, Buffer.from(`\r\n--${boundary}--\r\n`)]),
    type: `multipart/form-data; boundary=${boundary}`,
  };
}

async function main() {
  const dataDir = await mkdtemp(join(tmpdir(), "camp-bench-photos-"));
  const embedded = process.env.DATABASE_URL ? undefined : await startEmbeddedPostgres(join(dataDir, "pg"), { persistent: false });
  const serverUrl = new URL(process.env.DATABASE_URL ?? (embedded as { adminUrl: string }).adminUrl);
  const scratch = `camp_bench_photos_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: serverUrl.toString() });
  await admin.connect();
  await admin.query(`create database ${scratch}`);
  const dbUrl = new URL(serverUrl);
  dbUrl.pathname = `/${scratch}`;

  let child: ReturnType<typeof spawn> | undefined;
  try {
    await migrate(dbUrl.toString());
    const db = new Database(dbUrl.toString(), { max: 2 });
    const tenant = await createTenant(db, "Bench camps", "bench@example.test");
    const participants = await db.asOwner(async (sql) => {
      const instance = await sql.one<{ id: string }>(
        "insert into public.instances (tenant_id, name, status) values ($1, 'Bench', 'active') returning id",
        [tenant.tenant_id],
      );
      const rows: string[] = [];
      for (let i = 0; i < CONCURRENT; i++) {
        const row = await sql.one<{ id: string }>(
          `insert into public.participants (tenant_id, instance_id, user_id, first_name, surname)
           values ($1, $2, $3, 'Bench', 'Camper') returning id`,
          [tenant.tenant_id, instance?.id, `bench-${i}`],
        );
        rows.push(row?.id as string);
      }
      return rows;
    });
    await db.close();

    const port = await freePort();
    child = spawn(process.execPath, ["--import", "tsx", "node/server.ts"], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: dbUrl.toString(), PORT: String(port), DATA_DIR: dataDir, PHOTO_STORAGE: "file" },
      stdio: ["ignore", "ignore", "pipe"],
    });
    const pid = child.pid as number;
    let stderr = "";
    child.stderr?.on("data", (d) => {
      stderr += d;
    });
    for (let waited = 0; !/listening on/.test(stderr); waited += 100) {
      if (waited > 60_000 || child.exitCode !== null) throw new Error(`server did not start:\n${stderr}`);
      await new Promise((r) => setTimeout(r, 100));
    }

    const photo = await photoNearLimit();
    const base = `http://127.0.0.1:${port}/api/v1/photos/user`;
    const send = async (participant: string) => {
      const { body, type } = multipart(photo);
      // Each upload on a connection of its own. On a kept-alive one, a bench stalled past the
      // server's keep-alive timeout (5 s) between rounds sent its next upload into a connection the
      // server had closed meanwhile: EPIPE or ECONNRESET, and fetch never retries a POST.
      const res = await fetch(`${base}/${participant}`, {
        method: "POST",
        headers: { "X-API-Key": tenant.api_key, "Content-Type": type, Connection: "close" },
        body: new Uint8Array(body),
      });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`upload answered ${res.status}: ${text}`);
    };
    const sendOrExplain = (participant: string) =>
      send(participant).catch(async (error) => {
        // The exit is reported after the broken socket, later still on a loaded machine.
        for (let waited = 0; waited < 5_000 && child?.exitCode === null; waited += 100) {
          await new Promise((r) => setTimeout(r, 100));
        }
        const exited = child?.exitCode ?? child?.signalCode;
        const causes: string[] = [];
        for (let e: unknown = error; e instanceof Error; e = e.cause)
          causes.push(`${e.name}: ${e.message} ${(e as NodeJS.ErrnoException).code ?? ""}`);
        throw new Error(
          `${exited == null ? "upload failed" : `the server exited (${exited})`} during the uploads: ${causes.join(" <- ")}\n${stderr.slice(-6000)}`,
        );
      });

    // Warm up every code path once, then let the process settle before reading "idle".
    await send(participants[0] as string);
    await new Promise((r) => setTimeout(r, 3_000));
    const idle = rssMb(pid);

    const rounds: Array<{ peak_mb: number; growth_mb: number; seconds: number }> = [];
    for (let round = 0; round < ROUNDS; round++) {
      let peak = rssMb(pid);
      const sampler = setInterval(() => {
        // A server that died leaves no /proc entry: the uploads then fail and say so, with its stderr.
        if (child?.exitCode === null) peak = Math.max(peak, rssMb(pid));
      }, 10);
      const started = performance.now();
      await Promise.all(participants.map(sendOrExplain));
      const seconds = (performance.now() - started) / 1000;
      clearInterval(sampler);
      peak = Math.max(peak, rssMb(pid));
      rounds.push({ peak_mb: round1(peak), growth_mb: round1(peak - idle), seconds: round1(seconds) });
      log(`round ${round + 1}: peak ${peak.toFixed(1)} MB, growth ${(peak - idle).toFixed(1)} MB, ${seconds.toFixed(2)} s`);
      await new Promise((r) => setTimeout(r, 1_000));
    }

    const result = {
      benchmark: "photo-memory",
      at: new Date().toISOString(),
      concurrent_uploads: CONCURRENT,
      photo_bytes: photo.length,
      idle_rss_mb: round1(idle),
      rounds,
      max_growth_mb: Math.max(...rounds.map((r) => r.growth_mb)),
      after_rss_mb: round1(rssMb(pid)),
      target_growth_mb: 100,
    };
    mkdirSync(join(ROOT, "bench/results"), { recursive: true });
    writeFileSync(join(ROOT, `bench/results/photo-memory-${Date.now()}.json`), `${JSON.stringify(result, null, 2)}\n`);
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  } finally {
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child?.once("exit", r));
      child.kill("SIGTERM");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
    }
    await admin.query(`drop database if exists ${scratch} with (force)`);
    await admin.end();
    await embedded?.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

function round1(value: number): number {
  return Math.round(value * 10) / 10;
}

await main();
