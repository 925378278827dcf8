import { z } from "@hono/zod-openapi";
import { badRequest } from "../errors.ts";
import { textIssue } from "../resources/fields.ts";

/**
 * How an import reads a file it may not edit: the date format of its date
 * columns, the spellings spreadsheets use for genders, yes/no answers and
 * consents, and the client's own mapping of columns to fields and of values
 * to values. Pure functions; csv-import.ts applies them cell by cell.
 */

// ----------------------------------------------------------------------------- dates

export interface DateFormat {
  /** As the client wrote it (named in errors). */
  text: string;
  /** The order of day, month and year in a cell. */
  order: Array<"D" | "M" | "Y">;
  separator: "-" | "/" | ".";
}

export const DEFAULT_DATE_FORMAT = "YYYY-MM-DD";

const FORMAT = /^(YYYY|DD?|MM?)([-/.])(YYYY|DD?|MM?)\2(YYYY|DD?|MM?)$/;

/**
 * `YYYY-MM-DD`, `DD/MM/YYYY`, `MM/DD/YYYY`, `D.M.YYYY`…: day, month and
 * four-digit year once each, one separator (`-`, `/` or `.`). Single letters
 * say the same as double ones: a cell may have leading zeros or not.
 */
export function parseDateFormat(text: string): DateFormat | undefined {
  const match = FORMAT.exec(text.trim().toUpperCase());
  if (!match) return undefined;
  const order = [match[1], match[3], match[4]].map((part) => (part as string)[0]) as DateFormat["order"];
  if (new Set(order).size !== 3) return undefined;
  return { text: text.trim(), order, separator: match[2] as DateFormat["separator"] };
}

/** A cell in the format as YYYY-MM-DD (the calendar check is the field's own), or undefined when it does not fit. */
export function isoDate(cell: string, format: DateFormat): string | undefined {
  const parts = cell.split(format.separator);
  if (parts.length !== 3) return undefined;
  const value: Record<string, string> = {};
  for (const [i, part] of parts.entries()) {
    const kind = format.order[i] as string;
    if (!(kind === "Y" ? /^\d{4}$/ : /^\d{1,2}$/).test(part)) return undefined;
    value[kind] = kind === "Y" ? part : part.padStart(2, "0");
  }
  return `${value.Y}-${value.M}-${value.D}`;
}

// ----------------------------------------------------------------------------- spellings

/** Letters only, lower case: `Non-binary`, `non binary` and `NONBINARY` are one spelling. */
const squash = (value: string) => value.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, "");

const GENDER_SPELLINGS: Record<string, "Male" | "Female" | "Other"> = {};
for (const s of ["m", "male", "boy", "man"]) GENDER_SPELLINGS[s] = "Male";
for (const s of ["f", "female", "girl", "woman"]) GENDER_SPELLINGS[s] = "Female";
for (const s of [
  "o",
  "other",
  "x",
  "nb",
  "nonbinary",
  "enby",
  "genderqueer",
  "genderfluid",
  "agender",
  "selfdescribe",
  "prefertoselfdescribe",
]) {
  GENDER_SPELLINGS[s] = "Other";
}

/** A gender as spreadsheets write it, in the API's spelling; anything else unchanged (the field refuses it). */
export const genderOf = (cell: string) => GENDER_SPELLINGS[squash(cell)] ?? cell;

const YES = new Set(["y", "yes", "true", "1"]);
const NO = new Set(["n", "no", "false", "0"]);

/** Y/N, yes/no, true/false, 1/0 in any case; undefined for anything else. */
export function booleanOf(cell: string): boolean | undefined {
  const value = squash(cell);
  if (YES.has(value)) return true;
  if (NO.has(value)) return false;
  return undefined;
}

/** A consent answer: granted, refused, unknown, or a yes/no; anything else unchanged (the schema refuses it). */
export function consentOf(cell: string): string {
  const value = squash(cell);
  if (["granted", "given", "consented", "agreed"].includes(value)) return "granted";
  if (["refused", "declined", "withheld"].includes(value)) return "refused";
  if (["unknown", "notknown", "notasked"].includes(value)) return "unknown";
  const yes = booleanOf(cell);
  return yes === undefined ? cell : yes ? "granted" : "refused";
}

/** `Active`, ` INACTIVE `: the API's status values are lower case. */
export const normaliseStatus = (cell: string) => cell.toLowerCase();

// ----------------------------------------------------------------------------- mapping

/** The mapping's bounds: what a registration form plausibly needs, and no more work than the file itself. */
export const MAX_MAPPING_CHARS = 16_384;
const MAX_COLUMNS = 256;
const MAX_VALUES = 2_000;

const text = (max: number) =>
  z
    .string()
    .max(max)
    .superRefine((value, ctx) => {
      const issue = textIssue(value);
      if (issue) ctx.addIssue({ code: "custom", message: issue });
    });

/**
 * `{columns: {"Registration ID": "user_id", "Notes": null}, values: {gender: {"Boy": "Male"}, room: {"8a": "8"}}}`:
 * a column to a field (null: leave the column out), and per field a cell's
 * value to the value to use (matched after trimming, ignoring case; null or
 * "" leaves the cell empty).
 */
export const ImportMapping = z
  .strictObject({
    columns: z
      .record(text(200), text(100).nullable())
      .refine((m) => Object.keys(m).length <= MAX_COLUMNS, `must map at most ${MAX_COLUMNS} columns`)
      .optional(),
    values: z
      .record(text(100), z.record(text(200), text(200).nullable()))
      .refine(
        (m) => Object.values(m).reduce((n, v) => n + Object.keys(v).length, 0) <= MAX_VALUES,
        `must map at most ${MAX_VALUES} values`,
      )
      .optional(),
  })
  .openapi("ImportMapping");

export type Mapping = z.infer<typeof ImportMapping>;

/** The mapping from its JSON text (a query parameter, or the CLI's --map file), or a 400 naming `field`. */
export function parseMapping(json: string, field: string): Mapping {
  if (json.length > MAX_MAPPING_CHARS)
    throw badRequest(`${field} is too long`, { field, issue: `must be at most ${MAX_MAPPING_CHARS} characters` });
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    throw badRequest(`${field} is not JSON`, { field, issue: "must be a JSON object" });
  }
  const parsed = ImportMapping.safeParse(value);
  if (!parsed.success) {
    const details = parsed.error.issues.map((i) => ({
      field: [field, ...i.path.map(String)].join("."),
      issue: i.code === "unrecognized_keys" ? "has an unknown member (columns, values)" : i.message,
    }));
    throw badRequest(`${field} is not a valid mapping`, details);
  }
  return parsed.data;
}

/** A field's value mapping as lookups: exact first, then ignoring case; built once per import. */
export interface ValueLookup {
  exact: Map<string, string>;
  folded: Map<string, string>;
}

export function valueLookups(values: Mapping["values"]): Map<string, ValueLookup> {
  const lookups = new Map<string, ValueLookup>();
  for (const [field, pairs] of Object.entries(values ?? {})) {
    const lookup: ValueLookup = { exact: new Map(), folded: new Map() };
    for (const [from, to] of Object.entries(pairs)) {
      lookup.exact.set(from, to ?? "");
      const folded = from.trim().toLowerCase();
      if (!lookup.folded.has(folded)) lookup.folded.set(folded, to ?? "");
    }
    lookups.set(field, lookup);
  }
  return lookups;
}

/** A cell through its field's value mapping (trimmed cell; one map lookup or two, whatever the mapping's size). */
export function mappedValue(lookup: ValueLookup | undefined, cell: string): string {
  if (!lookup) return cell;
  return lookup.exact.get(cell) ?? lookup.folded.get(cell.toLowerCase()) ?? cell;
}

// ----------------------------------------------------------------------------- suggestions

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0] as number;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j] as number;
      row[j] = Math.min(above + 1, (row[j - 1] as number) + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return row[b.length] as number;
}

/**
 * Fields an unknown column may have meant: one whose name holds the column's
 * (`Group` → supergroup, subgroup) or is a typo away (`Surnme` → surname).
 * `names` maps every known name (fields and aliases, normalised) to its field.
 */
export function suggestionsFor(normalised: string, names: Map<string, string>): string[] {
  const compact = normalised.replace(/_/g, "");
  // No field's name is longer: a longer header is nobody's typo (and the distance would cost its length squared).
  if (compact.length < 3 || compact.length > 40) return [];
  const found = new Set<string>();
  for (const [name, field] of names) {
    const other = name.replace(/_/g, "");
    const allowed = Math.max(1, Math.floor(Math.min(compact.length, other.length) / 4));
    const near = Math.abs(compact.length - other.length) <= allowed && distance(compact, other) <= allowed;
    if (near || (compact.length >= 4 && other.includes(compact))) found.add(field);
  }
  // A field itself before the id that stands for it (`Group`: supergroup before super_group_id).
  const fields = [...found];
  const named = fields.filter((f) => !f.endsWith("_id") || !fields.includes(f.replace(/_id$/, "").replace(/_/g, "")));
  return named.slice(0, 4);
}
