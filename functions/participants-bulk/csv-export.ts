import type { stringify as Stringify } from "csv-stringify/sync";
import type { Principal } from "../auth/principal.ts";
import type { Database } from "../db/database.ts";
import { type ExportFilters, type ExportRow, exportPage, type PageCursor } from "./data.ts";

/**
 * The participant list as CSV, streamed page by page: each page is read in
 * a short transaction of its own when the client is ready for it, so memory
 * stays at one page whatever the size of the list, and a slow download
 * holds no connection or transaction open between pages.
 */

/** Every participant field, then the names of what it points at. */
export const EXPORT_COLUMNS = [
  "id",
  "instance_id",
  "user_id",
  "first_name",
  "surname",
  "full_name",
  "gender",
  "pronouns",
  "status",
  "date_of_birth",
  "school_year",
  "rank",
  "unit_name",
  "school_institute",
  "arrival_date",
  "departure_date",
  "super_group_id",
  "sub_group_id",
  "block_id",
  "room_id",
  "room_number",
  "photo_link",
  "created_at",
  "updated_at",
  "supergroup_name",
  "subgroup_name",
  "block_name",
  "room_name",
] as const;

export const EXPORT_PAGE = 1_000;

/** Spreadsheets read UTF-8 (accents, emoji) only when the file says so with a byte-order mark. */
const BOM = "\uFEFF";

/**
 * Cells starting with =, +, -, @, tab or CR (and their full-width forms) get a
 * leading ' (csv-stringify's escape_formulas), so a spreadsheet shows them as
 * text instead of running them as formulas. Lines end in CRLF (RFC 4180).
 */
function toCsv(stringify: typeof Stringify, rows: ExportRow[], header: boolean): string {
  return stringify(rows, {
    header,
    columns: [...EXPORT_COLUMNS],
    escape_formulas: true,
    record_delimiter: "windows",
    cast: { date: (value) => value.toISOString() },
  });
}

/**
 * The export as a stream of UTF-8 bytes. The first page is read before this
 * returns, so a failure to read (database down) is still an ordinary error
 * response; a failure on a later page ends the stream with an error.
 */
export async function exportCsv(
  db: Database,
  principal: Pick<Principal, "tenantId" | "userId" | "role">,
  filters: ExportFilters,
): Promise<ReadableStream<Uint8Array>> {
  // Loaded on first use: only exports need it, and it stays out of the Edge Function's cold start.
  const { stringify } = await import("csv-stringify/sync");
  const read = (after: PageCursor | undefined) => db.asTenant(principal, (sql) => exportPage(sql, filters, after, EXPORT_PAGE));
  const encoder = new TextEncoder();
  let next: ExportRow[] | undefined = await read(undefined);
  let cursor: PageCursor | undefined;
  let first = true;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const rows = next ?? (await read(cursor));
        next = undefined;
        const text = (first ? BOM : "") + toCsv(stringify, rows, first);
        first = false;
        if (text !== "") controller.enqueue(encoder.encode(text));
        const last = rows.at(-1);
        if (rows.length < EXPORT_PAGE || !last) controller.close();
        else cursor = { at: last.cursor_at, id: last.id };
      },
    },
    // Read a page only when the previous one has been taken: memory holds one page.
    { highWaterMark: 0 },
  );
}
