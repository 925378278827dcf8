import { createRoute } from "@hono/zod-openapi";
import { ok } from "../http/envelope.ts";
import { dataOf, json, newRouter } from "../http/openapi.ts";
import { operation } from "../http/operation.ts";
import { relyOnAdminRole } from "../http/replay-rules.ts";
import { assignParticipants } from "./assign.ts";
import { AssignBody, Assignment, AssignQuery, AssignReport, MAX_ASSIGNMENTS } from "./schemas.ts";

/**
 * Moving many participants in one step: POST /participants/assign. Mounted
 * before the participant routes, whose `/{id}` would otherwise claim `/assign`.
 */

const assign = createRoute(
  operation({
    method: "post",
    path: "/assign",
    summary: `Place up to ${MAX_ASSIGNMENTS} participants in groups, blocks and rooms, all or none`,
    description:
      "Each assignment names a participant and any of super_group_id, sub_group_id, block_id and room_id to set (null clears). " +
      "All are applied in one transaction or none is, and the rules are checked on the state the whole set leaves: " +
      "two people swapping between two full rooms is one request. 200 with each participant's placement before and after. " +
      "400 names every bad entry by its place (`assignments.3.room_id`), an unknown participant included; 409 when a " +
      "participant is in an archived instance, or names every room the set would leave over capacity. " +
      "`dry_run=true` answers what would change and what would fail (would_fail), writing nothing; " +
      "`override_capacity=true` (admins) lets rooms be left over capacity. " +
      "Costs one rate-limit hit per 100 assignments (at least one).",
    tags: ["participants"],
    request: {
      query: AssignQuery,
      body: { content: { "application/json": { schema: AssignBody } }, required: true },
    },
    responses: { 200: json(dataOf(AssignReport), "What changed (or, in a dry run, what would change and what would fail)") },
  }),
);

export const participantAssignRoutes = newRouter();
// The entries are validated one by one in the handler; the document still describes them (AssignBody's items).
participantAssignRoutes.openAPIRegistry.register("ParticipantAssignment", Assignment);

participantAssignRoutes.openapi(assign, async (c) => {
  const { dry_run, override_capacity } = c.req.valid("query");
  // The override is an admin's right (the database checks it): a replay of its answer needs one too.
  if (override_capacity) relyOnAdminRole(c);
  const { assignments } = c.req.valid("json");
  const options = { dryRun: dry_run, overrideCapacity: override_capacity };
  const report = await c.get("tenant").run((sql) => assignParticipants(sql, assignments, options));
  return ok(c, report, 200);
});
