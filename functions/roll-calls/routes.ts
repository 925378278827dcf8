import { createRoute } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../app-env.ts";
import { notFound } from "../errors.ts";
import { list, locate, ok } from "../http/envelope.ts";
import { dataOf, json, listOf, newRouter } from "../http/openapi.ts";
import { operation } from "../http/operation.ts";
import { IdParam, isUuid } from "../resources/fields.ts";
import {
  closeRollCall,
  getRollCall,
  instancePresence,
  instanceRoster,
  listRollCalls,
  markRollCall,
  openRollCall,
} from "./data.ts";
import {
  MarksPut,
  Presence,
  type PresenceRecord,
  RollCall,
  RollCallCreate,
  RollCallListQuery,
  type RollCallRecord,
  Roster,
  type RosterRecord,
} from "./schemas.ts";

/** Roll calls (/api/v1/roll-calls) and an instance's presence; docs/api.md, "On site". */

const tags = ["on-site"];
const WHO =
  "Run by a Bearer token, or a key with the write or attendance scope; read by any key of the tenant, an attendance-only key included.";
const body = <T extends typeof RollCallCreate | typeof MarksPut>(schema: T) => ({
  body: { content: { "application/json": { schema } }, required: true },
});

const openRoute = createRoute(
  operation({
    method: "post",
    path: "/",
    summary: "Open a roll call",
    description: `Opens a roll call of an instance, or of one supergroup, subgroup, block or room of it: the participants present there now (presence in) are its expected. ${WHO}`,
    tags,
    request: body(RollCallCreate),
    responses: { 201: json(dataOf(RollCall), "The roll call, with who it expects") },
  }),
);

const listRoute = createRoute(
  operation({
    method: "get",
    path: "/",
    summary: "List roll calls",
    description: `Roll calls in the order they were opened, by instance and status. ${WHO}`,
    tags,
    request: { query: RollCallListQuery },
    responses: { 200: json(listOf(RollCall), "One page and the total") },
  }),
);

const getRoute = createRoute(
  operation({
    method: "get",
    path: "/{id}",
    summary: "Get a roll call",
    description: `A roll call with its expected, marks, missing and counts. ${WHO}`,
    tags,
    request: { params: IdParam },
    responses: { 200: json(dataOf(RollCall), "The roll call") },
  }),
);

const marksRoute = createRoute(
  operation({
    errors: [409],
    method: "put",
    path: "/{id}/marks",
    summary: "Mark participants of a roll call",
    description: `Records marks (present, absent, excused); a later mark of the same participant wins. Any live participant of the instance may be marked, expected or not. 409 once the roll call is closed. ${WHO}`,
    tags,
    request: { params: IdParam, ...body(MarksPut) },
    responses: { 200: json(dataOf(RollCall), "The roll call with its marks") },
  }),
);

const closeRoute = createRoute(
  operation({
    method: "post",
    path: "/{id}/close",
    summary: "Close a roll call",
    description: `Closes the roll call and answers who is missing (expected, not marked present or excused); freezes its counts and emits roll_call.closed carrying them ({expected, present, absent, excused, missing}; ids and figures, no names). 409 when already closed. ${WHO}`,
    tags,
    request: { params: IdParam },
    responses: { 200: json(dataOf(RollCall), "The closed roll call and who is missing") },
  }),
);

function rollCallId(c: Context<AppEnv>): string {
  const id = c.req.param("id") ?? "";
  if (!isUuid(id)) throw notFound("roll call");
  return id;
}

const found = (call: RollCallRecord | undefined) => {
  if (!call) throw notFound("roll call");
  return call;
};

export const rollCallRoutes = newRouter()
  .openapi(openRoute, async (c) => {
    const input = c.req.valid("json");
    const call = found(await c.get("tenant").run((sql) => openRollCall(sql, input), { oneStatement: true }));
    locate(c, `/api/v1/roll-calls/${call.id}`);
    return ok(c, call, 201);
  })
  .openapi(listRoute, async (c) => {
    const page = await c.get("tenant").run((sql) => listRollCalls(sql, c.req.valid("query")), { oneStatement: true });
    return list(c, page.rows, page.meta);
  })
  .openapi(getRoute, async (c) => {
    const id = rollCallId(c);
    return ok(c, found(await c.get("tenant").run((sql) => getRollCall(sql, id), { oneStatement: true })));
  })
  .openapi(marksRoute, async (c) => {
    const id = rollCallId(c);
    const { marks } = c.req.valid("json");
    return ok(c, found(await c.get("tenant").run((sql) => markRollCall(sql, id, marks), { oneStatement: true })));
  })
  .openapi(closeRoute, async (c) => {
    const id = rollCallId(c);
    return ok(c, found(await c.get("tenant").run((sql) => closeRollCall(sql, id), { oneStatement: true })));
  });

const presenceRoute = createRoute(
  operation({
    method: "get",
    path: "/{id}/presence",
    summary: "Who is in an instance now",
    description: `The number of live participants checked in (presence in), per supergroup, subgroup, block and room of the instance (each live one, zero included), and their ids. ${WHO}`,
    tags,
    request: { params: IdParam },
    responses: { 200: json(dataOf(Presence), "The counts and the present participants' ids") },
  }),
);

const rosterRoute = createRoute(
  operation({
    method: "get",
    path: "/{id}/roster",
    summary: "What a device needs offline",
    description: `Every live participant of the instance with id, names, groups, room, photo link and presence, and the names of their authorised pickups (names and ids only; phones, e-mails and notes stay behind care access): given to a caller with the attendance scope, a Bearer token or care access, null for anyone else. With the event feed's cursor taken at the same moment, to keep the copy fresh. ${WHO}`,
    tags,
    request: { params: IdParam },
    responses: { 200: json(dataOf(Roster), "The roster and the cursor") },
  }),
);

function instanceId(c: Context<AppEnv>): string {
  const id = c.req.param("id") ?? "";
  if (!isUuid(id)) throw notFound("instance");
  return id;
}

/** Mounted under /api/v1/instances, before the instances' own routes. */
export const instancePresenceRoutes = newRouter()
  .openapi(presenceRoute, async (c) => {
    const id = instanceId(c);
    const presence = await c.get("tenant").run((sql) => instancePresence(sql, id), { oneStatement: true });
    if (!presence) throw notFound("instance");
    return ok(c, presence as PresenceRecord);
  })
  .openapi(rosterRoute, async (c) => {
    const id = instanceId(c);
    const roster = await c.get("tenant").run((sql) => instanceRoster(sql, id), { oneStatement: true });
    if (!roster) throw notFound("instance");
    return ok(c, roster as RosterRecord);
  });
