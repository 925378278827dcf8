import { createRoute, z } from "@hono/zod-openapi";
import { listPage } from "../db/list.ts";
import type { Sql } from "../db/sql.ts";
import { list } from "../http/envelope.ts";
import { json, listOf, newRouter } from "../http/openapi.ts";
import { operation } from "../http/operation.ts";
import { requireAdmin } from "../http/replay-rules.ts";
import { cleanText, idFilter, pagination } from "../resources/fields.ts";

/** The audit trail, read by the tenant's admins; the database writes it (see *_audit.sql). */

const ACTIONS = ["create", "update", "delete", "erase", "read"] as const;
/**
 * Events about care data (private.is_care_resource): writes of contacts, care
 * records and consents, with values, and reads (contacts, care_record,
 * consents, care_flag; the resource is the participant). The database shows
 * them only to a caller with care access.
 */
const CARE_RESOURCES = [
  "contact",
  "care_record",
  "consent",
  "contacts",
  "consents",
  "care_flag",
  "medication",
  "medications",
  "medication_administration",
  "medication_administrations",
  "incident",
  "safeguarding_incident",
] as const;

const AuditEvent = z
  .object({
    id: z.string().openapi({ description: "Increasing with time" }),
    occurred_at: z.string().openapi({ format: "date-time" }),
    actor_user_id: z.string().nullable().openapi({ format: "uuid" }),
    actor_email: z.string().nullable(),
    actor_via: z.enum(["api_key", "bearer", "operator"]),
    actor_key_id: z.string().nullable().openapi({ format: "uuid" }),
    request_id: z.string().nullable().openapi({
      description: "The server's id of the request that made the change (its X-Request-Id answer header)",
    }),
    client_request_id: z.string().nullable().openapi({
      description: "The X-Request-Id the client sent with that request, when it was a short safe token; chosen by the client",
    }),
    action: z.enum(ACTIONS).openapi({ description: "read: someone read a participant's care data (no values)" }),
    resource_type: z.string(),
    resource_id: z.string().openapi({ format: "uuid" }),
    resource_label: z.string().nullable().openapi({
      description:
        "A short label of the record while it is live (a name, a room number, a participant's full name, a user's e-mail, a key's name or prefix); null once it is deleted or erased, or for a kind of record that has none",
    }),
    changes: z.record(z.string(), z.array(z.unknown()).min(2).max(2)).openapi({
      description: '{field: [before, after]} for the fields that changed; an erased participant\'s values read "erased"',
    }),
    capacity_override: z
      .object({
        room_id: z.string().openapi({ format: "uuid" }),
        room_number: z.string(),
        capacity: z.number().int(),
        occupancy: z.number().int(),
      })
      .nullable()
      .openapi({
        description:
          "Set when this change placed the participant in a room over its capacity under an admin's override_capacity=true: the room, its capacity and the occupancy the change left; the actor is the admin who overrode",
      }),
  })
  .openapi("AuditEvent");

const timestampFilter = () =>
  z
    .string()
    .datetime({ offset: true, message: "must be an RFC 3339 timestamp" })
    .optional()
    .openapi({ type: "string", format: "date-time" });

const Query = z.object({
  resource_type: z
    .enum([
      "instance",
      "supergroup",
      "subgroup",
      "block",
      "room",
      "participant",
      "user",
      "api_key",
      "webhook_endpoint",
      "movement",
      "roll_call",
      "roll_call_mark",
      "tenant",
      ...CARE_RESOURCES,
    ])
    .optional()
    .openapi({
      description: `Care resources (${CARE_RESOURCES.join(", ")}) are seen only with care access: asked for by name without it, 403; safeguarding_incident only by safeguarding leads (403 to others)`,
    }),
  resource_id: idFilter(),
  actor_user_id: idFilter(),
  action: z.enum(ACTIONS).optional().openapi({ description: "read (care reads only) needs care access: 403 without it" }),
  since: timestampFilter().openapi({ description: "At or after" }),
  until: timestampFilter().openapi({ description: "Before" }),
  request_id: cleanText().max(64).optional().openapi({ description: "The server's id of the request" }),
  client_request_id: cleanText().max(64).optional().openapi({ description: "The X-Request-Id the client sent" }),
  ...pagination(100),
});

type Filters = z.infer<typeof Query>;

/**
 * The label of an event's record, read now and under RLS, so it never shows
 * more than the admins who read the trail can read anyway: live records only
 * (an erased participant is deleted, its names gone), nothing for kinds of
 * record not listed here (care data, say, which not every admin may read).
 */
const RESOURCE_LABEL = `case resource_type
    when 'instance' then (select r.name from public.instances r where r.id = resource_id and r.deleted_at is null)
    when 'supergroup' then (select r.name from public.supergroups r where r.id = resource_id and r.deleted_at is null)
    when 'subgroup' then (select r.name from public.subgroups r where r.id = resource_id and r.deleted_at is null)
    when 'block' then (select r.name from public.blocks r where r.id = resource_id and r.deleted_at is null)
    when 'room' then (select r.room_number from public.rooms r where r.id = resource_id and r.deleted_at is null)
    when 'participant' then (select r.full_name from public.participants r where r.id = resource_id and r.deleted_at is null)
    when 'user' then (select r.email from public.users r where r.id = resource_id)
    when 'api_key' then (select coalesce(r.name, r.key_prefix) from public.api_keys r where r.id = resource_id)
  end`;

async function listEvents(sql: Sql, filters: Filters) {
  const where: string[] = [];
  const params: unknown[] = [];
  const equal = (column: string, value: unknown) => {
    if (value === undefined) return;
    params.push(value);
    where.push(`${column} = $${params.length}`);
  };
  equal("resource_type", filters.resource_type);
  // Care events asked for by name: refused without care access (403), never an empty page.
  const careType = (CARE_RESOURCES as readonly string[]).includes(filters.resource_type ?? "");
  if (careType || filters.action === "read") where.push("(select private.require_care_access())");
  if (filters.resource_type === "safeguarding_incident") where.push("(select private.require_safeguarding_lead())");
  equal("resource_id", filters.resource_id);
  equal("actor_user_id", filters.actor_user_id);
  equal("action", filters.action);
  equal("request_id", filters.request_id);
  equal("client_request_id", filters.client_request_id);
  if (filters.since !== undefined) {
    params.push(filters.since);
    where.push(`occurred_at >= $${params.length}::timestamptz`);
  }
  if (filters.until !== undefined) {
    params.push(filters.until);
    where.push(`occurred_at < $${params.length}::timestamptz`);
  }
  return listPage(sql, {
    columns: `id::text, occurred_at, actor_user_id, actor_email, actor_via, actor_key_id, request_id, client_request_id,
              action, resource_type, resource_id, ${RESOURCE_LABEL} as resource_label,
              private.audit_changes_of(action, changes) as changes, capacity_override`,
    from: "public.audit_events",
    where,
    params,
    orderBy: "occurred_at desc, id desc",
    limit: filters.limit,
    offset: filters.offset,
  });
}

const listRoute = createRoute(
  operation({
    method: "get",
    path: "/",
    summary: "List who changed what (admins)",
    description:
      "The audit trail of the tenant, newest first: who (user, credential, request) changed which record and which fields, with a short label of the record while it exists. Admins only.",
    tags: ["audit"],
    errors: [403],
    request: { query: Query },
    responses: { 200: json(listOf(AuditEvent), "A page of events") },
  }),
);

export const auditRoutes = newRouter().openapi(listRoute, async (c) => {
  requireAdmin(c, "only an admin can read the audit trail");
  const page = await c.get("tenant").run((sql) => listEvents(sql, c.req.valid("query")), { oneStatement: true });
  return list(c, page.rows as never[], page.meta);
});
