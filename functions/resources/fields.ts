import { z } from "@hono/zod-openapi";

/**
 * Field schemas shared by every resource, so each rule of DECISIONS.md is
 * written once: text lengths, strict dates, id formats, pagination.
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const isUuid = (value: string) => UUID.test(value);

/** Text fields are at most 200 characters; description and purpose 2,000. */
export const SHORT_TEXT = 200;
export const LONG_TEXT = 2_000;

/** A required name-like field: trimmed, not empty. */
export const requiredText = (max = SHORT_TEXT) => z.string().trim().min(1, "must not be empty").max(max);

/** An optional field that may also be sent as null (to clear it on update). */
export const optionalText = (max = SHORT_TEXT) => z.string().trim().max(max).nullable().optional();

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

/** `limit` 1–1000 (default per resource), `offset` ≥ 0; anything else is 400. */
export const pagination = (defaultLimit: number) => ({
  limit: z.coerce
    .number({ error: "must be an integer from 1 to 1000" })
    .int("must be an integer from 1 to 1000")
    .min(1, "must be an integer from 1 to 1000")
    .max(1000, "must be an integer from 1 to 1000")
    .default(defaultLimit)
    .openapi({ type: "integer", minimum: 1, maximum: 1000, default: defaultLimit }),
  offset: z.coerce
    .number({ error: "must be an integer of 0 or more" })
    .int("must be an integer of 0 or more")
    .min(0, "must be an integer of 0 or more")
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
  id: z.string().openapi({ param: { name: "id", in: "path" }, format: "uuid" }),
});
