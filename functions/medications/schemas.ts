import { z } from "@hono/zod-openapi";
import { cleanText, optionalDate, optionalLongText, optionalText, requiredText } from "../resources/fields.ts";
import { listing } from "../resources/listing.ts";

/**
 * The contract of a participant's medications (care data). The database
 * (sql/migrations/*_health_medications.sql) holds the same rules as checks.
 */

const timestamp = () => z.string().openapi({ format: "date-time" });
const uuid = () => z.string().openapi({ format: "uuid" });

/** A time of day, `HH:MM` on a 24-hour clock. */
export const clockTime = () =>
  z
    .string()
    .regex(/^([01][0-9]|2[0-3]):[0-5][0-9]$/, "must be a time of day HH:MM (24-hour)")
    .openapi({ example: "08:00" });

const medicationFields = {
  name: requiredText(),
  dose: optionalText().openapi({ example: "5 ml" }),
  route: optionalText().openapi({ description: "How it is given, e.g. oral, inhaled, topical", example: "oral" }),
  instructions: optionalLongText(),
  start_date: optionalDate(),
  end_date: optionalDate(),
  times: z
    .array(clockTime())
    .min(1)
    .max(24)
    .nullable()
    .optional()
    .openapi({
      description:
        "A fixed schedule: times of day in the instance's time_zone, stored sorted without repeats. Not with prn. Null or absent: no fixed times.",
      example: ["08:00", "20:00"],
    }),
  prn: z.boolean().optional().openapi({ description: "As needed (pro re nata), never due in a pass. Default false." }),
  min_interval_hours: z.number().positive().max(168).nullable().optional().openapi({
    description: "As needed only: the least time between two doses; a dose sooner is 409 unless overridden",
  }),
  max_doses_per_24h: z.number().int().min(1).max(48).nullable().optional().openapi({
    description: "As needed only: the most doses in any 24 hours; one more is 409 unless overridden",
  }),
};
const FIELDS = Object.keys(medicationFields) as Array<keyof typeof medicationFields>;

type Body = {
  times?: string[] | null;
  prn?: boolean;
  min_interval_hours?: number | null;
  max_doses_per_24h?: number | null;
  start_date?: string | null;
  end_date?: string | null;
};

/** As far as the body tells; the database's checks hold the rest (an update that sends one side only). */
function scheduleRules(body: Body, ctx: z.RefinementCtx) {
  if (body.prn === true && body.times)
    ctx.addIssue({ code: "custom", path: ["times"], message: "is not for an as-needed (prn) medication" });
  if (body.prn === false && (body.min_interval_hours != null || body.max_doses_per_24h != null))
    ctx.addIssue({
      code: "custom",
      path: [body.min_interval_hours != null ? "min_interval_hours" : "max_doses_per_24h"],
      message: "is only for an as-needed (prn) medication",
    });
  if (body.start_date && body.end_date && body.end_date < body.start_date)
    ctx.addIssue({ code: "custom", path: ["end_date"], message: "must not be before start_date" });
}

export const MedicationCreate = z
  .strictObject(medicationFields)
  .superRefine((body, ctx) => {
    scheduleRules({ ...body, prn: body.prn ?? false }, ctx);
  })
  .openapi("MedicationCreate");

export const MedicationUpdate = z
  .strictObject({ ...medicationFields, name: medicationFields.name.optional() })
  .superRefine(scheduleRules)
  .refine((body) => FIELDS.some((field) => body[field] !== undefined), {
    message: `send at least one of: ${FIELDS.join(", ")}`,
  })
  .openapi("MedicationUpdate");

export const Medication = z
  .object({
    id: uuid(),
    participant_id: uuid(),
    name: z.string(),
    dose: z.string().nullable(),
    route: z.string().nullable(),
    instructions: z.string().nullable(),
    start_date: z.string().nullable().openapi({ format: "date" }),
    end_date: z.string().nullable().openapi({ format: "date" }),
    times: z.array(z.string()).nullable(),
    prn: z.boolean(),
    min_interval_hours: z.number().nullable(),
    max_doses_per_24h: z.number().int().nullable(),
    created_at: timestamp(),
    updated_at: timestamp(),
    deleted_at: timestamp().nullable(),
  })
  .openapi("Medication");

export const MEDICATION_SORT = ["name", "created_at", "updated_at"] as const;
export const MedicationListQuery = z.object(listing(MEDICATION_SORT, 100));

export const MedicationPath = z.object({
  id: cleanText().openapi({ param: { name: "id", in: "path" }, format: "uuid", description: "The participant's id" }),
  medication_id: cleanText().openapi({ param: { name: "medication_id", in: "path" }, format: "uuid" }),
});

/** Sorted, without repeats, as the database stores them. */
export function normaliseTimes<T extends { times?: string[] | null }>(body: T): T {
  if (!body.times) return body;
  return { ...body, times: [...new Set(body.times)].sort() };
}
