import { z } from "@hono/zod-openapi";
import { readOnlyFields } from "../resources/derive.ts";
import { cleanText, idFilter, SHORT_TEXT } from "../resources/fields.ts";
import { cursorListing, deletedAtField } from "../resources/listing.ts";
import { readable, status, WRITABLE_FIELDS, writable } from "./fields.ts";

/**
 * The participant contract: what a client may write, what it reads back, and
 * the list query, all derived from the fields declared in fields.ts.
 */

export { GENDERS, STATUSES, WRITABLE_FIELDS, type WritableField } from "./fields.ts";

/**
 * Bodies are strict: an unknown field is a 400 naming it. The read form's other
 * fields (id, timestamps, the computed names) are accepted and ignored, so a
 * client may send back the participant it read.
 */
const READ_ONLY = [...Object.keys(readable), "deleted_at"].filter(
  (name) => !(WRITABLE_FIELDS as readonly string[]).includes(name),
);

export const CreateBody = z.strictObject({ ...writable, ...readOnlyFields(READ_ONLY) }).openapi("ParticipantCreate");

export const UpdateBody = z
  .strictObject({
    ...readOnlyFields(READ_ONLY),
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

export const Participant = z
  .object({
    ...readable,
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
  presence: z
    .enum(["in", "out", "none"])
    .optional()
    .openapi({ description: "Only participants checked in (in), checked out (out), or never recorded (none)" }),
  severe_allergy: z
    .enum(["true"])
    .transform(() => true as const)
    .optional()
    .openapi({
      type: "string",
      enum: ["true"],
      description:
        "Only participants with a severe or anaphylactic allergy in their care record. Needs care access (403 otherwise); the list never shows the record, and each listed participant's flag is recorded in the audit trail as a read (care_flag).",
    }),
  ...cursorListing(PARTICIPANT_SORT, 50),
});

export type ListFilters = z.infer<typeof ListQuery>;
