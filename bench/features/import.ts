import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { stringify } from "csv-stringify/sync";
import { Database } from "../../functions/db/database.ts";
import {
  addCamp,
  benchTenant,
  type Camp,
  dropScratch,
  load,
  log,
  participant,
  ServerProcess,
  scratchDatabase,
} from "../harness/bulk-support.ts";

/**
 * npm run bench:import — a 10,000-line registration CSV (groups, blocks and
 * rooms given by name, spreadsheet-style headers, UTF-8 with BOM) imported
 * through POST /api/v1/participants/import (dry run, then for real) and
 * through `camp participants import` (wall clock, including the CLI's start).
 * Target: under 5 s.
 */

const ROWS = Number(process.env.ROWS ?? 10_000);
const PORT = Number(process.env.BENCH_PORT ?? 8733);
const ROOT = fileURLToPath(new URL("../../", import.meta.url));

function registrationCsv(camp: Camp, prefix: string): string {
  const lines = Array.from({ length: ROWS }, (_, n) => {
    const p = participant(camp, n, prefix);
    return [
      p.user_id,
      p.first_name,
      p.surname,
      p.gender,
      p.date_of_birth,
      p.school_year,
      p.unit_name,
      p.school_institute,
      p.arrival_date,
      p.departure_date,
      p.names.supergroup,
      p.names.subgroup,
      p.names.block,
      p.names.room,
    ];
  });
  const header = ["Participant ID", "First Name", "Last Name", "Sex", "DOB", "Year", "Unit", "School", "Arrival", "Departure"];
  return `\uFEFF${stringify([[...header, "Supergroup", "Subgroup", "Block", "Room"], ...lines])}`;
}

async function viaHttp(server: ServerProcess, key: string, instanceId: string, csv: string, dryRun: boolean) {
  const started = performance.now();
  const response = await fetch(`${server.url}/api/v1/participants/import?instance_id=${instanceId}&dry_run=${dryRun}`, {
    method: "POST",
    headers: { "Content-Type": "text/csv; charset=utf-8", "X-API-Key": key },
    body: csv,
  });
  const body = (await response.json()) as { data?: { created: number; lines: number } };
  if (response.status !== (dryRun ? 200 : 201))
    throw new Error(`import answered ${response.status}: ${JSON.stringify(body).slice(0, 500)}`);
  return { ms: performance.now() - started, ...body.data };
}

function viaCli(databaseUrl: string, file: string, instanceId: string): Promise<number> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["cli/bin.js", "participants", "import", file, "--instance", instanceId], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: databaseUrl },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    child.on("close", (code) => (code === 0 ? resolve(performance.now() - started) : reject(new Error(stderr))));
  });
}

async function main() {
  log(`load average before: ${load()}`);
  const url = await scratchDatabase("bench_import");
  const db = new Database(url, { max: 2 });
  const dir = mkdtempSync(join(tmpdir(), "camp-import-bench-"));
  let server: ServerProcess | undefined;
  try {
    const { tenantId, key } = await benchTenant(db);
    const httpCamp = await addCamp(db, tenantId, "HTTP import");
    const cliCamp = await addCamp(db, tenantId, "CLI import");
    const httpCsv = registrationCsv(httpCamp, "h");
    const cliFile = join(dir, "registrations.csv");
    writeFileSync(cliFile, registrationCsv(cliCamp, "c"));
    server = await ServerProcess.start(url, PORT);
    const dry = await viaHttp(server, key, httpCamp.instanceId, httpCsv, true);
    const real = await viaHttp(server, key, httpCamp.instanceId, httpCsv, false);
    const cliMs = await viaCli(url, cliFile, cliCamp.instanceId);
    const summary = {
      lines: ROWS,
      csv_bytes: Buffer.byteLength(httpCsv),
      http_dry_run_s: Number((dry.ms / 1000).toFixed(2)),
      http_import_s: Number((real.ms / 1000).toFixed(2)),
      http_created: real.created,
      cli_wall_clock_s: Number((cliMs / 1000).toFixed(2)),
      target_s: 5,
      load_average_after: load(),
    };
    process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  } finally {
    await server?.stop();
    await db.close();
    await dropScratch(url);
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
