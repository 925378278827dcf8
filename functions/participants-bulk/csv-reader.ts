import { CsvError, parse } from "csv-parse/sync";
import { ApiError, badRequest } from "../errors.ts";
import { pacer } from "../http/pace.ts";

/**
 * A CSV body read as a stream of records, with every limit enforced while
 * reading: the first byte past the size limit, the first cell past the
 * cells-per-line limit, the first byte past the line-size limit or the first
 * line past the lines limit stops the reading with a 413 or 400 naming the
 * line. The bytes are cut at record boundaries into batches of about
 * BATCH_BYTES, each parsed by csv-parse; memory holds one batch and one
 * unfinished record, whatever the body holds, and the work gives way to
 * other requests every few milliseconds (pace.ts), so a hostile file costs
 * its sender time, not every other tenant.
 */

export interface CsvLimits {
  /** Bytes of the body (the route's documented limit). */
  bytes: number;
  /** Records read, blank ones included (lines without a single character are not records). */
  records: number;
  /** Cells in one record, the header's included. */
  cells: number;
  /** Bytes of one record. */
  recordBytes: number;
}

export interface CsvRecord {
  cells: string[];
  /** The file's line where the record starts: the header is line 1, empty lines count. */
  line: number;
  /**
   * The record's row as a spreadsheet numbers it: the header is row 1, an
   * empty line is a row, and a record is one row however many line breaks
   * its quoted cells hold.
   */
  row: number;
}

/** Bytes, and lines, parsed in one go: what one uninterrupted stretch of parsing costs. */
const BATCH_BYTES = 16_384;
/**
 * csv-parse builds an error object (a deep copy of its options) for every
 * record whose cell count differs from the first one's, even when told to
 * accept it, so a file of very short lines costs far more per byte than
 * any other (bench/README.md, "Figures behind the code's comments").
 * Counting lines per batch keeps each stretch short whatever the lines hold.
 */
const BATCH_LINES = 200;

const LF = 0x0a;
const CR = 0x0d;
const QUOTE = 0x22;

const notUtf8 = () => badRequest("the file is not UTF-8 text; save it as CSV UTF-8", { field: "body", issue: "is not UTF-8" });

/**
 * The body's bytes, counted against the size limit, checked to be UTF-8,
 * without a leading byte-order mark and with every line break made LF
 * (csv-parse numbers the lines of CRLF files inconsistently once a quoted
 * cell holds a line break; a CR byte is never part of a multi-byte UTF-8
 * character, so this is safe on bytes).
 */
async function* bytesOf(body: ReadableStream<Uint8Array>, maxBytes: number, limitText: string): AsyncGenerator<Uint8Array> {
  const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
  const reader = body.getReader();
  let total = 0;
  let afterCr = false;
  let first = true;
  let ended = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) {
        ended = true;
        break;
      }
      total += value.byteLength;
      if (total > maxBytes) {
        throw new ApiError("PAYLOAD_TOO_LARGE", limitText, { field: "body", issue: `must be at most ${maxBytes} bytes` });
      }
      let bytes = value;
      if (first && bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) bytes = bytes.subarray(3);
      first = false;
      // In slices, so that each step of the work after this one is short.
      for (let at = 0; at < bytes.length; at += BATCH_BYTES) {
        let slice = bytes.subarray(at, at + BATCH_BYTES);
        try {
          utf8.decode(slice, { stream: true });
        } catch {
          throw notUtf8();
        }
        // The LF of a CRLF whose CR ended the slice before (and became LF there).
        if (afterCr && slice[0] === LF) slice = slice.subarray(1);
        if (slice.length === 0) continue;
        afterCr = slice[slice.length - 1] === CR;
        yield slice.includes(CR) ? lfOnly(slice) : slice;
      }
    }
    try {
      utf8.decode();
    } catch {
      throw notUtf8();
    }
  } finally {
    // Refused early (a line past a limit): what the client still sends, up
    // to the size limit, is read and dropped unparsed, so that it gets the
    // answer rather than a connection reset while it writes. Past the size
    // limit the body is let go, not cancelled (cancelling destroys the
    // connection before the answer is written); the HTTP server then drops
    // the rest (@hono/node-server: for at most 500 ms or 64 MB) and closes.
    while (!ended && total <= maxBytes) {
      const next = await reader.read().catch(() => undefined);
      if (!next || next.done) break;
      total += next.value.byteLength;
    }
    reader.releaseLock();
  }
}

/** CRLF and lone CR as LF. */
function lfOnly(bytes: Uint8Array): Uint8Array {
  const out = new Uint8Array(bytes.length);
  let n = 0;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i] as number;
    if (b === CR) {
      out[n++] = LF;
      if (bytes[i + 1] === LF) i++;
    } else out[n++] = b;
  }
  return out.subarray(0, n);
}

/** The separator of the header line: a comma, or the semicolon or tab some spreadsheets write. */
function detectDelimiter(header: string): string {
  const counts = [",", ";", "\t"].map((d) => [d, header.split(d).length - 1] as const);
  return counts.reduce((best, c) => (c[1] > best[1] ? c : best))[0];
}

/** A stretch of whole records and the file line it starts on. */
interface Batch {
  bytes: Uint8Array;
  firstLine: number;
}

/**
 * Whole records in batches, found by following the quotes (RFC 4180: a
 * doubled quote inside a quoted cell toggles twice), with the cells and bytes
 * of each record counted on the way, so that an endless line or a line of
 * a million separators is refused where it passes the limit rather than parsed.
 */
async function* batchesOf(bytes: AsyncGenerator<Uint8Array>, delimiter: number, limits: CsvLimits): AsyncGenerator<Batch> {
  let buffer = new Uint8Array(BATCH_BYTES * 2);
  let length = 0;
  let quoted = false;
  let cells = 1;
  /** Where the record being scanned starts, in the buffer. */
  let recordStart = 0;
  /** The file line of the byte being scanned, and of the buffer's first byte. */
  let line = 1;
  let firstLine = 1;
  let lines = 0;
  for await (const chunk of bytes) {
    if (length + chunk.length > buffer.length) {
      const grown = new Uint8Array(Math.max(buffer.length * 2, length + chunk.length));
      grown.set(buffer.subarray(0, length));
      buffer = grown;
    }
    buffer.set(chunk, length);
    let i = length;
    length += chunk.length;
    for (; i < length; i++) {
      const b = buffer[i];
      if (b === QUOTE) quoted = !quoted;
      else if (b === LF) {
        line++;
        if (!quoted) {
          cells = 1;
          recordStart = i + 1;
          if (++lines >= BATCH_LINES || recordStart >= BATCH_BYTES) {
            yield { bytes: buffer.slice(0, recordStart), firstLine };
            buffer.copyWithin(0, recordStart, length);
            length -= recordStart;
            i -= recordStart;
            recordStart = 0;
            firstLine = line;
            lines = 0;
          }
        }
      } else if (b === delimiter && !quoted && ++cells > limits.cells) {
        throw badRequest(`line ${line} has more than ${limits.cells} cells`, {
          field: "body",
          line,
          issue: `more than ${limits.cells} cells`,
        });
      }
      if (i - recordStart >= limits.recordBytes) {
        throw badRequest(`line ${line} is longer than ${limits.recordBytes} bytes`, {
          field: "body",
          line,
          issue: `longer than ${limits.recordBytes} bytes`,
        });
      }
    }
  }
  if (length > 0) yield { bytes: buffer.slice(0, length), firstLine };
}

type Parsed = { record: string[]; info: { lines: number } };

function parseBatch(batch: Batch, delimiter: string): Parsed[] {
  try {
    return parse(batch.bytes as Buffer, {
      delimiter,
      info: true,
      relax_column_count: true,
      skip_empty_lines: true,
    }) as unknown as Parsed[];
  } catch (error) {
    if (error instanceof CsvError) {
      const at = (error as CsvError & { lines?: number }).lines;
      const line = at === undefined ? undefined : batch.firstLine - 1 + at;
      const message = error.message.replace(/at line \d+/, `at line ${line}`);
      throw badRequest(`the file is not valid CSV: ${message}`, { field: "body", line, issue: message });
    }
    throw error;
  }
}

/** Bytes to read at most to find the header's end (the header is a record like any other). */
async function headerOf(bytes: AsyncGenerator<Uint8Array>, limits: CsvLimits): Promise<Uint8Array[]> {
  const head: Uint8Array[] = [];
  let size = 0;
  while (size < limits.recordBytes) {
    const next = await bytes.next();
    if (next.done) break;
    head.push(next.value);
    size += next.value.byteLength;
    if (next.value.includes(LF)) break;
  }
  return head;
}

async function* replay(head: Uint8Array[], rest: AsyncGenerator<Uint8Array>): AsyncGenerator<Uint8Array> {
  yield* head;
  yield* rest;
}

/**
 * The body's records in file order. Stops with an ApiError at the first
 * limit passed; `limitText` is the 413's message.
 */
export async function* readCsv(
  body: ReadableStream<Uint8Array>,
  limits: CsvLimits,
  limitText: string,
): AsyncGenerator<CsvRecord> {
  const bytes = bytesOf(body, limits.bytes, limitText);
  try {
    const head = await headerOf(bytes, limits);
    const headText = new TextDecoder().decode(joined(head, limits.recordBytes));
    const end = headText.indexOf("\n");
    const delimiter = detectDelimiter(end === -1 ? headText : headText.slice(0, end));
    const turn = pacer();
    let count = 0;
    /** Line breaks inside the quoted cells of the records so far: lines that are not rows. */
    let inCells = 0;
    for await (const batch of batchesOf(replay(head, bytes), delimiter.charCodeAt(0), limits)) {
      const records = parseBatch(batch, delimiter);
      for (const { record, info } of records) {
        const breaks = record.reduce((n, cell) => n + (cell.match(/\n/g)?.length ?? 0), 0);
        const line = batch.firstLine - 1 + info.lines - breaks;
        const row = line - inCells;
        inCells += breaks;
        if (++count > limits.records) {
          throw badRequest(`the file goes on past ${limits.records} lines; an import reads no further`, {
            field: "body",
            line,
            issue: `more than ${limits.records} lines`,
          });
        }
        yield { cells: record, line, row };
        await turn();
      }
      await turn();
    }
  } finally {
    await bytes.return(undefined);
  }
}

function joined(parts: Uint8Array[], limit: number): Uint8Array {
  const length = Math.min(
    limit,
    parts.reduce((n, p) => n + p.length, 0),
  );
  const out = new Uint8Array(length);
  let at = 0;
  for (const part of parts) {
    if (at >= length) break;
    const take = part.subarray(0, length - at);
    out.set(take, at);
    at += take.length;
  }
  return out;
}
