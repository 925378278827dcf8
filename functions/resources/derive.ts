import { z } from "@hono/zod-openapi";
import { deletedAtField } from "./listing.ts";

/**
 * A resource declares its client-writable fields once, as one zod object; the
 * create body, the update body and the record the API returns are derived
 * from it here, so a rule (length, format, nullability) is never written twice.
 *
 * Bodies are strict: a field the operation does not know is a 400 naming it
 * (a typo such as `start_data` is not silently dropped). The fields of the
 * record's own read form (id, timestamps, computed names) are accepted and
 * ignored, so a client may send back what it read.
 */

const timestamp = () => z.string().openapi({ format: "date-time", example: "2026-07-14T09:30:00.000Z" });

/** What every record reads with besides its writable fields. */
const READ_FORM = ["id", "created_at", "updated_at", "deleted_at"];

/** Read-form fields in a body: documented as read-only, accepted whatever their value, never used. */
export function readOnlyFields(names: readonly string[]): Record<string, z.ZodOptional<z.ZodUnknown>> {
  return Object.fromEntries(
    names.map((name) => [
      name,
      z.unknown().optional().openapi({ readOnly: true, description: "Read-only: accepted (as read) and ignored" }),
    ]),
  );
}

/** The record as returned: every field present (null when unset), plus id, `computed` names and timestamps. */
export function recordOf<S extends z.ZodRawShape, C extends z.ZodRawShape = Record<never, never>>(
  fields: z.ZodObject<S>,
  computed: C = {} as C,
) {
  return z.object({
    id: z.string().openapi({ format: "uuid" }),
    ...fields.required().shape,
    ...computed,
    created_at: timestamp(),
    updated_at: timestamp(),
    ...deletedAtField,
  });
}

/** A create body: the fields, and the read form's others (`computed`: the record's computed names) ignored. */
export function createOf<S extends z.ZodRawShape>(fields: z.ZodObject<S>, computed: readonly string[] = []) {
  return z.strictObject({ ...fields.shape, ...readOnlyFields([...READ_FORM, ...computed]) });
}

/**
 * An update body (PUT and PATCH alike): any subset of the fields, but at least
 * one of them — a body with nothing to change is a client mistake, not a no-op.
 */
export function updateOf<S extends z.ZodRawShape>(fields: z.ZodObject<S>, computed: readonly string[] = []) {
  const names = Object.keys(fields.shape);
  return z
    .strictObject({ ...fields.partial().shape, ...readOnlyFields([...READ_FORM, ...computed]) })
    .refine(
      (body) => names.some((name) => (body as Record<string, unknown>)[name] !== undefined),
      `send at least one of: ${names.join(", ")}`,
    );
}
