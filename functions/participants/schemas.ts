import { z } from "@hono/zod-openapi";
import { isSafePhotoLink } from "../photos/links.ts";
import {
  cleanText,
  dateString,
  idField,
  idFilter,
  optionalDate,
  optionalId,
  optionalText,
  requiredText,
  SHORT_TEXT,
} from "../resources/fields.ts";
import { deletedAtField, listing } from "../resources/listing.ts";

/**
 * The participant contract: what a client may write, what it reads back, and
 * the list query. The database holds the rules between fields (pairs, same
 * instance, dates in order); these schemas hold each field's own shape.
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

const status = z.enum(STATUSES, { error: `must be one of ${STATUSES.join(", ")}` });

/** Photo links may be long signed URLs, so they get the database's 2,000 characters. */
const PHOTO_LINK = 2_000;
const PRONOUNS = 50;

/** Every field a client may set, each declared once; create and update are derived from it. */
const writable = {
  user_id: requiredText(),
  instance_id: idField(),
  first_name: requiredText(),
  surname: requiredText(),
  full_name: optionalText().openapi({ description: "Generated from first_name and surname when missing or empty" }),
  gender,
  pronouns: optionalText(PRONOUNS),
  status: status.optional().openapi({ description: "Defaults to active when created without one" }),
  date_of_birth: optionalDate(),
  school_year: optionalText(),
  rank: optionalText(),
  unit_name: optionalText(),
  school_institute: optionalText(),
  arrival_date: optionalDate(),
  departure_date: optionalDate().openapi({ description: "Not before arrival_date" }),
  super_group_id: optionalId().openapi({ description: "Filled from sub_group_id when only that is given" }),
  sub_group_id: optionalId(),
  block_id: optionalId().openapi({ description: "Filled from room_id when only that is given" }),
  room_id: optionalId(),
  room_number: optionalText().openapi({ description: "Filled from room_id when not given with it" }),
  photo_link: optionalText(PHOTO_LINK)
    .refine((value) => value == null || isSafePhotoLink(value), "must be an http(s) URL or this service's photo path")
    .openapi({ description: "An http(s) URL, or the service's own photo path (/api/v1/photos/user/{id})" }),
};

export type WritableField = keyof typeof writable;
export const WRITABLE_FIELDS = Object.keys(writable) as WritableField[];

/** Unknown fields (and the read-only id, created_at, updated_at) are dropped by z.object. */
export const CreateBody = z.object(writable).openapi("ParticipantCreate");

export const UpdateBody = z
  .object({
    ...writable,
    user_id: writable.user_id.optional(),
    instance_id: writable.instance_id.optional(),
    first_name: writable.first_name.optional(),
    surname: writable.surname.optional(),
  })
  .refine((body) => WRITABLE_FIELDS.some((field) => body[field] !== undefined), {
    message: "must contain at least one field to change",
  })
  .openapi("ParticipantUpdate");

export type CreateInput = z.infer<typeof CreateBody>;
export type UpdateInput = z.infer<typeof UpdateBody>;

const nullableText = z.string().nullable();
const nullableId = z.string().uuid().nullable();
const nullableDate = dateString().nullable();

export const Participant = z
  .object({
    id: z.string().uuid(),
    instance_id: z.string().uuid(),
    user_id: z.string(),
    first_name: z.string(),
    surname: z.string(),
    full_name: z.string(),
    gender: z.enum(GENDERS).nullable(),
    pronouns: nullableText,
    status,
    date_of_birth: nullableDate,
    school_year: nullableText,
    rank: nullableText,
    unit_name: nullableText,
    school_institute: nullableText,
    arrival_date: nullableDate,
    departure_date: nullableDate,
    super_group_id: nullableId,
    sub_group_id: nullableId,
    block_id: nullableId,
    room_id: nullableId,
    room_number: nullableText,
    photo_link: nullableText,
    created_at: z.string().datetime(),
    updated_at: z.string().datetime(),
    supergroup_name: nullableText,
    subgroup_name: nullableText,
    block_name: nullableText,
    room_name: nullableText,
    ...deletedAtField,
  })
  .openapi("Participant");

/** What a participant list may be sorted by. */
const PARTICIPANT_SORT = [
  "surname",
  "first_name",
  "full_name",
  "user_id",
  "date_of_birth",
  "status",
  "arrival_date",
  "departure_date",
  "created_at",
  "updated_at",
];

export const ListQuery = z.object({
  instance_id: idFilter(),
  status: status.optional(),
  super_group_id: idFilter(),
  sub_group_id: idFilter(),
  block_id: idFilter(),
  room_id: idFilter(),
  // An empty search box (`?q=`) means no search.
  q: cleanText()
    .trim()
    .max(SHORT_TEXT)
    .transform((term) => (term === "" ? undefined : term))
    .optional()
    .openapi({
      type: "string",
      description:
        "Part of first_name, surname, full_name or user_id, ignoring case, accents and punctuation (jose finds José, oconnor finds O'Connor)",
    }),
  ...listing(PARTICIPANT_SORT, 50),
});

export type ListFilters = z.infer<typeof ListQuery>;
