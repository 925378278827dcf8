import type { TenantScope } from "../db/tenant-scope.ts";
import { ApiError, conflict, invalidField } from "../errors.ts";
import { capacityConflict, overrideCapacity, roomOverflows } from "../rooms/capacity.ts";
import { failingRows, insertPrepared, prepareRows } from "./create-many.ts";
import { type ColumnMapping, type CsvBody, parseImport } from "./csv-import.ts";
import { findInstances } from "./data.ts";
import type { RowIssue } from "./rows.ts";

/**
 * A CSV import, the same for the HTTP endpoint and `camp participants import`:
 * all or nothing, in one transaction. Any rejected line means nothing is
 * written, and the error lists every rejected line; a dry run checks
 * everything the same way and writes nothing.
 */

export interface ImportRequest {
  /** The file, read as it arrives (a request's body stream) or whole (the CLI's file). */
  body: CsvBody;
  instanceId: string;
  dryRun: boolean;
  /** An admin's (or the operator's) choice to fill rooms over their capacity. */
  overrideCapacity?: boolean;
  /** Called as the phases advance: checking, then writing (rows written so far). */
  onProgress?: (phase: "checking" | "writing", done: number, total: number) => void;
}

export interface ImportReport {
  instance_id: string;
  dry_run: boolean;
  /** Participant lines in the file. */
  lines: number;
  created: number;
  columns: ColumnMapping[];
  ignored_columns: string[];
}

/** One rejected line: its number, the column (as the header wrote it) and field, and why. */
export interface LineIssue {
  line: number;
  column?: string;
  field: string;
  issue: string;
}

/**
 * Problems a rejection lists at most, the first in line order: enough to fix
 * a file by, while a file of 20,000 bad lines would otherwise be answered
 * with hundreds of thousands of entries (megabytes of JSON to build and send).
 */
export const MAX_LISTED_ISSUES = 1_000;

function rejection(issues: RowIssue[], lines: number, columns: ColumnMapping[]): ApiError {
  const columnOf = new Map<string, string>(columns.map((c) => [c.field, c.column]));
  const details: LineIssue[] = issues.slice(0, MAX_LISTED_ISSUES).map(({ at, field, issue }) => {
    const column = columnOf.get(field);
    return column === undefined ? { line: at, field, issue } : { line: at, column, field, issue };
  });
  const listed =
    issues.length > MAX_LISTED_ISSUES ? ` (the first ${MAX_LISTED_ISSUES} of ${issues.length} problems are listed)` : "";
  return new ApiError(
    "VALIDATION_ERROR",
    `${failingRows(issues)} of ${lines} lines are invalid; nothing was imported${listed}`,
    details,
  );
}

export async function importParticipants(tenant: TenantScope, request: ImportRequest): Promise<ImportReport> {
  // Read before the transaction: a slow upload holds no connection.
  const parsed = await parseImport(request.body, request.instanceId);
  const lines = parsed.candidates.length + new Set(parsed.issues.map((i) => i.at)).size;
  const report = (created: number): ImportReport => ({
    instance_id: request.instanceId,
    dry_run: request.dryRun,
    lines,
    created,
    columns: parsed.columns,
    ignored_columns: parsed.ignored,
  });
  return tenant.run(async (sql) => {
    if (request.overrideCapacity) await overrideCapacity(sql);
    const [instance] = await findInstances(sql, [request.instanceId]);
    if (!instance) throw invalidField("instance_id", "does not exist");
    if (instance.status === "archived") {
      throw conflict("instance is archived and read-only", { field: "instance_id", issue: "instance is archived and read-only" });
    }
    request.onProgress?.("checking", 0, lines);
    const prepared = await prepareRows(sql, parsed.candidates, { label: "line", namesIn: [request.instanceId] });
    const issues = [...parsed.issues, ...prepared.issues].sort((a, b) => a.at - b.at);
    if (issues.length > 0) throw rejection(issues, lines, parsed.columns);
    // The file's rows with those already there: every room it would overfill, on a dry run too.
    if (!request.overrideCapacity) {
      const over = await roomOverflows(
        sql,
        prepared.ready.map((row) => row.room_id),
      );
      if (over.length > 0) throw capacityConflict(over);
    }
    if (request.dryRun) return report(0);
    const { created } = await insertPrepared(sql, prepared.ready, {
      returnRows: false,
      onProgress: (done, total) => request.onProgress?.("writing", done, total),
    });
    return report(created);
  });
}
