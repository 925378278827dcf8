import { z } from "@hono/zod-openapi";
import { ListQuery } from "../participants/schemas.ts";
import { idField } from "../resources/fields.ts";
import { overrideCapacityParam } from "../rooms/capacity.ts";

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
// No care filter (severe_allergy): the export carries no care data, not even that bit.
export const ExportQuery = ListQuery.omit({
  limit: true,
  offset: true,
  sort: true,
  updated_since: true,
  include_deleted: true,
  severe_allergy: true,
});

export const ImportQuery = z.object({
  instance_id: idField().openapi({ description: "The instance the participants join" }),
  dry_run: z
    .enum(["true", "false", "1", "0"], { error: "must be true or false" })
    .optional()
    .transform((v) => v === "true" || v === "1"),
  override_capacity: overrideCapacityParam,
});

export const ImportReport = z.object({
  instance_id: z.string().uuid(),
  dry_run: z.boolean(),
  lines: z.number().int(),
  created: z.number().int(),
  columns: z.array(z.object({ column: z.string(), field: z.string() })),
  ignored_columns: z.array(z.string()),
});
