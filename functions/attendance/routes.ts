import { createRoute } from "@hono/zod-openapi";
import { notFound } from "../errors.ts";
import { list, locate, ok } from "../http/envelope.ts";
import { dataOf, json, listOf, newRouter } from "../http/openapi.ts";
import { operation } from "../http/operation.ts";
import { relyOnAdminRole } from "../http/replay-rules.ts";
import { IdParam, isUuid } from "../resources/fields.ts";
import { getMovement, listMovements, recordMovement, syncMovements } from "./data.ts";
import {
  CheckedMovement,
  Movement,
  MovementCreate,
  MovementListQuery,
  SYNC_OUTCOMES,
  SyncAnswer,
  SyncBody,
  SyncRecord,
  type SyncResult,
} from "./schemas.ts";

/**
 * Check-in and check-out (/api/v1/attendance): one movement at a time, its
 * list and each movement. docs/api.md, "On site", has the rules; the
 * database holds them (private.attendance_record).
 */

const tags = ["on-site"];
const WHO =
  "Recorded by a Bearer token, or a key with the write or attendance scope; read by any key of the tenant (an attendance-only key reads movements, the roster, presence and roll calls, nothing else).";

const recordRoute = createRoute(
  operation({
    errors: [409],
    method: "post",
    path: "/",
    summary: "Record a check-in or a check-out",
    description: `Records one movement of a participant. A check-in answers a security_code for the guardian's slip (unique among the instance's present participants). A check-out names an authorised pickup (pickup_contact_id: a live contact of the participant with authorised_pickup) and, when security_code is given, it must be the check-in's; an admin may instead give override_reason (403 for anyone else). 409 when the movement contradicts the participant's current presence (an in when in, an out when not in), when recorded_at is before its last movement (offline records go to /attendance/sync), for an archived instance, or when the pickup rule fails. 404 for a deleted participant. ${WHO}`,
    tags,
    request: { body: { content: { "application/json": { schema: MovementCreate } }, required: true } },
    responses: { 201: json(dataOf(CheckedMovement), "The movement as recorded, with the check-in's security code") },
  }),
);

const listRoute = createRoute(
  operation({
    method: "get",
    path: "/",
    summary: "List movements",
    description: `Movements in timeline order (recorded_at, the device's clock; ties by nonce), conflicts included and flagged. ${WHO}`,
    tags,
    request: { query: MovementListQuery },
    responses: { 200: json(listOf(Movement), "One page and the total") },
  }),
);

const getRoute = createRoute(
  operation({
    method: "get",
    path: "/{id}",
    summary: "Get a movement",
    description: `One movement. ${WHO}`,
    tags,
    request: { params: IdParam },
    responses: { 200: json(dataOf(Movement), "The movement") },
  }),
);

const syncRoute = createRoute(
  operation({
    method: "post",
    path: "/sync",
    summary: "Upload movements recorded offline",
    description: `Takes up to 1,000 movements recorded offline, each with its nonce and recorded_at, and answers each record's outcome in its place: accepted, duplicate (its nonce is stored already), conflict (kept, and flagged in the history: it contradicts its neighbours in recorded_at order) or invalid (not kept, with a reason and the field). Good records are kept whatever the others are: the one write that is not all-or-nothing. The stored history and every presence are the same whatever order and however often devices upload. ${WHO}`,
    tags,
    request: { body: { content: { "application/json": { schema: SyncBody } }, required: true } },
    responses: { 200: json(dataOf(SyncAnswer), "Each record's outcome, and the counts") },
  }),
);

/** Each record checked on its own: the invalid ones answered here, the rest by the database's door. */
function checkRecords(records: Array<Record<string, unknown>>) {
  const valid: Array<{ index: number; record: object }> = [];
  const invalid: SyncResult[] = [];
  records.forEach((raw, index) => {
    const parsed = SyncRecord.safeParse(raw);
    if (parsed.success) {
      valid.push({ index, record: parsed.data });
      return;
    }
    const issue = parsed.error.issues[0];
    const nonce = typeof raw.nonce === "string" ? raw.nonce : null;
    invalid.push({
      index,
      nonce,
      outcome: "invalid",
      reason: issue?.message ?? "is not a movement",
      field: issue?.path.join(".") || "record",
    });
  });
  return { valid, invalid };
}

export const attendanceRoutes = newRouter()
  .openapi(recordRoute, async (c) => {
    const input = c.req.valid("json");
    // An override is an admin's right, which the database checks; a replay of its answer needs an admin too.
    if (input.override_reason) relyOnAdminRole(c);
    const recorded = await c.get("tenant").run((sql) => recordMovement(sql, input), { oneStatement: true });
    const movement = recorded.movement as NonNullable<typeof recorded.movement>;
    locate(c, `/api/v1/attendance/${movement.id}`);
    return ok(c, { ...movement, security_code: recorded.security_code ?? null }, 201);
  })
  .openapi(syncRoute, async (c) => {
    const { valid, invalid } = checkRecords(c.req.valid("json").records);
    if (valid.some(({ record }) => "override_reason" in record && record.override_reason)) relyOnAdminRole(c);
    const stored = await c.get("tenant").run((sql) => syncMovements(sql, valid), { oneStatement: true });
    const results = [...stored, ...invalid].sort((a, b) => a.index - b.index);
    const counts = Object.fromEntries(SYNC_OUTCOMES.map((o) => [o, results.filter((r) => r.outcome === o).length])) as Record<
      (typeof SYNC_OUTCOMES)[number],
      number
    >;
    return ok(c, { results, counts });
  })
  .openapi(listRoute, async (c) => {
    const page = await c.get("tenant").run((sql) => listMovements(sql, c.req.valid("query")), { oneStatement: true });
    return list(c, page.rows, page.meta);
  })
  .openapi(getRoute, async (c) => {
    const { id } = c.req.valid("param");
    if (!isUuid(id)) throw notFound("movement");
    const found = await c.get("tenant").run((sql) => getMovement(sql, id), { oneStatement: true });
    if (!found) throw notFound("movement");
    return ok(c, found);
  });
