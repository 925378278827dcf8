import { ApiError, badRequest } from "../errors.ts";
import { WRITABLE_FIELDS, type WritableField } from "../participants/schemas.ts";
import { CARE_ALIASES, CARE_COLUMNS, isCareColumn } from "./care-columns.ts";
import { readCsv } from "./csv-reader.ts";
import {
  type DateFormat,
  DEFAULT_DATE_FORMAT,
  genderOf,
  isoDate,
  type Mapping,
  mappedValue,
  normaliseStatus,
  parseDateFormat,
  suggestionsFor,
  valueLookups,
} from "./import-options.ts";
import { type Candidate, NAMED_REFERENCES, type NamedReference, type RowIssue } from "./rows.ts";

/**
 * A registration spreadsheet, saved as CSV, turned into participant rows:
 * columns are matched to fields by name (case, spaces and punctuation do not
 * matter; common aliases are known), structure records may be given by name,
 * and every line keeps its line number for the report.
 */

/** Lines of participants one import takes (one transaction). */
export const MAX_IMPORT_LINES = 20_000;

/** The documented 10 MB (README, OpenAPI) of an import's body. */
export const MAX_IMPORT_BYTES = 10 * 1_048_576;
export const CSV_LIMIT_TEXT = "CSV imports are limited to 10 MB";

/**
 * What an import reads at most. A participant's cells together are far
 * below 64 K characters, and an export has 32 columns; blank lines (every cell
 * empty) are read but bounded too, at as many again as participant lines.
 */
export const CSV_LIMITS = {
  bytes: MAX_IMPORT_BYTES,
  records: 2 * MAX_IMPORT_LINES + 1,
  cells: 256,
  recordBytes: 65_536,
};

type Target = Exclude<WritableField, "instance_id"> | NamedReference | string;

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

const TARGETS = new Set<string>([...WRITABLE_FIELDS.filter((f) => f !== "instance_id"), ...NAMED_REFERENCES, ...CARE_COLUMNS]);
const ALL_ALIASES: Record<string, Target> = { ...ALIASES, ...CARE_ALIASES };
/** Every name a column may have, to its field: what an unknown column is compared with for a suggestion. */
const KNOWN_NAMES = new Map<string, string>([...[...TARGETS].map((t) => [t, t] as const), ...Object.entries(ALL_ALIASES)]);
const DATE_FIELDS = new Set(["date_of_birth", "arrival_date", "departure_date"]);

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
  return ALL_ALIASES[name];
}

/** What an import is told about its file besides the file. */
export interface ReadOptions {
  dateFormat?: DateFormat;
  mapping?: Mapping;
  /** Upsert: only user_id is needed, other columns may be missing (what they hold stays as it is). */
  upsert?: boolean;
}

/** An unknown column and the fields it may have meant. */
export interface UnknownColumn {
  column: string;
  did_you_mean: string[];
}

export interface ColumnMapping {
  column: string;
  field: Target;
}

export interface ParsedImport {
  columns: ColumnMapping[];
  /** Columns not taken, as written in the header (export's id and timestamps not included). */
  ignored: string[];
  /** Of those, the ones close to a field's name. */
  suggestions: UnknownColumn[];
  /** Care columns of the header (fields), which need care write access. */
  careColumns: string[];
  /** Participant lines, blank ones not counted. */
  lines: number;
  candidates: Candidate[];
  /** Problems of single lines found while reading (cell counts). */
  issues: RowIssue[];
}

/** An exported cell neutralised against formula injection (`'=…`) is read back as it was written. */
const unneutralise = (cell: string) => (/^'[=+\-@\t\r\uFF1D\uFF0B\uFF0D\uFF20]/.test(cell) ? cell.slice(1) : cell);

interface MappedHeader {
  columns: Array<ColumnMapping | undefined>;
  ignored: string[];
}

function mapHeader(header: string[], options: ReadOptions): MappedHeader {
  const columns: Array<ColumnMapping | undefined> = [];
  const ignored: string[] = [];
  const taken = new Map<Target, string>();
  const chosen = options.mapping?.columns ?? {};
  const byName = new Map(Object.entries(chosen).map(([column, field]) => [normaliseHeader(column), field]));
  const used = new Set<string>();
  for (const column of header) {
    const key = normaliseHeader(column);
    let target: Target | "skip" | undefined;
    if (byName.has(key)) {
      used.add(key);
      const field = byName.get(key);
      target = field === null || field === undefined ? "skip" : (targetOf(field) ?? field);
      if (target !== "skip" && !TARGETS.has(target)) {
        throw badRequest(`the mapping sends column '${column}' to '${field}', which is not a field an import takes`, {
          field: `mapping.columns.${column}`,
          issue: "is not a field an import takes",
        });
      }
    } else target = targetOf(column);
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
  for (const column of Object.keys(chosen)) {
    if (!used.has(normaliseHeader(column))) {
      throw badRequest(`the mapping names column '${column}', which the header does not have`, {
        field: `mapping.columns.${column}`,
        issue: "is not a column of the file",
      });
    }
  }
  const needed = options.upsert ? (["user_id"] as const) : (["user_id", "first_name", "surname"] as const);
  const missing = needed.filter((f) => !taken.has(f));
  if (missing.length > 0) {
    throw badRequest(`the header has no column for ${missing.join(", ")}`, {
      field: "header",
      issue: `needs ${missing.join(", ")}`,
    });
  }
  return { columns, ignored };
}

/** A CSV body as the route or the CLI has it. */
export type CsvBody = ReadableStream<Uint8Array> | Uint8Array | string;

function streamOf(body: CsvBody): ReadableStream<Uint8Array> {
  if (body instanceof ReadableStream) return body;
  const bytes = typeof body === "string" ? new TextEncoder().encode(body) : body;
  return new ReadableStream({
    start(controller) {
      controller.enqueue(bytes);
      controller.close();
    },
  });
}

/** A cell of a participant field as the field takes it, or an issue (a date that does not fit the format). */
function fieldValue(field: string, cell: string, format: DateFormat): { value: string } | { issue: string; kind: string } {
  if (DATE_FIELDS.has(field)) {
    const iso = isoDate(cell, format);
    if (iso === undefined) {
      const kind = `does not match date_format ${format.text}`;
      return { issue: `${kind}${format.text === DEFAULT_DATE_FORMAT ? " (set date_format to read other dates)" : ""}`, kind };
    }
    return { value: iso };
  }
  if (field === "gender") return { value: genderOf(cell) };
  // Spreadsheets capitalise; the API's status values are lower case.
  if (field === "status") return { value: normaliseStatus(cell) };
  return { value: cell };
}

/**
 * The participant rows of a CSV file for `instanceId`, read as it arrives;
 * file-level problems (a limit passed, no header, no lines) are a 400 or 413
 * for the whole file, raised at the line where they are found. Each row is
 * numbered as a spreadsheet numbers it (the header is row 1).
 */
export async function parseImport(body: CsvBody, instanceId: string, options: ReadOptions = {}): Promise<ParsedImport> {
  const format = options.dateFormat ?? (parseDateFormat(DEFAULT_DATE_FORMAT) as DateFormat);
  const values = valueLookups(options.mapping?.values);
  let mapped: MappedHeader | undefined;
  const candidates: Candidate[] = [];
  const issues: RowIssue[] = [];
  let lines = 0;
  for await (const { cells, row: at } of readCsv(streamOf(body), CSV_LIMITS, CSV_LIMIT_TEXT)) {
    if (!mapped) {
      mapped = mapHeader(cells, options);
      continue;
    }
    // Rows a spreadsheet leaves behind with every cell empty are not participants.
    if (!cells.some((cell) => cell.trim() !== "")) continue;
    if (++lines > MAX_IMPORT_LINES) {
      throw new ApiError(
        "VALIDATION_ERROR",
        `the file has more than ${MAX_IMPORT_LINES} lines; one import takes at most ${MAX_IMPORT_LINES}`,
        {
          field: "body",
          line: at,
          issue: `more than ${MAX_IMPORT_LINES} lines`,
        },
      );
    }
    const { columns } = mapped;
    const extra = cells.slice(columns.length).filter((cell) => cell.trim() !== "");
    if (extra.length > 0) {
      issues.push({ at, field: "line", issue: `has ${cells.length} cells, the header has ${columns.length}` });
      continue;
    }
    const input: Record<string, string> = { instance_id: instanceId };
    const names: Partial<Record<NamedReference, string>> = {};
    const raw: Record<string, string> = {};
    let care: Record<string, string> | undefined;
    columns.forEach((mapping, i) => {
      if (!mapping) return;
      const field = mapping.field;
      const cell = mappedValue(values.get(field), unneutralise((cells[i] ?? "").trim())).trim();
      if (cell === "") return;
      if (isCareColumn(field)) {
        care ??= {};
        care[field] = cell;
        return;
      }
      raw[field] = cell;
      if ((NAMED_REFERENCES as readonly string[]).includes(field)) {
        names[field as NamedReference] = cell;
        return;
      }
      const value = fieldValue(field, cell, format);
      if ("issue" in value) issues.push({ at, field, issue: value.issue, kind: value.kind });
      else input[field] = value.value;
    });
    candidates.push({ at, input, names, raw, care });
  }
  if (!mapped) throw badRequest("the file is empty", { field: "body", issue: "is empty" });
  if (lines === 0) throw badRequest("the file has a header but no participant lines", { field: "body", issue: "has no lines" });
  const columns = mapped.columns.filter((c): c is ColumnMapping => c !== undefined);
  return {
    columns,
    ignored: mapped.ignored,
    suggestions: mapped.ignored.flatMap((column) => {
      const found = suggestionsFor(normaliseHeader(column), KNOWN_NAMES);
      return found.length > 0 ? [{ column, did_you_mean: found }] : [];
    }),
    careColumns: columns.filter((c) => isCareColumn(c.field)).map((c) => c.field),
    lines,
    candidates,
    issues,
  };
}
