import { z } from "@hono/zod-openapi";
import { cleanText, idField, idFilter, LONG_TEXT, pagination, SHORT_TEXT } from "../resources/fields.ts";

/**
 * The contract of incidents (care data, append-only; safeguarding ones for
 * safeguarding leads only). The database (sql/migrations/*_incidents.sql)
 * holds the same rules.
 */

export const CATEGORIES = ["injury", "illness", "behaviour", "safeguarding", "near_miss", "other"] as const;
export const SEVERITIES = ["minor", "moderate", "serious"] as const;
export const STATUSES = ["open", "closed"] as const;
export const ATTENTION_REASONS = ["serious", "guardians_not_notified", "guardians_notified_late"] as const;

/** Free text of a report: several lines, up to 10,000 characters. */
const REPORT_TEXT = 10_000;

const timestamp = () => z.string().openapi({ format: "date-time" });
const uuid = () => z.string().openapi({ format: "uuid" });
const instant = () =>
  z
    .string()
    .datetime({ offset: true, message: "must be an RFC 3339 timestamp, e.g. 2026-07-14T08:05:00Z" })
    .openapi({ format: "date-time" });
const reportText = (max: number) => cleanText({ lines: true }).trim().min(1, "must not be empty").max(max);
const reason = () => cleanText({ lines: true }).trim().min(1, "must not be empty").max(LONG_TEXT);

export const IncidentCreate = z
  .strictObject({
    instance_id: idField(),
    occurred_at: instant().openapi({ description: "When it happened (at most 5 minutes ahead of the server's clock)" }),
    location: reportText(SHORT_TEXT),
    category: z.enum(CATEGORIES).openapi({
      description: "safeguarding: only safeguarding leads read it afterwards (anyone with care write access may report one)",
    }),
    severity: z
      .enum(SEVERITIES)
      .openapi({ description: "serious: needs attention, and raises incident.needs_attention at once" }),
    participant_ids: z
      .array(idField())
      .min(1, "must name at least one participant")
      .max(100)
      .openapi({ description: "The participants involved, live participants of the instance (1 to 100); fixed once reported" }),
    description: reportText(REPORT_TEXT),
    actions_taken: cleanText({ lines: true }).trim().max(REPORT_TEXT),
    guardian_notified_at: instant().nullable().optional().openapi({ description: "When the guardians were told" }),
    guardian_notified_by: cleanText().trim().min(1).max(SHORT_TEXT).nullable().optional().openapi({
      description: "Who told them",
    }),
  })
  .openapi("IncidentCreate");

/** The fields an amendment may change, each to a new value. */
export const IncidentChanges = z
  .strictObject({
    occurred_at: instant().optional(),
    location: reportText(SHORT_TEXT).optional(),
    category: z.enum(CATEGORIES).optional().openapi({
      description: "Between categories other than safeguarding: an incident never moves into or out of safeguarding (400)",
    }),
    severity: z.enum(SEVERITIES).optional(),
    description: reportText(REPORT_TEXT).optional(),
    actions_taken: cleanText({ lines: true }).trim().max(REPORT_TEXT).optional(),
    guardian_notified_at: instant().nullable().optional(),
    guardian_notified_by: cleanText().trim().min(1).max(SHORT_TEXT).nullable().optional(),
    status: z.enum(STATUSES).optional().openapi({ description: "closed closes the incident, open reopens it" }),
  })
  .refine((changes) => Object.keys(changes).length > 0, "must name at least one field and its new value")
  .openapi("IncidentChanges", {
    description: "{field: new value}; participant_ids and instance_id are fixed once reported",
  });

export const IncidentAmendmentCreate = z
  .strictObject({ changes: IncidentChanges, reason: reason() })
  .openapi("IncidentAmendmentCreate");

export const IncidentClose = z
  .strictObject({ reason: reason().optional().openapi({ description: 'Why it is closed (default "closed")' }) })
  .openapi("IncidentClose");

const Values = {
  occurred_at: timestamp(),
  location: z.string(),
  category: z.enum(CATEGORIES),
  severity: z.enum(SEVERITIES),
  description: z.string(),
  actions_taken: z.string(),
  guardian_notified_at: timestamp().nullable(),
  guardian_notified_by: z.string().nullable(),
  status: z.enum(STATUSES),
};

const IncidentValues = z.object(Values).openapi("IncidentValues");

const Amendment = z
  .object({
    id: uuid(),
    changes: z.record(z.string(), z.unknown()).openapi({ description: "{field: new value}" }),
    reason: z.string(),
    recorded_by: uuid().nullable(),
    recorded_by_email: z.string().nullable(),
    recorded_at: timestamp(),
  })
  .openapi("IncidentAmendment");

export const Incident = z
  .object({
    id: uuid(),
    instance_id: uuid(),
    participant_ids: z.array(uuid()).openapi({ description: "The participants it names (an erased one's link is removed)" }),
    ...Values,
    needs_attention: z.boolean().openapi({
      description: "Open, and serious or its guardians not recorded as notified within the tenant's incident_notice_hours",
    }),
    attention_reasons: z.array(z.enum(ATTENTION_REASONS)),
    guardians_notify_by: timestamp().openapi({
      description: "occurred_at plus the tenant's incident_notice_hours: guardians are to be notified by then",
    }),
    original: IncidentValues.openapi({ description: "The values as first reported (status open)" }),
    amendments: z.array(Amendment).openapi({ description: "Oldest first; the values above are the original with these applied" }),
    reported_by: uuid().nullable(),
    reported_by_email: z.string().nullable(),
    recorded_at: timestamp(),
  })
  .openapi("Incident");

export const IncidentListQuery = z.object({
  instance_id: idFilter(),
  participant_id: idFilter(),
  category: z.enum(CATEGORIES).optional(),
  severity: z.enum(SEVERITIES).optional().openapi({ description: "By the current value" }),
  status: z.enum(STATUSES).optional().openapi({ description: "By the current value" }),
  occurred_from: instant().optional().openapi({ description: "Only incidents that occurred at or after (current value)" }),
  occurred_to: instant().optional().openapi({ description: "Only incidents that occurred before (current value)" }),
  needs_attention: z
    .enum(["true", "false"])
    .transform((v) => v === "true")
    .optional()
    .openapi({ type: "string", enum: ["true", "false"], description: "true: the incidents needing attention" }),
  ...pagination(100),
});

export const IncidentPath = z.object({
  id: cleanText().openapi({ param: { name: "id", in: "path" }, format: "uuid", description: "The incident's id" }),
});
