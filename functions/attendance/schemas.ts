import { z } from "@hono/zod-openapi";
import { cleanText, idField, idFilter, LONG_TEXT, optionalText, pagination } from "../resources/fields.ts";

/**
 * The contract of movements (check-ins and check-outs). The database
 * (sql/migrations/*_attendance.sql) holds the same rules, and the pickup
 * rule and the timeline besides.
 */

const timestamp = () => z.string().openapi({ format: "date-time" });
const uuid = () => z.string().openapi({ format: "uuid" });

/** How far ahead of the service's clock a device's recorded_at may be. */
export const FUTURE_SLACK_MS = 5 * 60_000;

export const DIRECTIONS = ["in", "out"] as const;

const recordedAt = z
  .string()
  .datetime({ offset: true, message: "must be an RFC 3339 timestamp, e.g. 2026-07-14T09:30:00Z" })
  .refine((value) => Date.parse(value) <= Date.now() + FUTURE_SLACK_MS, "must not be more than 5 minutes in the future")
  .openapi({ type: "string", format: "date-time" });

const securityCode = cleanText()
  .trim()
  .toUpperCase()
  .regex(/^[A-Z0-9]{4,8}$/, "must be the code from the check-in slip (4 to 8 letters and digits)");

const movementFields = {
  participant_id: idField(),
  direction: z.enum(DIRECTIONS),
  recorded_at: recordedAt
    .optional()
    .openapi({ description: "When the device recorded it (RFC 3339); now when omitted; at most 5 minutes ahead" }),
  location: optionalText().openapi({ description: "Where (a gate, a field), free text" }),
  pickup_contact_id: idField()
    .nullable()
    .optional()
    .openapi({ description: "Check-out: the contact who collects the participant (a live contact with authorised_pickup)" }),
  security_code: securityCode
    .nullable()
    .optional()
    .openapi({ description: "Check-out: the code of the guardian's slip; when given it must be the check-in's" }),
  override_reason: cleanText({ lines: true })
    .trim()
    .min(1, "must not be empty")
    .max(LONG_TEXT)
    .nullable()
    .optional()
    .openapi({ description: "Check-out without an authorised pickup: an admin's reason (others get 403)" }),
};

/** What belongs to a check-out only. */
function directionRules(
  body: { direction: string; pickup_contact_id?: unknown; security_code?: unknown; override_reason?: unknown },
  ctx: z.RefinementCtx,
) {
  if (body.direction !== "in") return;
  for (const field of ["pickup_contact_id", "security_code", "override_reason"] as const) {
    if (body[field] != null) ctx.addIssue({ code: "custom", path: [field], message: "is for a check-out only" });
  }
}

export const MovementCreate = z
  .strictObject({
    ...movementFields,
    nonce: idField()
      .optional()
      .openapi({ description: "The client's id of the movement (a UUID): a second request with it is a 409" }),
  })
  .superRefine(directionRules)
  .openapi("MovementCreate");

/** One record of a sync: the nonce is required, and a check-in carries no code (the service issues codes online only). */
export const SyncRecord = z
  .strictObject({
    ...movementFields,
    nonce: idField().openapi({ description: "The client's id of the movement (a UUID), the same on every upload" }),
  })
  .superRefine(directionRules);

export const Movement = z
  .object({
    id: uuid(),
    participant_id: uuid(),
    instance_id: uuid(),
    direction: z.enum(DIRECTIONS),
    recorded_at: timestamp(),
    received_at: timestamp(),
    recorded_by: uuid().nullable().openapi({ description: "The user whose credential recorded it" }),
    location: z.string().nullable(),
    pickup_contact_id: uuid().nullable(),
    override_reason: z.string().nullable(),
    nonce: uuid(),
    conflict: z.boolean().openapi({ description: "It contradicts its predecessor in the timeline (by recorded_at)" }),
    conflict_reason: z.string().nullable(),
  })
  .openapi("Movement");

export const CheckedMovement = Movement.extend({
  security_code: z
    .string()
    .nullable()
    .openapi({ description: "A check-in's code for the guardian's slip, shown in this answer only; null for a check-out" }),
}).openapi("RecordedMovement");

export const MovementListQuery = z.object({
  instance_id: idFilter(),
  participant_id: idFilter(),
  direction: z.enum(DIRECTIONS).optional(),
  since: z
    .string()
    .datetime({ offset: true, message: "must be an RFC 3339 timestamp, e.g. 2026-07-14T09:30:00Z" })
    .optional()
    .openapi({ type: "string", format: "date-time", description: "Only movements recorded at or after this time" }),
  ...pagination(100),
});

export type MovementCreateInput = z.infer<typeof MovementCreate>;
export type MovementListFilters = z.infer<typeof MovementListQuery>;
export type MovementRecord = z.infer<typeof Movement>;

/** At most this many records in one sync. */
export const MAX_SYNC_RECORDS = 1_000;

/**
 * A sync's body. Each record is checked on its own (SyncRecord), so that one
 * bad record is answered `invalid` while the others are kept: the body
 * itself only has to be an array of up to 1,000 objects.
 */
export const SyncBody = z
  .strictObject({
    records: z
      .array(z.looseObject({}).openapi({ description: "A movement as for POST /attendance, with its nonce" }))
      .min(1)
      .max(MAX_SYNC_RECORDS)
      .openapi({
        description:
          "Movements recorded offline: {participant_id, direction, recorded_at, nonce, location?, pickup_contact_id?, security_code?, override_reason?}. nonce (a UUID) is required and stays the same on every upload; a check-in carries no security_code (the service issues codes online only).",
      }),
  })
  .openapi("AttendanceSync");

export const SYNC_OUTCOMES = ["accepted", "duplicate", "conflict", "invalid"] as const;

export const SyncAnswer = z
  .object({
    results: z.array(
      z.object({
        index: z.number().int().openapi({ description: "The record's position in records (from 0)" }),
        nonce: z.string().nullable().optional(),
        outcome: z.enum(SYNC_OUTCOMES),
        reason: z.string().optional().openapi({ description: "Why it is a conflict or invalid" }),
        field: z.string().optional().openapi({ description: "The field an invalid record is refused on" }),
        movement_id: uuid().optional(),
      }),
    ),
    counts: z.object({
      accepted: z.number().int(),
      duplicate: z.number().int(),
      conflict: z.number().int(),
      invalid: z.number().int(),
    }),
  })
  .openapi("AttendanceSyncResult");
export type SyncResult = z.infer<typeof SyncAnswer>["results"][number];
