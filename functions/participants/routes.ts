import { createRoute, type z } from "@hono/zod-openapi";
import { createMiddleware } from "hono/factory";
import { invalidField, notFound } from "../errors.ts";
import { listOfJson, locate, message, okOfJson } from "../http/envelope.ts";
import { etagOf, ifMatch, notModified, preconditionFailed } from "../http/etag.ts";
import { dataOf, json, listOf, MessageSchema, newRouter } from "../http/openapi.ts";
import { operation } from "../http/operation.ts";
import { relyOnAdminRole } from "../http/replay-rules.ts";
import { IdParam, isUuid, textIssue } from "../resources/fields.ts";
import { OverrideCapacityQuery } from "../rooms/capacity.ts";
import {
  createParticipant,
  deleteParticipant,
  getParticipant,
  listParticipants,
  participantExists,
  updateParticipant,
} from "./data.ts";
import { CreateBody, ListQuery, Participant, UpdateBody } from "./schemas.ts";

const tags = ["participants"];
const body = <T extends typeof CreateBody | typeof UpdateBody>(schema: T) => ({
  body: { content: { "application/json": { schema } }, required: true },
});

/**
 * A path id that is not a uuid names no participant: 404, like an id of another
 * tenant. Checked before the body is validated, so a bad id is 404 whatever the body
 * (hostile text, a NUL say, is a 400 naming the id, as everywhere).
 */
const uuidPath = createMiddleware(async (c, next) => {
  const id = c.req.param("id") ?? "";
  if (!isUuid(id)) {
    const issue = textIssue(id);
    throw issue ? invalidField("id", issue) : notFound("participant");
  }
  await next();
});

const create = createRoute(
  operation({
    method: "post",
    path: "/",
    summary: "Create a participant",
    description:
      "Creates a participant: 201 with the participant as stored (full_name generated when not given, supergroup and block filled from subgroup and room, computed names), its ETag and its Location. A room already at its capacity is 409 naming the room, its capacity and occupancy (an admin may pass override_capacity=true).",
    tags,
    etag: true,
    request: { query: OverrideCapacityQuery, ...body(CreateBody) },
    responses: { 201: json(dataOf(Participant), "The participant as stored") },
  }),
);

const listRoute = createRoute(
  operation({
    errors: [403],
    method: "get",
    path: "/",
    summary: "List participants",
    description:
      "The live participants of the caller's tenant, a page at a time, filtered (instance, status, groups, block, room, q) and sorted as asked (default: oldest first); each with its group, block and room names.",
    tags,
    request: { query: ListQuery },
    responses: { 200: json(listOf(Participant), "One page and the total") },
  }),
);

const get = createRoute(
  operation({
    method: "get",
    path: "/{id}",
    summary: "Get a participant",
    description:
      "The participant with every field and the names of its groups, block and room. Its ETag, sent back in If-None-Match, gives 304 while it is unchanged.",
    tags,
    etag: true,
    request: { params: IdParam },
    responses: { 200: json(dataOf(Participant), "The participant") },
  }),
);

/** PUT and PATCH are the same partial update (docs/api.md, "The contract"). */
const update = (method: "put" | "patch") =>
  createRoute(
    operation({
      method,
      path: "/{id}",
      summary: `${method === "put" ? "Replace" : "Update"} a participant`,
      description:
        "Changes only the fields sent (PUT and PATCH alike); fields of the participant as read (id, timestamps, computed names, photo_link) may be sent back and are ignored. With the ETag you read in If-Match, a change made meanwhile is refused with 412. Moving into a room at its capacity is 409 naming the room, its capacity and occupancy (an admin may pass override_capacity=true).",
      tags,
      etag: true,
      errors: [409],
      request: { params: IdParam, query: OverrideCapacityQuery, ...body(UpdateBody) },
      responses: { 200: json(dataOf(Participant), "The participant as stored") },
    }),
  );

const remove = createRoute(
  operation({
    method: "delete",
    path: "/{id}",
    summary: "Delete a participant",
    description:
      "Soft delete: the participant answers 404 from then on and its user_id may be used again in the instance. If-Match as for updates.",
    tags,
    etag: true,
    errors: [409],
    request: { params: IdParam },
    responses: { 200: json(MessageSchema, "Deleted") },
  }),
);

export const participantRoutes = newRouter();
participantRoutes.use("/:id", uuidPath);

participantRoutes
  .openapi(create, async (c) => {
    const input = c.req.valid("json");
    const overrideCapacity = c.req.valid("query").override_capacity;
    if (overrideCapacity) relyOnAdminRole(c);
    const created = await c.get("tenant").run((sql) => createParticipant(sql, input, { overrideCapacity }), {
      oneStatement: true,
    });
    locate(c, `/api/v1/participants/${(JSON.parse(created.json) as { id: string }).id}`);
    c.header("ETag", etagOf(created.version));
    return okOfJson<z.infer<typeof Participant>, 201>(c, created.json, 201);
  })
  .openapi(listRoute, async (c) => {
    const filters = c.req.valid("query");
    const page = await c.get("tenant").run((sql) => listParticipants(sql, filters), { oneStatement: true });
    return listOfJson<z.infer<typeof Participant>>(c, page.json, page.meta);
  })
  .openapi(get, async (c) => {
    const id = c.req.valid("param").id;
    const found = await c.get("tenant").run((sql) => getParticipant(sql, id), { oneStatement: true });
    if (found === undefined) throw notFound("participant");
    const etag = etagOf(found.version);
    c.header("ETag", etag);
    if (notModified(c, etag)) return c.body(null, 304) as never;
    return okOfJson<z.infer<typeof Participant>>(c, found.json);
  });

for (const method of ["put", "patch"] as const) {
  participantRoutes.openapi(update(method), async (c) => {
    const id = c.req.valid("param").id;
    const input = c.req.valid("json");
    const overrideCapacity = c.req.valid("query").override_capacity;
    const precondition = ifMatch(c);
    const updated = await c.get("tenant").run(async (sql) => {
      const result = await updateParticipant(sql, id, input, precondition, { overrideCapacity });
      if (result) return result;
      throw precondition && (await participantExists(sql, id)) ? preconditionFailed() : notFound("participant");
    });
    c.header("ETag", etagOf(updated.version));
    return okOfJson<z.infer<typeof Participant>>(c, updated.json);
  });
}

participantRoutes.openapi(remove, async (c) => {
  const id = c.req.valid("param").id;
  const precondition = ifMatch(c);
  await c.get("tenant").run(async (sql) => {
    if (await deleteParticipant(sql, id, precondition)) return;
    throw precondition && (await participantExists(sql, id)) ? preconditionFailed() : notFound("participant");
  });
  return message(c, "participant deleted");
});
