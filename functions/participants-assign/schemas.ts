import { z } from "@hono/zod-openapi";
import { ERROR_STATUS, type ErrorCode } from "../errors.ts";
import { FieldIssueSchema } from "../http/openapi.ts";
import { idField, optionalId } from "../resources/fields.ts";
import { overrideCapacityParam } from "../rooms/capacity.ts";

/** The assign route's contract: the body, the query and the report it answers with. */

export const MAX_ASSIGNMENTS = 1_000;

/** What an assignment may set: the participant's four placement references, by the names a participant carries. */
export const PLACEMENT_REFERENCES = ["super_group_id", "sub_group_id", "block_id", "room_id"] as const;
export type PlacementReference = (typeof PLACEMENT_REFERENCES)[number];

/**
 * One assignment. Each reference sent is set (null clears it); one not sent is
 * kept. As for a participant update, a subgroup sent alone brings its
 * supergroup, a room sent alone its block, and the room number follows the room.
 */
export const Assignment = z
  .strictObject({
    participant_id: idField().openapi({ description: "The participant to place" }),
    super_group_id: optionalId().openapi({ description: "Filled from sub_group_id when only that is sent" }),
    sub_group_id: optionalId(),
    block_id: optionalId().openapi({ description: "Filled from room_id when only that is sent" }),
    room_id: optionalId().openapi({ description: "Sets room_number to the room's number; null clears both" }),
  })
  .refine((entry) => PLACEMENT_REFERENCES.some((field) => entry[field] !== undefined), {
    message: `must set at least one of ${PLACEMENT_REFERENCES.join(", ")}`,
  })
  .openapi("ParticipantAssignment");

export type AssignmentInput = z.infer<typeof Assignment>;

export const AssignBody = z
  .strictObject({
    // Entries are checked one by one in the handler, so that every bad entry is reported with its index.
    assignments: z
      .array(z.unknown())
      .min(1, "must hold at least one assignment")
      .max(MAX_ASSIGNMENTS, `must hold at most ${MAX_ASSIGNMENTS} assignments`)
      .openapi({
        type: "array",
        items: { $ref: "#/components/schemas/ParticipantAssignment" },
        maxItems: MAX_ASSIGNMENTS,
        description: "Each participant at most once",
      }),
  })
  .openapi("ParticipantAssignBody");

export const AssignQuery = z.object({
  dry_run: z
    .enum(["true", "false", "1", "0"], { error: "must be true or false" })
    .optional()
    .transform((v) => v === "true" || v === "1")
    .openapi({
      type: "string",
      enum: ["true", "false", "1", "0"],
      description:
        "true: check everything as a real request would (in the same transaction, then rolled back) and answer what would change and what would fail; nothing is written. Default false.",
    }),
  override_capacity: overrideCapacityParam,
});

/** Where a participant is placed: its four references and the room number. */
export const Placement = z
  .object({
    super_group_id: z.string().uuid().nullable(),
    sub_group_id: z.string().uuid().nullable(),
    block_id: z.string().uuid().nullable(),
    room_id: z.string().uuid().nullable(),
    room_number: z.string().nullable(),
  })
  .openapi("ParticipantPlacement");

export type PlacementRecord = z.infer<typeof Placement>;

const ERROR_CODES = Object.keys(ERROR_STATUS) as [ErrorCode, ...ErrorCode[]];

export const AssignReport = z
  .object({
    dry_run: z.boolean(),
    assignments: z.number().int().openapi({ description: "Entries in the request" }),
    changed: z.number().int().openapi({
      description:
        "Participants whose placement the assignments change (in a dry run: would change); the others are already placed so",
    }),
    participants: z
      .array(
        z.object({
          participant_id: z.string().uuid(),
          changed: z.boolean(),
          before: Placement,
          after: Placement,
        }),
      )
      .openapi({
        description:
          "Every entry, in the order sent, with the participant's placement before and after. In a dry run that would fail, only the entries with no problem of their own.",
      }),
    would_fail: z
      .object({
        status: z.number().int().openapi({ description: "The status the request would be answered with" }),
        code: z.enum(ERROR_CODES),
        message: z.string(),
        details: z.array(FieldIssueSchema).optional(),
      })
      .nullable()
      .openapi({
        description:
          "Dry run: the error the request would be refused with without dry_run (every bad entry by its place, every room over capacity), or null when it would succeed. Always null when not a dry run.",
      }),
  })
  .openapi("ParticipantAssignReport");

export type AssignReportRecord = z.infer<typeof AssignReport>;
