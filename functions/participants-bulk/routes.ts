import { createRoute, z } from "@hono/zod-openapi";
import { ApiError } from "../errors.ts";
import type { BodyRule } from "../http/body-policy.ts";
import { locate, ok, okOfJson } from "../http/envelope.ts";
import { dataOf, json, newRouter } from "../http/openapi.ts";
import { operation } from "../http/operation.ts";
import { relyOnAdminRole, relyOnCareAccess } from "../http/replay-rules.ts";
import { Participant } from "../participants/schemas.ts";
import {
  capacityConflict,
  OverrideCapacityQuery,
  overrideCapacity as overrideCapacity_,
  roomOverflows,
} from "../rooms/capacity.ts";
import { isCareColumn } from "./care-columns.ts";
import { failingRows, insertPrepared, prepareRows } from "./create-many.ts";
import { exportCsv } from "./csv-export.ts";
import { CSV_LIMIT_TEXT, MAX_IMPORT_BYTES } from "./csv-import.ts";
import { importParticipants } from "./import.ts";
import { parseMapping } from "./import-options.ts";
import { BulkBody, ExportQuery, ImportQuery, ImportReport, MAX_BULK } from "./schemas.ts";

/**
 * Bulk work on participants: create many (JSON), export (CSV), import (CSV).
 * Mounted before the participant routes, whose `/{id}` would otherwise
 * claim `/bulk`, `/export.csv` and `/import`.
 */

const MB = 1_048_576;

/** The bodies bulk create and CSV import take (app.ts gives them to the body policy). */
export const BULK_BODIES: BodyRule[] = [
  // Room for 1,000 participants with every field filled, and more (their size: bench/README.md).
  {
    pattern: /^\/api\/v1\/participants\/bulk\/?$/,
    mediaTypes: ["application/json"],
    maxBytes: 5 * MB,
    limitText: "bulk create bodies are limited to 5 MB",
  },
  {
    pattern: /^\/api\/v1\/participants\/import\/?$/,
    mediaTypes: ["text/csv"],
    maxBytes: MAX_IMPORT_BYTES,
    limitText: CSV_LIMIT_TEXT,
    // The import reads its body as a stream and counts the bytes itself (csv-reader.ts).
    countsItsOwnBytes: true,
  },
];

const tags = ["participants"];

const bulk = createRoute(
  operation({
    method: "post",
    path: "/bulk",
    summary: `Create up to ${MAX_BULK} participants, all or none`,
    description:
      "Either every row is created (201, rows in the order sent) or none is: a 400 whose details list every " +
      "problem of every row as {field, issue}, the field named by its place (`participants.3.first_name`), rule violations (duplicates, references) included. Body limit 5 MB.",
    tags,
    request: {
      query: OverrideCapacityQuery,
      body: { content: { "application/json": { schema: BulkBody } }, required: true },
    },
    responses: { 201: json(dataOf(z.array(Participant)), "The participants as stored") },
  }),
);

const exportRoute = createRoute(
  operation({
    errors: [403],
    method: "get",
    path: "/export.csv",
    summary: "Export the participants as CSV",
    description:
      "The list's filters, every row (no paging), oldest first; streamed. Header: every participant field, then " +
      "supergroup_name, subgroup_name, block_name, room_name, then with include_care=true the safeguarding columns. " +
      "These are the columns the import reads: exported, then imported with mode=upsert, every line is unchanged. " +
      "UTF-8 with a byte-order mark; cells that would start a spreadsheet formula are prefixed with '.",
    tags,
    headers: ["Content-Disposition", "Cache-Control"],
    request: { query: ExportQuery },
    responses: {
      200: { content: { "text/csv": { schema: z.string() } }, description: "The participants, one per line" },
    },
  }),
);

const importRoute = createRoute(
  operation({
    method: "post",
    path: "/import",
    summary: "Import participants from CSV, all or none",
    description:
      "A text/csv body (UTF-8, with or without BOM; at most 10 MB and 20,000 participant lines; a line holds at " +
      "most 256 cells and 64 KB, and the file at most 40,001 lines with blank ones). Read as it arrives: the first " +
      "line past a limit ends the reading with a 400 naming it (413 past 10 MB). Columns are matched by field " +
      "name or alias (or by `mapping`); supergroup, subgroup, block and room may be given by name; dates are read " +
      "in `date_format`; M/F, yes/no and the like need no mapping. Safeguarding columns (contact_N_*, allergies, " +
      "dietary_requirements, medical_conditions, consent_*) need care write access and the key's care scope (403 " +
      "naming them otherwise, nothing imported). 201 with a report (created, updated, unchanged, each line's " +
      "outcome) when every line is good, 200 for a dry run; otherwise 400 (409 when the only problem is rooms over " +
      "capacity) whose details hold a summary per column and problem ({field, column, issue, count, samples}), each " +
      "room over capacity (with block_name and lines), then every problem as {line, column, field, issue} (the " +
      "first 1,000, in line order). Lines are numbered as a spreadsheet numbers rows (header = 1).",
    tags,
    request: {
      query: ImportQuery,
      body: { content: { "text/csv": { schema: z.string() } }, required: true },
    },
    responses: {
      200: json(dataOf(ImportReport), "Dry run: every line is good, nothing written"),
      201: json(dataOf(ImportReport), "Every line imported"),
    },
  }),
);

export const participantBulkRoutes = newRouter();

participantBulkRoutes
  .openapi(bulk, async (c) => {
    const candidates = c.req.valid("json").participants.map((input, at) => ({ at, input }));
    const overrideCapacity = c.req.valid("query").override_capacity;
    if (overrideCapacity) relyOnAdminRole(c);
    const created = await c.get("tenant").run(async (sql) => {
      if (overrideCapacity) await overrideCapacity_(sql);
      const prepared = await prepareRows(sql, candidates, { label: "row" });
      if (prepared.issues.length > 0) {
        // Each issue named by its place in the body, as a validation error of the whole body would name it.
        const details = prepared.issues.map(({ at, field, issue }) => ({
          field: field === "row" ? `participants.${at}` : `participants.${at}.${field}`,
          issue,
        }));
        const message = `${failingRows(prepared.issues)} of ${candidates.length} rows are invalid; nothing was created`;
        throw new ApiError("VALIDATION_ERROR", message, details);
      }
      // Every room the batch would overfill, named at once (the database's check would name the first).
      if (!overrideCapacity) {
        const over = await roomOverflows(
          sql,
          prepared.ready.map((row) => row.room_id),
        );
        if (over.length > 0) throw capacityConflict(over);
      }
      return (await insertPrepared(sql, prepared.ready, { returnRows: true })).json ?? "[]";
    });
    // Rows may join several instances: the collection they were added to.
    locate(c, "/api/v1/participants");
    return okOfJson<Array<z.infer<typeof Participant>>, 201>(c, created, 201);
  })
  .openapi(exportRoute, async (c) => {
    const { include_care: withCare, ...filters } = c.req.valid("query");
    const body = await exportCsv(c.get("tenant"), filters, { withCare });
    return c.body(body, 200, {
      "Content-Type": "text/csv; charset=utf-8",
      "Content-Disposition": 'attachment; filename="participants.csv"',
      "Cache-Control": "no-store",
    }) as never;
  })
  .openapi(importRoute, async (c) => {
    const { instance_id, dry_run, override_capacity, mode, date_format, mapping } = c.req.valid("query");
    if (override_capacity) relyOnAdminRole(c);
    const charset = /charset=([^;]+)/i
      .exec(c.req.header("content-type") ?? "")?.[1]
      ?.trim()
      .toLowerCase();
    if (charset && !["utf-8", "utf8", "us-ascii"].includes(charset.replace(/"/g, ""))) {
      throw new ApiError("UNSUPPORTED_MEDIA_TYPE", "CSV must be UTF-8", { field: "content-type", issue: `charset ${charset}` });
    }
    const body = c.req.raw.body ?? new Uint8Array();
    const report = await importParticipants(c.get("tenant"), {
      body,
      instanceId: instance_id,
      dryRun: dry_run,
      mode,
      dateFormat: date_format,
      mapping: mapping === undefined ? undefined : parseMapping(mapping, "mapping"),
      overrideCapacity: override_capacity,
    });
    // A stored answer of an import of safeguarding columns is replayed only to a caller who still may write them.
    if (report.columns.some((column) => isCareColumn(column.field))) relyOnCareAccess(c);
    if (dry_run) return ok(c, report, 200);
    locate(c, `/api/v1/participants?instance_id=${instance_id}`);
    return ok(c, report, 201);
  });
