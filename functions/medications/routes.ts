import { createRoute, type z } from "@hono/zod-openapi";
import { list, locate, message } from "../http/envelope.ts";
import { ifMatch } from "../http/etag.ts";
import { dataOf, json, listOf, MessageSchema, newRouter } from "../http/openapi.ts";
import { operation } from "../http/operation.ts";
import { relyOnCareAccess } from "../http/replay-rules.ts";
import { IdParam } from "../resources/fields.ts";
import { pathIds, versioned } from "./answer.ts";
import { createMedication, deleteMedication, getMedication, listMedications, updateMedication } from "./data.ts";
import { Medication, MedicationCreate, MedicationListQuery, MedicationPath, MedicationUpdate } from "./schemas.ts";

/**
 * A participant's medications, under /api/v1/participants/{id}/medications.
 * Care data: the database's doors (data.ts) refuse a caller without care
 * access (403), so no route checks access itself.
 */

const tags = ["health centre"];
const ACCESS =
  "Needs care access: the user's care_access (read to read, write to change) and, with an API key, its care scope (and write to change). Every read is recorded in the audit trail (action read).";
const jsonBody = <T extends z.ZodType>(schema: T) => ({
  body: { content: { "application/json": { schema } }, required: true },
});

const listRoute = createRoute(
  operation({
    errors: [403],
    method: "get",
    path: "/{id}/medications",
    summary: "List a participant's medications",
    description: `A participant's medications in the order they were added. ${ACCESS}`,
    tags,
    request: { params: IdParam, query: MedicationListQuery },
    responses: { 200: json(listOf(Medication), "One page and the total") },
  }),
);

const createRouteDef = createRoute(
  operation({
    errors: [403],
    etag: true,
    method: "post",
    path: "/{id}/medications",
    summary: "Add a medication to a participant",
    description: `Add a medication with its schedule: times of day in the instance's time zone, or as needed (prn) with optional limits. At most 100 per participant, deleted ones included. ${ACCESS}`,
    tags,
    request: { params: IdParam, ...jsonBody(MedicationCreate) },
    responses: { 201: json(dataOf(Medication), "The medication as stored") },
  }),
);

const getRoute = createRoute(
  operation({
    errors: [403],
    etag: true,
    method: "get",
    path: "/{id}/medications/{medication_id}",
    operationId: "getParticipantsByIdMedicationsByMedicationId",
    summary: "Get a medication",
    description: `One medication. ${ACCESS}`,
    tags,
    request: { params: MedicationPath },
    responses: { 200: json(dataOf(Medication), "The medication") },
  }),
);

const patchRoute = createRoute(
  operation({
    errors: [403, 409],
    etag: true,
    method: "patch",
    path: "/{id}/medications/{medication_id}",
    operationId: "patchParticipantsByIdMedicationsByMedicationId",
    summary: "Update a medication",
    description: `Change the given fields of a medication; doses already charted keep what they recorded. ${ACCESS}`,
    tags,
    request: { params: MedicationPath, ...jsonBody(MedicationUpdate) },
    responses: { 200: json(dataOf(Medication), "The medication as stored") },
  }),
);

const deleteRoute = createRoute(
  operation({
    errors: [403, 409],
    etag: true,
    method: "delete",
    path: "/{id}/medications/{medication_id}",
    operationId: "deleteParticipantsByIdMedicationsByMedicationId",
    summary: "Delete a medication",
    description: `Soft-delete a medication: it is no longer due; doses charted against it stay on the record. ${ACCESS}`,
    tags,
    request: { params: MedicationPath },
    responses: { 200: json(MessageSchema, "Deleted") },
  }),
);

export function medicationRoutes() {
  const router = newRouter();
  router.use("/:id/medications", async (c, next) => {
    pathIds(c, { id: "participant" });
    relyOnCareAccess(c);
    await next();
  });
  router.use("/:id/medications/:medication_id", async (c, next) => {
    pathIds(c, { id: "participant", medication_id: "medication" });
    relyOnCareAccess(c);
    await next();
  });

  return router
    .openapi(listRoute, async (c) => {
      const { id } = c.req.valid("param");
      const page = await c.get("tenant").run((sql) => listMedications(sql, id, c.req.valid("query")), { oneStatement: true });
      return list(c, page.rows, page.meta);
    })
    .openapi(createRouteDef, async (c) => {
      const { id } = c.req.valid("param");
      const created = await c.get("tenant").run((sql) => createMedication(sql, id, c.req.valid("json")), { oneStatement: true });
      locate(c, `/api/v1/participants/${id}/medications/${created.record.id}`);
      return versioned(c, created, 201);
    })
    .openapi(getRoute, async (c) => {
      const { id, medication_id } = c.req.valid("param");
      return versioned(c, await c.get("tenant").run((sql) => getMedication(sql, id, medication_id), { oneStatement: true }));
    })
    .openapi(patchRoute, async (c) => {
      const { id, medication_id } = c.req.valid("param");
      const input = c.req.valid("json");
      const precondition = ifMatch(c);
      return versioned(c, await c.get("tenant").run((sql) => updateMedication(sql, id, medication_id, input, precondition)));
    })
    .openapi(deleteRoute, async (c) => {
      const { id, medication_id } = c.req.valid("param");
      const precondition = ifMatch(c);
      await c.get("tenant").run((sql) => deleteMedication(sql, id, medication_id, precondition));
      return message(c, "medication deleted");
    });
}
