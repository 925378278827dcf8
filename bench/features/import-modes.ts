import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync } from "node:fs";
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
 * npm run bench:import-modes — what the import's options cost (issue 40):
 * rows per second of a plain registration file (create) through the code
 * before the change (BEFORE, a git ref, checked out into a temporary
 * directory) and after it, side by side on one database, rounds alternating
 * which goes first; and, after it, an upsert of a file that changes nothing,
 * and the same file's dry run with date_format and a mapping. Targets: a
 * plain file within 10 % of before; an unchanged upsert at least as fast as
 * a create. Medians of ROUNDS rounds.
 */

const ROWS = Number(process.env.ROWS ?? 5_000);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const BEFORE = process.env.BEFORE ?? "6090d5a";
const ROOT = fileURLToPath(new URL("../../", import.meta.url));

const HEADER = ["Participant ID", "First Name", "Last Name", "Sex", "DOB", "Year", "Unit", "School", "Arrival", "Departure"];

/** The file of bench:import: spreadsheet headers, names for groups and rooms, ISO dates (or day-first ones). */
function registrationCsv(camp: Camp, prefix: string, dayFirst = false): string {
  const day = (iso: string) => (dayFirst ? iso.split("-").reverse().join("/") : iso);
  const lines = Array.from({ length: ROWS }, (_, n) => {
    const p = participant(camp, n, prefix);
    return [
      p.user_id,
      p.first_name,
      p.surname,
      dayFirst ? (p.gender[0] as string) : p.gender,
      day(p.date_of_birth),
      p.school_year,
      p.unit_name,
      p.school_institute,
      day(p.arrival_date),
      day(p.departure_date),
      p.names.supergroup,
      p.names.subgroup,
      p.names.block,
      p.names.room,
    ];
  });
  return `\uFEFF${stringify([[...HEADER, dayFirst ? "Group" : "Supergroup", "Subgroup", "Block", "Room"], ...lines])}`;
}

async function importOnce(server: ServerProcess, key: string, instanceId: string, csv: string, query = ""): Promise<number> {
  const started = performance.now();
  const response = await fetch(`${server.url}/api/v1/participants/import?instance_id=${instanceId}${query}`, {
    method: "POST",
    headers: { "Content-Type": "text/csv; charset=utf-8", "X-API-Key": key },
    body: csv,
  });
  const text = await response.text();
  if (response.status !== 201 && response.status !== 200)
    throw new Error(`import answered ${response.status}: ${text.slice(0, 500)}`);
  return ROWS / ((performance.now() - started) / 1000);
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
};
const round = (n: number) => Math.round(n);

/** The service as it was at BEFORE, in a directory of its own that shares this checkout's node_modules. */
function checkoutBefore(): string {
  const dir = mkdtempSync(join(tmpdir(), "camp-before-"));
  execFileSync("sh", ["-c", `git -C "${ROOT}" archive ${BEFORE} | tar -x -C "${dir}"`]);
  symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"));
  return dir;
}

async function main() {
  log(`load average before: ${load()}`);
  const url = await scratchDatabase("bench_import_modes");
  const db = new Database(url, { max: 2 });
  const beforeDir = checkoutBefore();
  let before: ServerProcess | undefined;
  let after: ServerProcess | undefined;
  try {
    const { tenantId, key } = await benchTenant(db);
    before = await ServerProcess.start(url, 8741, [], beforeDir);
    after = await ServerProcess.start(url, 8742);
    const runs = {
      before: [] as number[],
      after: [] as number[],
      upsertUnchanged: [] as number[],
      dayFirstDryRun: [] as number[],
    };
    const mapping = encodeURIComponent(JSON.stringify({ columns: { Group: "supergroup" }, values: { gender: { O: "Other" } } }));
    for (let r = 0; r < ROUNDS; r++) {
      const order: Array<"before" | "after"> = r % 2 === 0 ? ["before", "after"] : ["after", "before"];
      for (const side of order) {
        const camp = await addCamp(db, tenantId, `${side} ${r}`);
        const server = side === "before" ? before : after;
        runs[side].push(await importOnce(server, key, camp.instanceId, registrationCsv(camp, `${side[0]}${r}`)));
        if (side === "after") {
          // The same file again, as a weekly re-import would send it: nothing changes.
          const same = registrationCsv(camp, `a${r}`);
          runs.upsertUnchanged.push(await importOnce(after, key, camp.instanceId, same, "&mode=upsert"));
          const fresh = await addCamp(db, tenantId, `day-first ${r}`);
          const dayFirst = registrationCsv(fresh, `d${r}`, true);
          runs.dayFirstDryRun.push(
            await importOnce(after, key, fresh.instanceId, dayFirst, `&dry_run=true&date_format=DD/MM/YYYY&mapping=${mapping}`),
          );
        }
      }
      log(`round ${r + 1}: before ${round(runs.before.at(-1) ?? 0)}, after ${round(runs.after.at(-1) ?? 0)} rows/s`);
    }
    const summary = {
      rows: ROWS,
      rounds: ROUNDS,
      before_ref: BEFORE,
      create_before_rows_per_s: round(median(runs.before)),
      create_after_rows_per_s: round(median(runs.after)),
      after_over_before: Number((median(runs.after) / median(runs.before)).toFixed(3)),
      upsert_unchanged_rows_per_s: round(median(runs.upsertUnchanged)),
      upsert_unchanged_over_create: Number((median(runs.upsertUnchanged) / median(runs.after)).toFixed(3)),
      day_first_mapped_dry_run_rows_per_s: round(median(runs.dayFirstDryRun)),
      every_run: runs,
      targets: { after_over_before: "≥ 0.90", upsert_unchanged_over_create: "≥ 1.00" },
      load_average_after: load(),
    };
    process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  } finally {
    await before?.stop();
    await after?.stop();
    await db.close();
    await dropScratch(url);
    rmSync(beforeDir, { recursive: true, force: true });
  }
}

await main();
