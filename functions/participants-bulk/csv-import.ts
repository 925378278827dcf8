import { CsvError, parse } from "csv-parse/sync";
import { ApiError, badRequest } from "../errors.ts";
import { WRITABLE_FIELDS, type WritableField } from "../participants/schemas.ts";
import { type Candidate, NAMED_REFERENCES, type NamedReference, type RowIssue } from "./rows.ts";

/**
 * A registration spreadsheet, saved as CSV, turned into participant rows:
 * columns are matched to fields by name (case, spaces and punctuation do not
 * matter; common aliases are known), structure records may be given by name,
 * and every line keeps its line number for the report.
 */

/** Lines of participants one import takes (one transaction). */
export const MAX_IMPORT_LINES = 20_000;

type Target = Exclude<WritableField, "instance_id"> | NamedReference;

/** Columns an export writes that an import does not take (the instance comes from the request). */
const SKIPPED = new Set(["id", "instance_id", "created_at", "updated_at"]);

/** Other names for fields, as registration forms and spreadsheets spell them (after normalising). */
const ALIASES: Record<string, Target> = {
  userid: "user_id",
  external_id: "user_id",
  registration_id: "user_id",
  participant_id: "user_id",
  firstname: "first_name",
  first: "first_name",
  forename: "first_name",
  given_name: "first_name",
  givenname: "first_name",
  last_name: "surname",
  lastname: "surname",
  last: "surname",
  family_name: "surname",
  familyname: "surname",
  fullname: "full_name",
  name: "full_name",
  sex: "gender",
  pronoun: "pronouns",
  dob: "date_of_birth",
  birth_date: "date_of_birth",
  birthdate: "date_of_birth",
  birthday: "date_of_birth",
  year: "school_year",
  grade: "school_year",
  unit: "unit_name",
  school: "school_institute",
  institute: "school_institute",
  school_name: "school_institute",
  arrival: "arrival_date",
  arrives: "arrival_date",
  departure: "departure_date",
  departs: "departure_date",
  room_no: "room_number",
  photo: "photo_link",
  photo_url: "photo_link",
  supergroup_name: "supergroup",
  super_group: "supergroup",
  super_group_name: "supergroup",
  subgroup_name: "subgroup",
  sub_group: "subgroup",
  sub_group_name: "subgroup",
  block_name: "block",
  room_name: "room",
};

const TARGETS = new Set<string>([...WRITABLE_FIELDS.filter((f) => f !== "instance_id"), ...NAMED_REFERENCES]);

/** `Date of Birth`, `date-of-birth` and ` DATE_OF_BIRTH ` all become `date_of_birth`. */
export const normaliseHeader = (header: string) =>
  header
    .normalize("NFC")
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, "_")
    .replace(/^_+|_+$/g, "");

export function targetOf(header: string): Target | "skip" | undefined {
  const name = normaliseHeader(header);
  if (SKIPPED.has(name)) return "skip";
  if (TARGETS.has(name)) return name as Target;
  return ALIASES[name];
}

export interface ColumnMapping {
  column: string;
  field: Target;
}

export interface ParsedImport {
  columns: ColumnMapping[];
  /** Columns not taken, as written in the header (export's id and timestamps not included). */
  ignored: string[];
  candidates: Candidate[];
  /** Problems of single lines found while reading (cell counts). */
  issues: RowIssue[];
}

/** The file's text: UTF-8, with or without a byte-order mark; anything else is refused. */
export function decodeCsv(bytes: Uint8Array): string {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw badRequest("the file is not UTF-8 text; save it as CSV UTF-8", { field: "body", issue: "is not UTF-8" });
  }
}

/** The separator of the header line: a comma, or the semicolon or tab some spreadsheets write. */
function detectDelimiter(text: string): string {
  const end = text.search(/\r|\n/);
  const header = end === -1 ? text : text.slice(0, end);
  const counts = [",", ";", "\t"].map((d) => [d, header.split(d).length - 1] as const);
  return counts.reduce((best, c) => (c[1] > best[1] ? c : best))[0];
}

/** An exported cell neutralised against formula injection (`'=…`) is read back as it was written. */
const unneutralise = (cell: string) => (/^'[=+\-@\t\r\uFF1D\uFF0B\uFF0D\uFF20]/.test(cell) ? cell.slice(1) : cell);

interface ParsedRecord {
  record: string[];
  info: { lines: number };
}

function readRecords(source: string): ParsedRecord[] {
  // One kind of line break (LF): csv-parse numbers the lines of CRLF files
  // inconsistently once a quoted cell holds a line break. Breaks inside cells
  // become LF too.
  const text = source.replace(/\r\n?/g, "\n");
  try {
    return parse(text, {
      bom: true,
      delimiter: detectDelimiter(text),
      info: true,
      relax_column_count: true,
      skip_empty_lines: true,
    }) as unknown as ParsedRecord[];
  } catch (error) {
    if (error instanceof CsvError) {
      const line = (error as CsvError & { lines?: number }).lines;
      throw badRequest(`the file is not valid CSV: ${error.message}`, { field: "body", line, issue: error.message });
    }
    throw error;
  }
}

/** Where a record starts: csv-parse counts lines to its end, and quoted cells may hold line breaks. */
const startLine = (r: ParsedRecord) => r.info.lines - r.record.reduce((n, cell) => n + (cell.match(/\n/g)?.length ?? 0), 0);

function mapHeader(header: string[]): { columns: Array<ColumnMapping | undefined>; ignored: string[] } {
  const columns: Array<ColumnMapping | undefined> = [];
  const ignored: string[] = [];
  const taken = new Map<Target, string>();
  for (const column of header) {
    const target = targetOf(column);
    if (target === undefined || target === "skip") {
      if (target === undefined && column.trim() !== "") ignored.push(column);
      columns.push(undefined);
      continue;
    }
    const earlier = taken.get(target);
    if (earlier !== undefined) {
      throw badRequest(`the columns '${earlier}' and '${column}' both mean ${target}`, {
        field: "header",
        column,
        issue: `repeats ${target}`,
      });
    }
    taken.set(target, column);
    columns.push({ column, field: target });
  }
  const missing = (["user_id", "first_name", "surname"] as const).filter((f) => !taken.has(f));
  if (missing.length > 0) {
    throw badRequest(`the header has no column for ${missing.join(", ")}`, {
      field: "header",
      issue: `needs ${missing.join(", ")}`,
    });
  }
  return { columns, ignored };
}

/** The participant rows of a CSV file for `instanceId`; file-level problems are a 400 for the whole file. */
export function parseImport(text: string, instanceId: string): ParsedImport {
  const [head, ...records] = readRecords(text);
  if (!head) throw badRequest("the file is empty", { field: "body", issue: "is empty" });
  const { columns, ignored } = mapHeader(head.record);
  // Rows a spreadsheet leaves behind with every cell empty are not participants.
  const lines = records.filter((r) => r.record.some((cell) => cell.trim() !== ""));
  if (lines.length === 0)
    throw badRequest("the file has a header but no participant lines", { field: "body", issue: "has no lines" });
  if (lines.length > MAX_IMPORT_LINES) {
    throw new ApiError("VALIDATION_ERROR", `the file has ${lines.length} lines; one import takes at most ${MAX_IMPORT_LINES}`, {
      field: "body",
      issue: `more than ${MAX_IMPORT_LINES} lines`,
    });
  }

  const candidates: Candidate[] = [];
  const issues: RowIssue[] = [];
  for (const r of lines) {
    const at = startLine(r);
    const extra = r.record.slice(columns.length).filter((cell) => cell.trim() !== "");
    if (extra.length > 0) {
      issues.push({ at, field: "line", issue: `has ${r.record.length} cells, the header has ${columns.length}` });
      continue;
    }
    const input: Record<string, string> = { instance_id: instanceId };
    const names: Partial<Record<NamedReference, string>> = {};
    columns.forEach((mapping, i) => {
      const cell = unneutralise((r.record[i] ?? "").trim());
      if (!mapping || cell === "") return;
      if ((NAMED_REFERENCES as readonly string[]).includes(mapping.field)) names[mapping.field as NamedReference] = cell;
      // Spreadsheets capitalise; the API's status values are lower case.
      else input[mapping.field] = mapping.field === "status" ? cell.toLowerCase() : cell;
    });
    candidates.push({ at, input, names });
  }
  return { columns: columns.filter((c): c is ColumnMapping => c !== undefined), ignored, candidates, issues };
}
