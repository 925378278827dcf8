import { ApiError } from "../errors.ts";
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
