import { ApiError, type FieldIssue } from "../errors.ts";
import { pacer } from "./pace.ts";

/**
 * The shape of a JSON body checked before JSON.parse sees it. JSON.parse
 * cannot be interrupted, and its cost grows with the number of values, not
 * the bytes: a 5 MB array of 2.6 million zeros or 1 MB of `[` keeps the
 * event loop from every other tenant for seconds before any schema can
 * refuse it. This scan (a loop over the text, in turns) refuses a body
 * nested deeper or holding more values than any request of this API needs.
 */

/** Nesting a request body needs: an object of arrays of objects, with room to spare. */
export const MAX_JSON_DEPTH = 32;
/** Values of one body: a bulk create of 1,000 participants with every field holds about 30,000. */
export const MAX_JSON_VALUES = 100_000;

/** Characters scanned between two turns. */
const STRETCH = 65_536;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;

const refuse = (issue: string) => new ApiError("VALIDATION_ERROR", `the body ${issue}`, { field: "body", issue });

/** Throws a 400 when `text` nests deeper than MAX_JSON_DEPTH or holds more than MAX_JSON_VALUES values. */
export async function checkJsonShape(text: string): Promise<void> {
  const turn = pacer();
  let depth = 0;
  let values = 1;
  let inString = false;
  for (let start = 0; start < text.length; start += STRETCH) {
    const end = Math.min(text.length, start + STRETCH);
    for (let i = start; i < end; i++) {
      const c = text.charCodeAt(i);
      if (inString) {
        if (c === BACKSLASH) i++;
        else if (c === QUOTE) inString = false;
      } else if (c === QUOTE) inString = true;
      else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
        if (++depth > MAX_JSON_DEPTH) throw refuse(`is nested deeper than ${MAX_JSON_DEPTH} levels`);
      } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) depth--;
      else if (c === COMMA && ++values > MAX_JSON_VALUES) throw refuse(`holds more than ${MAX_JSON_VALUES} values`);
    }
    await turn();
  }
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is this pattern's job
const CONTROL_BUT_LINES = /[\u0000-\u0008\u000b\u000c\u000e-\u001f]/;
const wellFormed = (value: string) => (value as string & { isWellFormed(): boolean }).isWellFormed();

/** Why a string cannot be in any body, or undefined. Tabs and line breaks are left to each field's schema. */
function hostile(value: string): string | undefined {
  if (CONTROL_BUT_LINES.test(value)) return "must not contain control characters";
  if (!wellFormed(value)) return "must be well-formed Unicode (no unpaired surrogate)";
  return undefined;
}

/** Fields named in one answer at most, as a bulk's or an import's problems are (each row's are wanted). */
const MAX_LISTED = 1_000;

/**
 * Every string of a parsed JSON body, field names included, at any depth: no
 * NUL or other C0 control character but tab and line breaks, no unpaired
 * surrogate (docs/api.md, "The contract"). One check for every operation, so
 * that a field no schema reads (a read-only field sent back and ignored, a
 * bulk row's extra) cannot carry one past validation to the database, which
 * cannot store a NUL. The 400 names each such field by its path (the first
 * 1,000), so a bulk of bad rows hears of every row.
 */
export function checkJsonText(value: unknown): void {
  const found: FieldIssue[] = [];
  let more = 0;
  const note = (path: string[], issue: string) => {
    if (found.length < MAX_LISTED) found.push({ field: path.length > 0 ? path.join(".") : "body", issue });
    else more++;
  };
  const walk = (item: unknown, path: string[]) => {
    if (typeof item === "string") {
      const issue = hostile(item);
      if (issue) note(path, issue);
    } else if (Array.isArray(item)) {
      for (let i = 0; i < item.length; i++) walk(item[i], [...path, String(i)]);
    } else if (item !== null && typeof item === "object") {
      for (const [key, inner] of Object.entries(item)) {
        const issue = hostile(key);
        if (issue) note(path, `a field name ${issue}`);
        else walk(inner, [...path, key]);
      }
    }
  };
  walk(value, []);
  const [first] = found;
  if (!first) return;
  const rest = found.length - 1 + more;
  throw new ApiError(
    "VALIDATION_ERROR",
    `invalid request: ${first.field}: ${first.issue}${rest > 0 ? ` (and ${rest} more field${rest === 1 ? "" : "s"})` : ""}`,
    found,
  );
}
