import { ApiError, type FieldIssue } from "../errors.ts";
import { textIssue } from "../resources/fields.ts";
import { isCareColumn } from "./care-columns.ts";
import { failingRows } from "./create-many.ts";
import type { ColumnMapping } from "./csv-import.ts";
import type { Candidate, RowIssue } from "./rows.ts";

/**
 * How a CSV import that cannot be written is answered: one error that a
 * person can fix a file by, whatever the file's size.
 */

/**
 * Problems a rejection lists at most, the first in line order: enough to fix
 * a file by, while a file of 20,000 bad lines would otherwise be answered
 * with hundreds of thousands of entries (megabytes of JSON to build and send).
 * The summary before them counts every one.
 */
export const MAX_LISTED_ISSUES = 1_000;
/** Sample values per summary entry. */
const SAMPLES = 3;

/** The kind of a line's problem that would overfill a room: a file with no other problem is a 409. */
export const CAPACITY_KIND = "would fill its room over capacity";

/** A room the file would fill over capacity, and the lines that put participants into it. */
export interface Overflow {
  room_id: string;
  room_number: string;
  block_name: string;
  capacity: number;
  occupancy: number;
  lines: number[];
}

const DEL_OR_C1 = /[\u007f-\u009f]/;

/**
 * Whether a cell may be shown as a sample: never one holding a control
 * character (a line break included) or an unpaired surrogate, so an error
 * never echoes the value it refused for those characters, nor carries them
 * to a log line or a terminal.
 */
const echoable = (value: string) => textIssue(value) === undefined && !DEL_OR_C1.test(value);

/**
 * The 400 (or 409 when every problem is a room over capacity): a summary
 * per column and problem with a count and a few sample values (none of care
 * columns), each overfilled room with its lines, then the first
 * MAX_LISTED_ISSUES problems in line order.
 */
export function rejection(
  issues: RowIssue[],
  rooms: Overflow[],
  lines: number,
  columns: ColumnMapping[],
  candidates: Candidate[],
): ApiError {
  const columnOf = new Map<string, string>(columns.map((c) => [c.field, c.column]));
  // A room set by name is the room column's problem.
  if (columnOf.has("room") && !columnOf.has("room_id")) columnOf.set("room_id", columnOf.get("room") as string);
  const rawOf = new Map(candidates.map((c) => [c.at, c.raw ?? {}]));
  const withColumn = <T extends { field: string }>(issue: T) => {
    const column = columnOf.get(issue.field);
    return column === undefined ? issue : { ...issue, column };
  };

  const groups = new Map<string, { field: string; issue: string; count: number; samples: Set<string> }>();
  for (const issue of issues) {
    const kind = issue.kind ?? issue.issue;
    const key = `${issue.field}\u0000${kind}`;
    let group = groups.get(key);
    if (!group) {
      group = { field: issue.field, issue: kind, count: 0, samples: new Set() };
      groups.set(key, group);
    }
    group.count++;
    const field = issue.field === "room_id" && !rawOf.get(issue.at)?.room_id ? "room" : issue.field;
    const sample = isCareColumn(issue.field) ? undefined : rawOf.get(issue.at)?.[field];
    if (sample !== undefined && echoable(sample) && group.samples.size < SAMPLES) group.samples.add(sample);
  }
  const summary: FieldIssue[] = [...groups.values()].map((g) =>
    withColumn({
      field: g.field,
      issue: g.issue,
      count: g.count,
      ...(g.samples.size > 0 ? { samples: [...g.samples] } : {}),
    }),
  );
  const roomIssues: FieldIssue[] = rooms.map((room) =>
    withColumn({
      field: "room_id",
      issue: `room ${room.room_number} of block ${room.block_name} would hold ${room.occupancy} participants, over its capacity of ${room.capacity} (lines ${room.lines.join(", ")})`,
      room_id: room.room_id,
      room_number: room.room_number,
      block_name: room.block_name,
      capacity: room.capacity,
      occupancy: room.occupancy,
      lines: room.lines,
    }),
  );
  const listedLines: FieldIssue[] = issues
    .slice(0, MAX_LISTED_ISSUES)
    .map(({ at, field, issue }) => withColumn({ line: at, field, issue }));
  const listed =
    issues.length > MAX_LISTED_ISSUES ? ` (the first ${MAX_LISTED_ISSUES} of ${issues.length} problems are listed)` : "";
  const onlyCapacity = issues.every((i) => i.kind === CAPACITY_KIND);
  return new ApiError(
    onlyCapacity ? "CONFLICT" : "VALIDATION_ERROR",
    onlyCapacity
      ? `${rooms.length === 1 ? "a room" : `${rooms.length} rooms`} would be over capacity; nothing was imported`
      : `${failingRows(issues)} of ${lines} lines are invalid; nothing was imported${listed}`,
    [...summary, ...roomIssues, ...listedLines],
  );
}
