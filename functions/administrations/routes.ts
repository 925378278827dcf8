import { createRoute } from "@hono/zod-openapi";
import { list, locate, ok } from "../http/envelope.ts";
import { dataOf, json, listOf, newRouter } from "../http/openapi.ts";
import { operation } from "../http/operation.ts";
import { relyOnCareAccess } from "../http/replay-rules.ts";
import { pathIds } from "../medications/answer.ts";
import { IdParam } from "../resources/fields.ts";
import { chartAdministration, getAdministration, listAdministrations } from "./data.ts";
import { Administration, AdministrationCreate, AdministrationListQuery, AdministrationPath } from "./schemas.ts";

/**
 * The medication administration record, under
 * /api/v1/participants/{id}/medication-administrations. Append-only: there is
 * no PUT, PATCH or DELETE (405), and the database refuses them too.
 */

const tags = ["health centre"];
const ACCESS =
  "Needs care access: the user's care_access (read to read, write to chart) and, with an API key, its care scope (and write to chart). Every read is recorded in the audit trail (action read).";

const listRoute = createRoute(
  operation({
    errors: [403],
    method: "get",
    path: "/{id}/medication-administrations",
    summary: "List a participant's medication administration record",
    description: `Every dose charted for the participant, each correction listed right after the entry it corrects (which stays, with amended_by and current false). ${ACCESS}`,
    tags,
    request: { params: IdParam, query: AdministrationListQuery },
    responses: { 200: json(listOf(Administration), "One page and the total") },
  }),
);

const chartRoute = createRoute(
  operation({
    errors: [403],
    method: "post",
    path: "/{id}/medication-administrations",
    summary: "Chart a dose",
    description: `Charts one dose: given, refused, missed, held or unavailable. A correction is a new entry with amends and reason. An as-needed dose within the medication's min_interval_hours of another, or past its max_doses_per_24h, is 409 naming the last doses in details, unless override_reason is given. A nonce seen before answers the stored entry with 200. ${ACCESS}`,
    tags,
    request: {
      params: IdParam,
      body: { content: { "application/json": { schema: AdministrationCreate } }, required: true },
    },
    responses: {
      201: json(dataOf(Administration), "The entry as charted"),
      200: json(dataOf(Administration), "The entry charted before with this nonce"),
    },
  }),
);

const getRoute = createRoute(
  operation({
    errors: [403],
    method: "get",
    path: "/{id}/medication-administrations/{entry_id}",
    operationId: "getParticipantsByIdMedicationAdministrationsByEntryId",
    summary: "Get an administration entry",
    description: `One entry of the record, with the entries that correct it. PUT, PATCH and DELETE are 405: the record is append-only. ${ACCESS}`,
    tags,
    request: { params: AdministrationPath },
    responses: { 200: json(dataOf(Administration), "The entry") },
  }),
);

export function administrationRoutes() {
  const router = newRouter();
  router.use("/:id/medication-administrations", async (c, next) => {
    pathIds(c, { id: "participant" });
    relyOnCareAccess(c);
    await next();
  });
  router.use("/:id/medication-administrations/:entry_id", async (c, next) => {
    pathIds(c, { id: "participant", entry_id: "medication administration" });
    relyOnCareAccess(c);
    await next();
  });

  return router
    .openapi(listRoute, async (c) => {
      const { id } = c.req.valid("param");
      const page = await c.get("tenant").run((sql) => listAdministrations(sql, id, c.req.valid("query")), { oneStatement: true });
      return list(c, page.rows, page.meta);
    })
    .openapi(chartRoute, async (c) => {
      const { id } = c.req.valid("param");
      const charted = await c
        .get("tenant")
        .run((sql) => chartAdministration(sql, id, c.req.valid("json")), { oneStatement: true });
      if (!charted.created) return ok(c, charted.record, 200);
      locate(c, `/api/v1/participants/${id}/medication-administrations/${charted.record.id}`);
      return ok(c, charted.record, 201);
    })
    .openapi(getRoute, async (c) => {
      const { id, entry_id } = c.req.valid("param");
      return ok(c, await c.get("tenant").run((sql) => getAdministration(sql, id, entry_id), { oneStatement: true }));
    });
}
