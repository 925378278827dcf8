import { z } from "@hono/zod-openapi";
import { ListQuery } from "../participants/schemas.ts";
import { cleanText, idField } from "../resources/fields.ts";
import { overrideCapacityParam } from "../rooms/capacity.ts";
import { MAX_MAPPING_CHARS } from "./import-options.ts";

/** The bulk routes' contract: request and response shapes beyond the participant's own. */

export const MAX_BULK = 1_000;

export const BulkBody = z
  .strictObject({
    // Rows are checked one by one in the handler, so that every bad row is reported with its index.
    participants: z
      .array(z.unknown())
      .min(1, "must hold at least one participant")
      .max(MAX_BULK, `must hold at most ${MAX_BULK} participants`)
      .openapi({ type: "array", items: { $ref: "#/components/schemas/ParticipantCreate" }, maxItems: MAX_BULK }),
  })
  .openapi("ParticipantBulkCreate");

/** The list's filters without paging or sync options: an export has every matching live row, in list order. */
// No care filter (severe_allergy); care columns only when asked for (include_care).
export const ExportQuery = ListQuery.omit({
  limit: true,
  offset: true,
  after: true,
  sort: true,
  updated_since: true,
  include_deleted: true,
  severe_allergy: true,
}).extend({
  include_care: z
    .enum(["true", "false"], { error: "must be true or false" })
    .optional()
    .transform((value) => value === "true")
    .openapi({
      type: "string",
      enum: ["true", "false"],
      description:
        "Add the safeguarding columns the import reads (contact_1_name … contact_3_authorised_pickup, allergies, dietary_requirements, medical_conditions, consent_photo, consent_emergency_medical_treatment). Needs care access and, with an API key, its care scope (403 otherwise); each exported participant's care read is recorded in the audit trail.",
    }),
});

export const ImportQuery = z.object({
  instance_id: idField().openapi({ description: "The instance the participants join" }),
  dry_run: z
    .enum(["true", "false", "1", "0"], { error: "must be true or false" })
    .optional()
    .transform((v) => v === "true" || v === "1"),
  mode: z
    .enum(["create", "upsert"], { error: "must be create or upsert" })
    .optional()
    .openapi({
      description:
        "create (the default): every line is a new participant, a user_id already in the instance is a problem. " +
        "upsert: a line whose user_id a live participant of the instance holds updates it (only the fields its " +
        "non-empty cells hold; the others stay as they are), the other lines create participants.",
    }),
  date_format: cleanText().max(20).optional().openapi({
    description:
      "How the file writes dates: YYYY-MM-DD (the default), DD/MM/YYYY, MM/DD/YYYY, with `-`, `/` or `.`; leading zeros optional.",
    example: "DD/MM/YYYY",
  }),
  mapping: cleanText()
    .max(MAX_MAPPING_CHARS)
    .optional()
    .openapi({
      description:
        'A JSON object (URL-encoded): `{"columns": {"Registration ID": "user_id", "Notes": null}, "values": {"gender": {"Boy": "Male"}}}`. ' +
        "columns sends a column to a field (null: leave it out); values replaces a field's cell values (matched ignoring case).",
    }),
  override_capacity: overrideCapacityParam,
});

const Outcome = z.enum(["created", "updated", "unchanged"]);

export const ImportReport = z.object({
  instance_id: z.string().uuid(),
  dry_run: z.boolean(),
  mode: z.enum(["create", "upsert"]),
  lines: z.number().int(),
  created: z.number().int(),
  updated: z.number().int(),
  unchanged: z.number().int(),
  columns: z.array(z.object({ column: z.string(), field: z.string() })),
  ignored_columns: z.array(z.string()),
  column_suggestions: z
    .array(z.object({ column: z.string(), did_you_mean: z.array(z.string()) }))
    .openapi({ description: "Ignored columns whose names are close to a field's, with the fields they may have meant" }),
  outcomes: z
    .array(z.object({ line: z.number().int(), outcome: Outcome }))
    .openapi({ description: "Each line's outcome (on a dry run, what it would be), in line order" }),
});
