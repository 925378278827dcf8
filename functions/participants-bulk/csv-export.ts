import type { TenantScope } from "../db/tenant-scope.ts";
import { forbidden } from "../errors.ts";
import { CARE_COLUMNS } from "./care-columns.ts";
import { careAccess, EXPORT_COLUMNS, type ExportFilters, exportPageCsv, exportPageEnd, type PageCursor } from "./data.ts";

export { EXPORT_COLUMNS };

/**
 * The participant list as CSV, streamed page by page: each page is written
 * by Postgres (data.ts, exportPageCsv) in a short transaction of its own
 * when the client is ready for it, so memory stays at one page of bytes
 * whatever the size of the list, and a slow download holds no connection or
 * transaction open between pages. Pages follow the list order by keyset
 * (created_at, id), so no row is repeated or skipped however long it takes.
 */

export const EXPORT_PAGE = 1_000;

/** Spreadsheets read UTF-8 (accents, emoji) only when the file says so with a byte-order mark. */
const BOM = "\uFEFF";

/**
 * The export as a stream of UTF-8 bytes: a byte-order mark, the header line,
 * the rows; lines end in CRLF (RFC 4180). The first page is read before this
 * returns, so a failure to read (database down) is still an ordinary error
 * response; a failure on a later page ends the stream with an error.
 */
export async function exportCsv(
  tenant: TenantScope,
  filters: ExportFilters,
  options: { withCare?: boolean } = {},
): Promise<ReadableStream<Uint8Array>> {
  const withCare = options.withCare ?? false;
  // A page: where it ends (the EXPORT_PAGE-th row from here), then its rows up to there.
  // Each piece of text is encoded as it arrives, so that no string outlives it.
  const encoder = new TextEncoder();
  const read = (after: PageCursor | undefined) =>
    tenant.run(async (sql) => {
      // Refused before the first byte, even when no participant would be read.
      if (withCare && after === undefined && (await careAccess(sql)) === "none") {
        throw forbidden("the care columns need care access and, with an API key, its care scope");
      }
      const through = await exportPageEnd(sql, filters, after, EXPORT_PAGE);
      const pieces: Uint8Array[] = [];
      await exportPageCsv(sql, filters, { after, through, withCare }, (csv) => pieces.push(encoder.encode(csv)));
      return { pieces, through };
    });
  let next: { pieces: Uint8Array[]; through?: PageCursor } | undefined = await read(undefined);
  let cursor: PageCursor | undefined;
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        const columns = withCare ? [...EXPORT_COLUMNS, ...CARE_COLUMNS] : EXPORT_COLUMNS;
        controller.enqueue(encoder.encode(`${BOM}${columns.join(",")}\r\n`));
      },
      async pull(controller) {
        const page = next ?? (await read(cursor));
        next = undefined;
        for (const piece of page.pieces) controller.enqueue(piece);
        if (page.through) cursor = page.through;
        else controller.close();
      },
    },
    // Read a page only when the previous one has been taken: memory holds one page.
    { highWaterMark: 0 },
  );
}
