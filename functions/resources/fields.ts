import { z } from "@hono/zod-openapi";

/**
 * Field schemas shared by every resource, so each rule of the contract (docs/api.md) is
 * written once: text lengths, strict dates, id formats, pagination.
 */

// No flags: the OpenAPI document carries the source as an ECMAScript pattern, where a flag would be lost.
const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

export const isUuid = (value: string) => UUID.test(value);

/** Text fields are at most 200 characters; description and purpose 2,000. */
export const SHORT_TEXT = 200;
export const LONG_TEXT = 2_000;

/** C0 control characters (docs/api.md, "The contract"): none in one-line text; long text may hold tabs and line breaks. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is this pattern's job
const CONTROL = /[\u0000-\u001f]/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: as above, less tab, line feed and carriage return
const CONTROL_BUT_LINES = /[\u0000-\u0008\u000b\u000c\u000e-\u001f]/;
const wellFormed = (value: string) => (value as string & { isWellFormed(): boolean }).isWellFormed();

/**
 * Any text a client sends (bodies, queries, paths, CSV cells): no C0 control
 * character (NUL above all, which Postgres cannot store) and no unpaired
 * surrogate. Such text is refused naming the field, never altered; it is
 * checked before trimming, so a line break around a name is refused too.
 */
export const cleanText = (options: { lines?: boolean } = {}) =>
  z
    .string()
    .refine((value) => !(options.lines ? CONTROL_BUT_LINES : CONTROL).test(value), {
      message: options.lines
        ? "must not contain control characters other than tabs and line breaks"
        : "must not contain control characters",
      abort: true,
    })
    .refine(wellFormed, { message: "must be well-formed Unicode (no unpaired surrogate)", abort: true });

/** Why a text is refused (see cleanText), or undefined when it is clean. */
export function textIssue(value: string, options: { lines?: boolean } = {}): string | undefined {
  const result = cleanText(options).safeParse(value);
  return result.success ? undefined : result.error.issues[0]?.message;
}

/** A required name-like field: trimmed, not empty. */
export const requiredText = (max = SHORT_TEXT) => cleanText().trim().min(1, "must not be empty").max(max);

/** An optional field that may also be sent as null (to clear it on update). */
export const optionalText = (max = SHORT_TEXT) => cleanText().trim().max(max).nullable().optional();

/** Description and purpose: long, and may hold tabs and line breaks. */
export const optionalLongText = () => cleanText({ lines: true }).trim().max(LONG_TEXT).nullable().optional();

/** An id in a request body: malformed is a 400 naming the field. */
export const idField = () => z.string().regex(UUID, "must be a uuid").openapi({ format: "uuid" });
export const optionalId = () => idField().nullable().optional();

/** A strict calendar date `YYYY-MM-DD` (2026-02-30 is refused). */
export const dateString = () =>
  z
    .string()
    // abort: a date of the wrong form is one problem, not also "not a calendar date".
    .regex(/^\d{4}-\d{2}-\d{2}$/, { message: "must be a date in the form YYYY-MM-DD", abort: true })
    .refine((value) => {
      const date = new Date(`${value}T00:00:00Z`);
      return !Number.isNaN(date.getTime()) && date.toISOString().startsWith(value);
    }, "is not a calendar date")
    .openapi({ format: "date", example: "2026-07-14" });
export const optionalDate = () => dateString().nullable().optional();

/**
 * An IANA time zone name (`Europe/London`, `UTC`). The database checks it
 * against its own zone list too (*_health_medications.sql), so both agree a
 * zone exists; POSIX strings and abbreviations are refused.
 */
export const timeZone = () =>
  z
    .string()
    .regex(/^(UTC|[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+){1,2})$/, {
      message: "must be an IANA time zone (e.g. Europe/London)",
      abort: true,
    })
    .refine((value) => {
      try {
        new Intl.DateTimeFormat("en", { timeZone: value });
        return true;
      } catch {
        return false;
      }
    }, "is not a known IANA time zone");

/**
 * A whole number in a query: plain decimal digits only. `1e3`, `0x10`, ` 5`
 * and `5.0`, which a number parser would take, are refused.
 */
export const queryInteger = (min: number, max: number, message: string) =>
  z
    .string()
    .regex(/^[0-9]{1,15}$/, { message, abort: true })
    .transform(Number)
    .pipe(z.number().min(min, message).max(max, message));

/** `limit` 1–1000 (default per resource), `offset` ≥ 0; anything else is 400. */
export const pagination = (defaultLimit: number) => ({
  limit: queryInteger(1, 1000, "must be an integer from 1 to 1000")
    .default(defaultLimit)
    .openapi({ type: "integer", minimum: 1, maximum: 1000, default: defaultLimit }),
  offset: queryInteger(0, Number.MAX_SAFE_INTEGER, "must be an integer of 0 or more")
    .default(0)
    .openapi({ type: "integer", minimum: 0, default: 0 }),
});

/** A list filter on an id: malformed is a 400 naming the parameter. */
export const idFilter = () => idField().optional();

/**
 * Path ids are plain strings in the contract: an id that is not a uuid names no
 * record, so it is a 404 (checked by the handler with isUuid), not a 400.
 */
export const IdParam = z.object({
  id: cleanText().openapi({ param: { name: "id", in: "path" }, format: "uuid" }),
});
