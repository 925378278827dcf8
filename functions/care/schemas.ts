import { z } from "@hono/zod-openapi";
import { cleanText, LONG_TEXT, optionalLongText, optionalText, requiredText } from "../resources/fields.ts";
import { listing } from "../resources/listing.ts";
import { phoneNumber } from "./phone.ts";

/**
 * The contract of the safeguarding records: a participant's contacts, care
 * record and consents. Each shape is declared once here; the database
 * (sql/migrations/*_care_records.sql) holds the same rules as checks.
 */

const timestamp = () => z.string().openapi({ format: "date-time" });
const uuid = () => z.string().openapi({ format: "uuid" });

// ----------------------------------------------------------------------------- contacts

const contactFields = {
  name: requiredText(),
  relationship: optionalText(),
  phone: phoneNumber().nullable().optional(),
  phone_alt: phoneNumber().nullable().optional(),
  email: cleanText().trim().max(320).email("must be an e-mail address").nullable().optional(),
  emergency: z.boolean().optional().openapi({ description: "An emergency contact (needs a phone). Default false." }),
  emergency_order: z
    .number()
    .int()
    .min(1)
    .max(99)
    .nullable()
    .optional()
    .openapi({ description: "Who to call first among the emergency contacts (1 first); only for emergency contacts" }),
  authorised_pickup: z.boolean().optional().openapi({ description: "May collect the participant. Default false." }),
  notes: optionalLongText(),
};

const CONTACT_FIELDS = Object.keys(contactFields) as Array<keyof typeof contactFields>;

/**
 * An emergency contact needs a phone, and only an emergency contact has an
 * order, refused naming the field: on update, as far as the body tells (the
 * database's checks hold the rest).
 */
function emergencyRules(
  body: { emergency?: boolean; phone?: string | null; emergency_order?: number | null },
  ctx: z.RefinementCtx,
) {
  if (body.emergency === true && body.phone === null)
    ctx.addIssue({ code: "custom", path: ["phone"], message: "is required for an emergency contact" });
  if (body.emergency === false && body.emergency_order != null)
    ctx.addIssue({ code: "custom", path: ["emergency_order"], message: "is only for emergency contacts" });
}

export const ContactCreate = z
  .object(contactFields)
  .superRefine((body, ctx) => {
    if (body.emergency && !body.phone)
      ctx.addIssue({ code: "custom", path: ["phone"], message: "is required for an emergency contact" });
    if (!body.emergency && body.emergency_order != null)
      ctx.addIssue({ code: "custom", path: ["emergency_order"], message: "is only for emergency contacts" });
  })
  .openapi("ContactCreate");

export const ContactUpdate = z
  .object({ ...contactFields, name: contactFields.name.optional() })
  .superRefine(emergencyRules)
  .refine((body) => CONTACT_FIELDS.some((field) => body[field] !== undefined), {
    message: "must contain at least one field to change",
  })
  .openapi("ContactUpdate");

export const Contact = z
  .object({
    id: uuid(),
    participant_id: uuid(),
    name: z.string(),
    relationship: z.string().nullable(),
    phone: z.string().nullable().openapi({ description: "E.164" }),
    phone_alt: z.string().nullable().openapi({ description: "E.164" }),
    email: z.string().nullable(),
    emergency: z.boolean(),
    emergency_order: z.number().int().nullable(),
    authorised_pickup: z.boolean(),
    notes: z.string().nullable(),
    created_at: timestamp(),
    updated_at: timestamp(),
    deleted_at: timestamp().nullable(),
  })
  .openapi("Contact");

/** What a contact list may be sorted by; its default is its stable order. */
export const CONTACT_SORT = ["emergency_order", "created_at", "updated_at"] as const;
const contactListing = listing(CONTACT_SORT, 100);

export const ContactListQuery = z.object({
  ...contactListing,
  sort: contactListing.sort.openapi({
    type: "string",
    description:
      "Comma-separated fields to sort by, `-` for descending (emergency_order, created_at, updated_at, id). Default: emergency_order (unset last), then created_at, then id.",
  }),
});

export const ContactPath = z.object({
  id: cleanText().openapi({ param: { name: "id", in: "path" }, format: "uuid", description: "The participant's id" }),
  contact_id: cleanText().openapi({ param: { name: "contact_id", in: "path" }, format: "uuid" }),
});

// ----------------------------------------------------------------------------- care record

export const SEVERITIES = ["mild", "moderate", "severe", "anaphylactic"] as const;

const Allergy = z
  .object({ name: requiredText(), severity: z.enum(SEVERITIES) })
  .strict()
  .openapi("Allergy");
/**
 * Medications are records of their own now (/participants/{id}/medications);
 * the care record lists them read-only. A list sent back as read (every item
 * with its id) is accepted and ignored; a new item is refused, saying where
 * medications went.
 */
const MedicationsReadOnly = z
  .array(z.object({ id: z.string().optional() }).passthrough())
  .refine((items) => items.every((item) => typeof item.id === "string"), {
    message: "is read-only here: medications are records now, at /api/v1/participants/{id}/medications",
  })
  .optional()
  .openapi({
    readOnly: true,
    description:
      "Read-only: the participant's medications (/participants/{id}/medications) as {id, name, dose, schedule}; a list sent back as read is ignored, a new item is 400.",
  });

const careFields = {
  allergies: z.array(Allergy).max(50).optional(),
  dietary_requirements: optionalLongText(),
  medical_conditions: optionalLongText(),
  medications: MedicationsReadOnly,
  care_notes: optionalLongText(),
};
const CARE_FIELDS = (Object.keys(careFields) as Array<keyof typeof careFields>).filter((field) => field !== "medications");

/** PUT: the whole record; a field left out is emptied. */
export const CareRecordPut = z.object(careFields).openapi("CareRecordPut");

/** PATCH: only the fields sent change. */
export const CareRecordPatch = z
  .object(careFields)
  .refine((body) => CARE_FIELDS.some((field) => body[field] !== undefined), {
    message: "must contain at least one field to change",
  })
  .openapi("CareRecordPatch");

export const CareRecord = z
  .object({
    participant_id: uuid(),
    allergies: z.array(z.object({ name: z.string(), severity: z.enum(SEVERITIES) })),
    dietary_requirements: z.string().nullable(),
    medical_conditions: z.string().nullable(),
    medications: z
      .array(
        z.object({
          id: uuid(),
          name: z.string(),
          dose: z.string().nullable().optional(),
          schedule: z.string().nullable().optional(),
        }),
      )
      .openapi({
        description:
          "The participant's live medications, from /participants/{id}/medications (where they are written): schedule is the times of day, `as needed`, or the instructions",
      }),
    care_notes: z.string().nullable(),
    created_at: timestamp().nullable().openapi({ description: "Null until the record is first written" }),
    updated_at: timestamp().nullable(),
  })
  .openapi("CareRecord");

// ----------------------------------------------------------------------------- consents

export const CONSENT_STATUSES = ["granted", "refused", "unknown"] as const;
const ConsentStatus = z.enum(CONSENT_STATUSES);

export const ConsentsPut = z
  .object({
    photo: ConsentStatus.optional().openapi({ description: "refused removes a stored photo and refuses uploads (409)" }),
    emergency_medical_treatment: ConsentStatus.optional(),
    note: cleanText({ lines: true }).trim().max(LONG_TEXT).nullable().optional().openapi({
      description: "How the answer was given (e.g. who signed the form); recorded with each answer of this request",
    }),
  })
  .refine((body) => body.photo !== undefined || body.emergency_medical_treatment !== undefined, {
    message: "send photo, emergency_medical_treatment or both",
  })
  .openapi("ConsentsPut");

const Answer = z
  .object({
    status: ConsentStatus,
    note: z.string().nullable(),
    recorded_by: uuid().nullable().openapi({ description: "The user who recorded it (null: an operator)" }),
    recorded_by_email: z.string().nullable(),
    recorded_at: timestamp().nullable().openapi({ description: "Null when nothing was recorded (status unknown)" }),
  })
  .openapi("ConsentAnswer");

export const Consents = z
  .object({
    participant_id: uuid(),
    photo: Answer,
    emergency_medical_treatment: Answer,
    history: z
      .array(Answer.extend({ id: uuid(), kind: z.enum(["photo", "emergency_medical_treatment"]) }))
      .openapi({ description: "Every answer ever recorded, newest first; a new answer never changes an old one" }),
  })
  .openapi("Consents");
