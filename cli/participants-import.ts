import { readFileSync } from "node:fs";
import type { Database } from "../functions/db/database.ts";
import { ApiError } from "../functions/errors.ts";
import { type ImportReport, importParticipants, type LineIssue } from "../functions/participants-bulk/import.ts";
import { importPrincipal } from "../functions/participants-bulk/import-principal.ts";
import { say } from "../node/runtime.ts";
import { progressBar } from "./progress.ts";

/**
 * `camp participants import FILE.csv --instance <id> [--dry-run] [--tenant <id>]`:
 * the HTTP import's semantics (all or nothing) from the operator's shell.
 * The report goes to stdout as one JSON line; every rejected line is listed
 * on stderr, and the command then fails.
 */

export interface ImportOptions {
  instance: string;
  tenant?: string;
  dryRun?: boolean;
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

/** A rejected line, or an issue of the whole file (a room it would fill over capacity). */
const describe = (d: Partial<LineIssue> & Pick<LineIssue, "field" | "issue">) =>
  d.line === undefined
    ? `${d.field}: ${d.issue}`
    : `line ${d.line}: ${d.column ? `${d.column} (${d.field})` : d.field}: ${d.issue}`;

export async function importFile(db: Database, file: string, options: ImportOptions): Promise<ImportReport> {
  const body = readCsv(file);
  const principal = await importPrincipal(db, options.instance, options.tenant);
  const bar = progressBar(options.dryRun ? "checking" : "importing");
  let started = false;
  try {
    return await importParticipants(db.scopeFor(principal), {
      body,
      instanceId: options.instance,
      dryRun: options.dryRun ?? false,
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
      for (const issue of error.details as LineIssue[]) say(describe(issue));
    }
    throw error;
  } finally {
    bar.stop();
  }
}
