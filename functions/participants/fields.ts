import { z } from "@hono/zod-openapi";
import { isSafePhotoLink } from "../photos/links.ts";
import { dateString, idField, optionalDate, optionalId, optionalText, requiredText } from "../resources/fields.ts";

/**
 * Every field of a participant, each declared once, in the order the API
 * and the CSV export write them: how it reads back (`read`), how a client
 * writes it (`write`; absent for what only the service sets) and what it is
 * in SQL (`sql`), from which the JSON that Postgres writes and the CSV
 * columns are derived. The database holds the rules between fields (pairs,
 * same instance, dates in order); these hold each field's own shape.
 */

export const GENDERS = ["Male", "Female", "Other"] as const;
export const STATUSES = ["active", "inactive"] as const;

/** `male`, ` FEMALE ` and `Other` are all accepted and stored in the spelling of GENDERS. */
const gender = z
  .string()
  .trim()
  .transform((value) => GENDERS.find((g) => g.toLowerCase() === value.toLowerCase()) ?? value)
  .pipe(z.enum(GENDERS, { error: `must be one of ${GENDERS.join(", ")}` }))
  .nullable()
  .optional()
  .openapi({ type: "string", enum: [...GENDERS], description: "Matched case-insensitively" });

export const status = z.enum(STATUSES, { error: `must be one of ${STATUSES.join(", ")}` });

/** Photo links may be long signed URLs, so they get the database's 2,000 characters. */
const PHOTO_LINK = 2_000;
const PRONOUNS = 50;

/**
 * What a column is in SQL, which decides how Postgres writes it as text:
 * uuids, dates (YYYY-MM-DD) and timestamps (as JavaScript's toISOString
 * writes them) are converted; `text` is the client's own words (in CSV,
 * neutralised against spreadsheet formulas); `choice` one of a fixed set.
 */
export type SqlKind = "uuid" | "text" | "choice" | "date" | "timestamp";

interface Field {
  sql: SqlKind;
  read: z.ZodType;
  write?: z.ZodType;
}

const nullableText = z.string().nullable();
const nullableId = z.string().uuid().nullable();
const nullableDate = dateString().nullable();

export const PARTICIPANT_FIELDS = {
  id: { sql: "uuid", read: z.string().uuid() },
  instance_id: { sql: "uuid", read: z.string().uuid(), write: idField() },
  user_id: { sql: "text", read: z.string(), write: requiredText() },
  first_name: { sql: "text", read: z.string(), write: requiredText() },
  surname: { sql: "text", read: z.string(), write: requiredText() },
  full_name: {
    sql: "text",
    read: z.string(),
    write: optionalText().openapi({ description: "Generated from first_name and surname when missing or empty" }),
  },
  gender: { sql: "choice", read: z.enum(GENDERS).nullable(), write: gender },
  pronouns: { sql: "text", read: nullableText, write: optionalText(PRONOUNS) },
  status: {
    sql: "choice",
    read: status,
    write: status.optional().openapi({ description: "Defaults to active when created without one" }),
  },
  date_of_birth: { sql: "date", read: nullableDate, write: optionalDate() },
  school_year: { sql: "text", read: nullableText, write: optionalText() },
  rank: { sql: "text", read: nullableText, write: optionalText() },
  unit_name: { sql: "text", read: nullableText, write: optionalText() },
  school_institute: { sql: "text", read: nullableText, write: optionalText() },
  arrival_date: { sql: "date", read: nullableDate, write: optionalDate() },
  departure_date: { sql: "date", read: nullableDate, write: optionalDate().openapi({ description: "Not before arrival_date" }) },
  super_group_id: {
    sql: "uuid",
    read: nullableId,
    write: optionalId().openapi({ description: "Filled from sub_group_id when only that is given" }),
  },
  sub_group_id: { sql: "uuid", read: nullableId, write: optionalId() },
  block_id: {
    sql: "uuid",
    read: nullableId,
    write: optionalId().openapi({ description: "Filled from room_id when only that is given" }),
  },
  room_id: { sql: "uuid", read: nullableId, write: optionalId() },
  room_number: {
    sql: "text",
    read: nullableText,
    write: optionalText().openapi({ description: "Filled from room_id when not given with it" }),
  },
  photo_link: {
    sql: "text",
    read: nullableText,
    write: optionalText(PHOTO_LINK)
      .refine((value) => value == null || isSafePhotoLink(value), "must be an http(s) URL or this service's photo path")
      .openapi({ description: "An http(s) URL, or the service's own photo path (/api/v1/photos/user/{id})" }),
  },
  created_at: { sql: "timestamp", read: z.string().datetime() },
  updated_at: { sql: "timestamp", read: z.string().datetime() },
  presence: {
    sql: "choice",
    read: z.enum(["in", "out"]).nullable().openapi({
      description: "Checked in or out: the direction of the last movement by recorded_at; null when none was recorded",
    }),
  },
  presence_since: {
    sql: "timestamp",
    read: z.string().datetime().nullable().openapi({ description: "recorded_at of that last movement" }),
  },
} as const satisfies Record<string, Field>;

export type FieldName = keyof typeof PARTICIPANT_FIELDS;
export const FIELD_NAMES = Object.keys(PARTICIPANT_FIELDS) as FieldName[];

/** The names of what a participant points at, written after its fields; each its table's `name`, or null. */
export const NAME_FIELDS = ["supergroup_name", "subgroup_name", "block_name", "room_name"] as const;

type Writable = { [F in FieldName as (typeof PARTICIPANT_FIELDS)[F] extends { write: z.ZodType } ? F : never]: F };
export type WritableField = keyof Writable;

/** The writable fields' schemas, in field order. */
export const writable = Object.fromEntries(
  FIELD_NAMES.flatMap((name) => {
    const field: Field = PARTICIPANT_FIELDS[name];
    return field.write ? [[name, field.write]] : [];
  }),
) as { [F in WritableField]: (typeof PARTICIPANT_FIELDS)[F]["write"] };

export const WRITABLE_FIELDS = Object.keys(writable) as WritableField[];

/** The fields' read schemas, then the names, in the order the API writes them. */
export const readable = {
  ...(Object.fromEntries(FIELD_NAMES.map((name) => [name, PARTICIPANT_FIELDS[name].read])) as {
    [F in FieldName]: (typeof PARTICIPANT_FIELDS)[F]["read"];
  }),
  ...(Object.fromEntries(NAME_FIELDS.map((name) => [name, nullableText])) as Record<
    (typeof NAME_FIELDS)[number],
    typeof nullableText
  >),
};
