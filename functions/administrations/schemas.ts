import { z } from "@hono/zod-openapi";
import { cleanText, idField, LONG_TEXT, optionalText, pagination } from "../resources/fields.ts";

/**
 * The contract of the medication administration record (care data,
 * append-only). The database (sql/migrations/*_medication_administrations.sql)
 * holds the same rules.
 */

const timestamp = () => z.string().openapi({ format: "date-time" });
const uuid = () => z.string().openapi({ format: "uuid" });
const instant = () =>
  z
    .string()
    .datetime({ offset: true, message: "must be an RFC 3339 timestamp, e.g. 2026-07-14T08:05:00Z" })
    .openapi({ format: "date-time" });
const reasonText = () => cleanText({ lines: true }).trim().min(1, "must not be empty").max(LONG_TEXT);

export const OUTCOMES = ["given", "refused", "missed", "held", "unavailable"] as const;

export const AdministrationCreate = z
  .strictObject({
    medication_id: idField().optional().openapi({ description: "Required, except in a correction (it is the amended entry's)" }),
    outcome: z
      .enum(OUTCOMES)
      .optional()
      .openapi({ description: "Required, except in a correction (default: the amended entry's)" }),
    administered_at: instant()
      .optional()
      .openapi({ description: "When it happened, by the device's clock (default: now; at most 5 minutes ahead)" }),
    due_at: instant().optional().openapi({
      description:
        "The scheduled dose this charts (one of the medication's times, in the instance's time zone). Default: the scheduled time nearest administered_at, within 3 hours",
    }),
    dose_given: optionalText(),
    notes: cleanText({ lines: true }).trim().max(LONG_TEXT).nullable().optional(),
    nonce: cleanText().min(1).max(200).optional().openapi({
      description:
        "A client's id for this entry: sending it again (an offline re-upload) answers the entry stored the first time (200) instead of charting twice",
    }),
    amends: idField().optional().openapi({ description: "A correction: the entry it corrects (which stays); needs reason" }),
    reason: reasonText().optional().openapi({ description: "Why the correction: required with amends" }),
    override_reason: reasonText().optional().openapi({
      description:
        "Charts an as-needed dose inside its min_interval_hours or past its max_doses_per_24h (otherwise 409); kept on the entry",
    }),
  })
  .superRefine((body, ctx) => {
    if (body.amends === undefined) {
      if (body.medication_id === undefined) ctx.addIssue({ code: "custom", path: ["medication_id"], message: "is required" });
      if (body.outcome === undefined) ctx.addIssue({ code: "custom", path: ["outcome"], message: "is required" });
      if (body.reason !== undefined)
        ctx.addIssue({ code: "custom", path: ["reason"], message: "is only for a correction (with amends)" });
    } else if (body.reason === undefined) {
      ctx.addIssue({ code: "custom", path: ["reason"], message: "is required with amends" });
    }
  })
  .openapi("MedicationAdministrationCreate");

export const Administration = z
  .object({
    id: uuid(),
    participant_id: uuid(),
    medication_id: uuid().nullable(),
    medication_name: z.string().openapi({ description: "The medication's name when charted" }),
    outcome: z.enum(OUTCOMES),
    administered_at: timestamp(),
    due_at: timestamp().nullable().openapi({ description: "The scheduled dose it charts; null for an as-needed one" }),
    dose_given: z.string().nullable(),
    notes: z.string().nullable(),
    nonce: z.string().nullable(),
    amends: uuid().nullable().openapi({ description: "The entry this one corrects" }),
    reason: z.string().nullable(),
    override_reason: z.string().nullable(),
    recorded_by: uuid().nullable().openapi({ description: "The user who charted it (null: an operator)" }),
    recorded_by_email: z.string().nullable(),
    recorded_at: timestamp(),
    amended_by: z.array(uuid()).openapi({ description: "The entries that correct this one, oldest first" }),
    current: z.boolean().openapi({ description: "True when no entry corrects this one" }),
  })
  .openapi("MedicationAdministration");

export const AdministrationListQuery = z.object({
  medication_id: idField().optional(),
  from: instant().optional().openapi({ description: "Only entries (with their corrections) administered at or after" }),
  to: instant().optional().openapi({ description: "Only entries (with their corrections) administered before" }),
  ...pagination(100),
});

export const AdministrationPath = z.object({
  id: cleanText().openapi({ param: { name: "id", in: "path" }, format: "uuid", description: "The participant's id" }),
  entry_id: cleanText().openapi({ param: { name: "entry_id", in: "path" }, format: "uuid" }),
});
