import { createRoute, type z } from "@hono/zod-openapi";
import { list, locate, ok } from "../http/envelope.ts";
import { dataOf, json, listOf, newRouter } from "../http/openapi.ts";
import { operation } from "../http/operation.ts";
import { relyOnCareAccess } from "../http/replay-rules.ts";
import { pathIds } from "../medications/answer.ts";
import { amendIncident, getIncident, listIncidents, reportIncident } from "./data.ts";
import { Incident, IncidentAmendmentCreate, IncidentClose, IncidentCreate, IncidentListQuery, IncidentPath } from "./schemas.ts";

/**
 * Incidents, under /api/v1/incidents. Append-only: there is no PUT, PATCH or
 * DELETE (405), and the database refuses them too; a change is an amendment.
 */

const tags = ["health centre"];
const ACCESS =
  "Needs care access: the user's care_access (read to read, write to report or amend) and, with an API key, its care scope (and write to report or amend). Incidents of category safeguarding are visible only to users an admin marked as safeguarding leads (404 to anyone else). Every read is recorded in the audit trail (action read).";
const body = <T>(schema: T) => ({ content: { "application/json": { schema } }, required: true });

const listRoute = createRoute(
  operation({
    errors: [403],
    method: "get",
    path: "/",
    summary: "List incidents",
    description: `The incidents the caller may read, newest report first, filtered by instance, participant, category, severity, status, when they occurred (current values) or needs_attention=true (open, and serious or guardians not notified within the tenant's incident_notice_hours). ${ACCESS}`,
    tags,
    request: { query: IncidentListQuery },
    responses: { 200: json(listOf(Incident), "One page and the total") },
  }),
);

const createRoute_ = createRoute(
  operation({
    errors: [403],
    method: "post",
    path: "/",
    summary: "Report an incident",
    description: `Reports an incident naming participants of one instance. A serious one raises incident.needs_attention at once; one whose guardians are not recorded as notified within the tenant's incident_notice_hours raises it then. A safeguarding incident may be reported by anyone with care write access; the answer shows what was reported, but only safeguarding leads read it afterwards. ${ACCESS}`,
    tags,
    request: { body: body(IncidentCreate) },
    responses: { 201: json(dataOf(Incident), "The incident as reported") },
  }),
);

const getRoute = createRoute(
  operation({
    errors: [403],
    method: "get",
    path: "/{id}",
    summary: "Get an incident",
    description: `One incident: its current values, the original report and the amendments. PUT, PATCH and DELETE are 405: incidents are append-only. ${ACCESS}`,
    tags,
    request: { params: IncidentPath },
    responses: { 200: json(dataOf(Incident), "The incident") },
  }),
);

const amendRoute = createRoute(
  operation({
    errors: [403],
    method: "post",
    path: "/{id}/amendments",
    summary: "Amend an incident",
    description: `Adds an amendment {changes: {field: new value}, reason}; the original report stays readable beside it. participant_ids and instance_id are fixed, and an incident never moves into or out of safeguarding (400). An amendment that changes nothing is 409. ${ACCESS}`,
    tags,
    request: { params: IncidentPath, body: body(IncidentAmendmentCreate) },
    responses: { 201: json(dataOf(Incident), "The incident with the new amendment (Location: the incident)") },
  }),
);

const closeRoute = createRoute(
  operation({
    errors: [403],
    method: "post",
    path: "/{id}/close",
    summary: "Close an incident",
    description: `Closes the incident: an amendment {changes: {status: "closed"}, reason} (reason "closed" unless given). A closed incident no longer needs attention; 409 when it is closed already. ${ACCESS}`,
    tags,
    request: { params: IncidentPath, body: { content: { "application/json": { schema: IncidentClose } }, required: false } },
    responses: { 200: json(dataOf(Incident), "The closed incident") },
  }),
);

export function incidentRoutes() {
  const router = newRouter();
  router.use("/", async (c, next) => {
    relyOnCareAccess(c);
    await next();
  });
  router.use("/:id/*", async (c, next) => {
    pathIds(c, { id: "incident" });
    relyOnCareAccess(c);
    await next();
  });
  router.use("/:id", async (c, next) => {
    pathIds(c, { id: "incident" });
    relyOnCareAccess(c);
    await next();
  });

  return router
    .openapi(listRoute, async (c) => {
      const page = await c.get("tenant").run((sql) => listIncidents(sql, c.req.valid("query")), { oneStatement: true });
      return list(c, page.rows, page.meta);
    })
    .openapi(createRoute_, async (c) => {
      const reported = await c.get("tenant").run((sql) => reportIncident(sql, c.req.valid("json")), { oneStatement: true });
      locate(c, `/api/v1/incidents/${reported.id}`);
      return ok(c, reported, 201);
    })
    .openapi(getRoute, async (c) => {
      const { id } = c.req.valid("param");
      return ok(c, await c.get("tenant").run((sql) => getIncident(sql, id), { oneStatement: true }));
    })
    .openapi(amendRoute, async (c) => {
      const { id } = c.req.valid("param");
      const { changes, reason } = c.req.valid("json");
      const amended = await c.get("tenant").run((sql) => amendIncident(sql, id, changes, reason), { oneStatement: true });
      locate(c, `/api/v1/incidents/${id}`);
      return ok(c, amended, 201);
    })
    .openapi(closeRoute, async (c) => {
      const { id } = c.req.valid("param");
      const reason = (c.req.valid("json") as z.infer<typeof IncidentClose> | undefined)?.reason ?? "closed";
      const closed = await c
        .get("tenant")
        .run((sql) => amendIncident(sql, id, { status: "closed" }, reason), { oneStatement: true });
      return ok(c, closed);
    });
}
