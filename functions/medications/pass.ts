import { createRoute, z } from "@hono/zod-openapi";
import { Administration } from "../administrations/schemas.ts";
import { door } from "../care/data.ts";
import { list } from "../http/envelope.ts";
import { json, listOf, newRouter } from "../http/openapi.ts";
import { operation } from "../http/operation.ts";
import { IdParam, queryInteger } from "../resources/fields.ts";
import { pathIds } from "./answer.ts";

/**
 * GET /api/v1/instances/{id}/medication-pass: the doses due around a moment
 * for every participant of an instance, from private.medication_pass
 * (*_medication_pass.sql), which checks care access and records each listed
 * participant as a care read.
 */

export const GRACE_MINUTES = 60;

const PassQuery = z.object({
  at: z
    .string()
    .datetime({ offset: true, message: "must be an RFC 3339 timestamp, e.g. 2026-07-14T08:00:00Z" })
    .optional()
    .openapi({ type: "string", format: "date-time", description: "The moment of the pass (default: now)" }),
  window_minutes: queryInteger(1, 720, "must be an integer from 1 to 720")
    .optional()
    .openapi({ type: "integer", minimum: 1, maximum: 720, description: "Minutes either side of at (default 60)" }),
});

const Dose = z
  .object({
    participant_id: z.string().openapi({ format: "uuid" }),
    participant_name: z.string(),
    medication_id: z.string().openapi({ format: "uuid" }),
    medication_name: z.string(),
    dose: z.string().nullable(),
    route: z.string().nullable(),
    due_at: z.string().openapi({ format: "date-time" }),
    state: z.enum(["due", "charted", "overdue"]).openapi({
      description: `charted: an entry that stands charts it (in entry); overdue: not charted ${GRACE_MINUTES} minutes after due_at; due: otherwise`,
    }),
    entry: Administration.nullable(),
  })
  .openapi("MedicationPassDose");

const route = createRoute(
  operation({
    errors: [403],
    method: "get",
    path: "/{id}/medication-pass",
    summary: "Get the medication pass of an instance",
    description: `Every scheduled dose due within window_minutes (default 60) either side of at (default now) for the instance's live participants, in due order, each due, charted (with its entry) or overdue (uncharted ${GRACE_MINUTES} minutes after its due time). Times of day are the instance's time_zone. Needs care read access (the user's care_access and, with an API key, its care scope); each participant listed is recorded in the audit trail as a care read.`,
    tags: ["health centre"],
    request: { params: IdParam, query: PassQuery },
    responses: { 200: json(listOf(Dose), "The doses; meta.total is their number") },
  }),
);

const router = newRouter();
router.use("/:id/medication-pass", async (c, next) => {
  pathIds(c, { id: "instance" });
  await next();
});

export const medicationPassRoutes = router.openapi(route, async (c) => {
  const { id } = c.req.valid("param");
  const { at, window_minutes } = c.req.valid("query");
  const doses = await c
    .get("tenant")
    .run(
      (sql) =>
        door<z.infer<typeof Dose>[]>(sql, "select private.medication_pass($1, $2, $3) as value", [
          id,
          at ?? new Date().toISOString(),
          window_minutes ?? 60,
        ]),
      { oneStatement: true },
    );
  return list(c, doses, { total: doses.length, limit: doses.length, offset: 0 });
});
