import { readFileSync } from "node:fs";
import type { Database } from "../functions/db/database.ts";
import { ApiError, type FieldIssue } from "../functions/errors.ts";
import { type ImportMode, type ImportReport, importParticipants } from "../functions/participants-bulk/import.ts";
import { parseMapping } from "../functions/participants-bulk/import-options.ts";
import { importPrincipal } from "../functions/participants-bulk/import-principal.ts";
import { say } from "../node/runtime.ts";
import { progressBar } from "./progress.ts";

/**
 * `camp participants import FILE.csv --instance <id> [--dry-run] [--mode upsert]
 * [--date-format DD/MM/YYYY] [--map mapping.json] [--tenant <id>]`:
 * the HTTP import's semantics (all or nothing) from the operator's shell.
 * The report goes to stdout as one JSON line; every rejected line is listed
 * on stderr, and the command then fails.
 */

export interface ImportOptions {
  instance: string;
  tenant?: string;
  dryRun?: boolean;
  mode?: string;
  dateFormat?: string;
  /** A file holding the mapping's JSON. */
  map?: string;
  overrideCapacity?: boolean;
}

function readCsv(file: string): Uint8Array {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (error) {
    throw new Error(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  return bytes;
}

/** A rejected line, a summary entry (a count and samples), or a room the file would fill over capacity. */
function describe(d: FieldIssue): string {
  const where = d.column ? `${d.column} (${d.field})` : d.field;
  if (d.line !== undefined) return `line ${d.line}: ${where}: ${d.issue}`;
  if (d.count !== undefined) {
    const samples = d.samples?.length ? ` (e.g. ${d.samples.map((s) => JSON.stringify(s)).join(", ")})` : "";
    return `${d.count} × ${where}: ${d.issue}${samples}`;
  }
  return `${where}: ${d.issue}`;
}

function modeOf(mode: string | undefined): ImportMode {
  if (mode === undefined || mode === "create" || mode === "upsert") return mode ?? "create";
  throw new Error(`--mode must be create or upsert, not ${mode}`);
}

export async function importFile(db: Database, file: string, options: ImportOptions): Promise<ImportReport> {
  const body = readCsv(file);
  const mapping = options.map === undefined ? undefined : parseMapping(new TextDecoder().decode(readCsv(options.map)), "--map");
  const mode = modeOf(options.mode);
  const principal = await importPrincipal(db, options.instance, options.tenant);
  const bar = progressBar(options.dryRun ? "checking" : "importing");
  let started = false;
  try {
    return await importParticipants(db.scopeFor(principal), {
      body,
      instanceId: options.instance,
      dryRun: options.dryRun ?? false,
      mode,
      dateFormat: options.dateFormat,
      mapping,
      overrideCapacity: options.overrideCapacity ?? false,
      onProgress: (phase, done, total) => {
        if (!started) bar.start(total, 0, { item: phase });
        started = true;
        bar.update(done, { item: phase });
      },
    });
  } catch (error) {
    if (error instanceof ApiError && Array.isArray(error.details)) {
      bar.stop();
      for (const issue of error.details) say(describe(issue));
    }
    throw error;
  } finally {
    bar.stop();
  }
}
