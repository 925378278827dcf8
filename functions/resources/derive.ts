import { z } from "@hono/zod-openapi";
import { deletedAtField } from "./listing.ts";

/**
 * A resource declares its client-writable fields once, as one zod object; the
 * create body, the update body and the record the API returns are derived
 * from it here, so a rule (length, format, nullability) is never written twice.
 */

const timestamp = () => z.string().openapi({ format: "date-time", example: "2026-07-14T09:30:00.000Z" });

/** The record as returned: every field present (null when unset), plus id and timestamps. */
export function recordOf<S extends z.ZodRawShape>(fields: z.ZodObject<S>) {
  return z.object({
    id: z.string().openapi({ format: "uuid" }),
    ...fields.required().shape,
    created_at: timestamp(),
    updated_at: timestamp(),
    ...deletedAtField,
  });
}

/**
 * An update body (PUT and PATCH alike): any subset of the fields, but at least
 * one of them — a body with nothing to change is a client mistake, not a no-op.
 */
export function updateOf<S extends z.ZodRawShape>(fields: z.ZodObject<S>) {
  const names = Object.keys(fields.shape).join(", ");
  return fields
    .partial()
    .refine((body) => Object.values(body).some((value) => value !== undefined), `send at least one of: ${names}`);
}
