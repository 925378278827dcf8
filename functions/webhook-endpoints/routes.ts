import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../app-env.ts";
import { conflict, invalidField, notFound } from "../errors.ts";
import { EVENT_TYPES, PING_EVENT } from "../events/types.ts";
import { list, locate, message, ok } from "../http/envelope.ts";
import { dataOf, json, listOf, MessageSchema, newRouter } from "../http/openapi.ts";
import { operation } from "../http/operation.ts";
import { answerHoldsSecret, requireAdmin } from "../http/replay-rules.ts";
import { cleanText, IdParam, isUuid, LONG_TEXT, pagination } from "../resources/fields.ts";
import { newSecret } from "../webhooks/signing.ts";
import { endpointUrlIssue, MAX_URL_LENGTH } from "../webhooks/url-policy.ts";
import {
  addEndpoint,
  changeEndpoint,
  deleteEndpoint,
  getDelivery,
  getEndpoint,
  listDeliveries,
  listEndpoints,
  pingEndpoint,
  redeliver,
  rotateSecret,
} from "./data.ts";

/** Webhook endpoints of the tenant, managed by its admins (staff get 403); see docs/events.md. */

const timestamp = () => z.string().openapi({ format: "date-time" });
const EventType = z.enum(EVENT_TYPES);

const Endpoint = z
  .object({
    id: z.string().openapi({ format: "uuid" }),
    url: z.string(),
    description: z.string().nullable(),
    types: z
      .array(EventType)
      .nullable()
      .openapi({ description: "The event types sent; null: every type except care events (medication.*, incident.*)" }),
    enabled: z.boolean(),
    disabled_reason: z.string().nullable().openapi({ description: "Why the service disabled it (persistent failure)" }),
    failing_since: timestamp().nullable().openapi({ description: "Since when every attempt has failed" }),
    secret_rotated_at: timestamp().nullable(),
    previous_secret_expires_at: timestamp()
      .nullable()
      .openapi({ description: "Until when the secret replaced by the last rotation still signs beside the new one" }),
    created_at: timestamp(),
    updated_at: timestamp(),
  })
  .openapi("WebhookEndpoint");

const WithSecret = Endpoint.extend({
  secret: z.string().openapi({ description: "The signing secret (whsec_…), shown only in this answer", example: "whsec_…" }),
}).openapi("WebhookEndpointWithSecret");

const url = cleanText().max(MAX_URL_LENGTH).openapi({ format: "uri", description: "https only; a public host" });
const description = cleanText({ lines: true }).trim().max(LONG_TEXT).nullable();
const types = z.array(EventType).min(1).max(50).nullable();

const NewEndpoint = z
  .object({
    url,
    types: types.optional().openapi({
      description:
        "Event types to send; omitted or null: every type except care events (medication.*, incident.*), which are sent only when named here, and naming them needs care access (403 without)",
    }),
    description: description.optional(),
    enabled: z.boolean().optional().openapi({ description: "true when omitted" }),
  })
  .openapi("NewWebhookEndpoint");

const EndpointChange = z
  .object({
    url: url.optional(),
    types: types.optional(),
    description: description.optional(),
    enabled: z.boolean().optional().openapi({ description: "true enables it again (and clears disabled_reason)" }),
  })
  .openapi("WebhookEndpointChange");

const Rotation = z
  .object({
    grace_period_hours: z
      .number()
      .int()
      .min(0)
      .max(168)
      .optional()
      .openapi({ description: "How long the old secret keeps signing beside the new one; 24 when omitted, at most 168" }),
  })
  .openapi("WebhookSecretRotation");

const Attempt = z.object({
  started_at: timestamp(),
  duration_ms: z.number().int().nullable(),
  status_code: z.number().int().nullable(),
  error: z.string().nullable(),
  response: z.string().nullable().openapi({ description: "The start of the receiver's answer (at most 256 characters)" }),
});

const Delivery = z
  .object({
    id: z.string().openapi({ format: "uuid" }),
    event_id: z.string(),
    event_type: z.enum([...EVENT_TYPES, PING_EVENT]),
    resource_id: z.string().openapi({ format: "uuid" }),
    occurred_at: timestamp(),
    status: z.enum(["pending", "delivered", "failed"]),
    tries: z.number().int().openapi({ description: "Attempts in the current cycle (a redelivery starts one)" }),
    next_attempt_at: timestamp().nullable(),
    created_at: timestamp(),
    updated_at: timestamp(),
    attempts: z.array(Attempt).openapi({ description: "The latest 20 attempts, newest first" }),
  })
  .openapi("WebhookDelivery");

const ListQuery = z.object({
  enabled: z
    .enum(["true", "false"])
    .transform((v) => v === "true")
    .optional()
    .openapi({ type: "string", enum: ["true", "false"] }),
  ...pagination(100),
});
const DeliveryQuery = z.object({
  status: z.enum(["pending", "delivered", "failed"]).optional(),
  event_id: z
    .string()
    .regex(/^[0-9]{1,18}$/, "must be an event id")
    .optional(),
  ...pagination(100),
});
const DeliveryParams = z.object({
  id: cleanText().openapi({ param: { name: "id", in: "path" }, format: "uuid" }),
  deliveryId: cleanText().openapi({ param: { name: "deliveryId", in: "path" }, format: "uuid" }),
});

const tags = ["webhooks"];
const body = <T extends z.ZodType>(schema: T, required = true) => ({ content: { "application/json": { schema } }, required });

const adminOnly = (c: Context<AppEnv>) => requireAdmin(c, "only an admin can manage webhook endpoints");

function checkUrl(c: Context<AppEnv>, value: string | undefined) {
  if (value === undefined) return;
  const issue = endpointUrlIssue(value, c.get("config").WEBHOOK_ALLOW_PRIVATE_NETWORKS);
  if (issue) throw invalidField("url", issue);
}

/** Every webhook operation is an admin's: 403 for anyone else. */
const route = <P extends string>(method: "get" | "post" | "patch" | "put" | "delete", path: P) => ({
  method,
  path,
  tags,
  errors: [403 as const],
});

const listRoute = createRoute(
  operation({
    ...route("get", "/"),
    summary: "List the tenant's webhook endpoints (admins)",
    description: "The tenant's webhook endpoints (admins)",
    request: { query: ListQuery },
    responses: { 200: json(listOf(Endpoint), "A page of endpoints") },
  }),
);
const getRoute = createRoute(
  operation({
    ...route("get", "/{id}"),
    summary: "Get a webhook endpoint (admins)",
    description: "One webhook endpoint (admins)",
    request: { params: IdParam },
    responses: { 200: json(dataOf(Endpoint), "The endpoint") },
  }),
);
const createOne = createRoute(
  operation({
    ...route("post", "/"),
    summary: "Register a webhook endpoint (admins)",
    description: "Register a webhook endpoint (admins); the answer holds its signing secret, shown only then",
    request: { body: body(NewEndpoint) },
    responses: { 201: json(dataOf(WithSecret), "The endpoint and its secret") },
  }),
);
const changeRoute = (method: "patch" | "put") =>
  createRoute(
    operation({
      ...route(method, "/{id}"),
      summary: "Change a webhook endpoint (admins)",
      description: "Change a webhook endpoint's url, types, description or enabled (admins); only the fields sent",
      request: { params: IdParam, body: body(EndpointChange) },
      responses: { 200: json(dataOf(Endpoint), "The endpoint") },
    }),
  );
const deleteOne = createRoute(
  operation({
    ...route("delete", "/{id}"),
    summary: "Delete a webhook endpoint (admins)",
    description: "Delete a webhook endpoint (admins); its pending deliveries fail and its secret is forgotten",
    request: { params: IdParam },
    responses: { 200: json(MessageSchema, "Deleted") },
  }),
);
const rotateOne = createRoute(
  operation({
    ...route("post", "/{id}/rotate-secret"),
    summary: "Rotate a webhook endpoint's signing secret (admins)",
    description: "Give a webhook endpoint a new signing secret (admins); the old one keeps signing for the grace period",
    request: { params: IdParam, body: body(Rotation, false) },
    responses: { 200: json(dataOf(WithSecret), "The endpoint and its new secret") },
  }),
);
const deliveriesRoute = createRoute(
  operation({
    ...route("get", "/{id}/deliveries"),
    summary: "List a webhook endpoint's deliveries (admins)",
    description: "A webhook endpoint's deliveries, newest first, each with its attempts (admins)",
    request: { params: IdParam, query: DeliveryQuery },
    responses: { 200: json(listOf(Delivery), "A page of deliveries") },
  }),
);
const redeliverRoute = createRoute(
  operation({
    ...route("post", "/{id}/deliveries/{deliveryId}/redeliver"),
    errors: [403, 409],
    summary: "Redeliver a webhook delivery (admins)",
    description:
      "Send a delivery again, with a new cycle of retries (admins); 409 while it is being sent or the endpoint is disabled",
    request: { params: DeliveryParams },
    responses: { 200: json(dataOf(Delivery), "The delivery, due now") },
  }),
);

const pingRoute = createRoute(
  operation({
    ...route("post", "/{id}/ping"),
    errors: [403, 409],
    summary: "Send a test event to a webhook endpoint (admins)",
    description:
      "Sends a signed `webhook.ping` event to the endpoint at once (admins): a delivery like any other, listed with its attempts in the endpoint's deliveries. 409 when the endpoint is disabled",
    request: { params: IdParam },
    responses: { 202: json(dataOf(Delivery), "The ping's delivery, due now") },
  }),
);

const DEFAULT_GRACE_HOURS = 24;

function endpointId(c: Context<AppEnv>): string {
  const { id } = c.req.param() as { id: string };
  if (!isUuid(id)) throw notFound("webhook endpoint");
  return id;
}

async function change(c: Context<AppEnv>) {
  adminOnly(c);
  const id = endpointId(c);
  const fields = (await c.req.json()) as z.infer<typeof EndpointChange>;
  checkUrl(c, fields.url);
  const record = await c.get("tenant").run((sql) => changeEndpoint(sql, id, fields));
  if (!record) throw notFound("webhook endpoint");
  return ok(c, record);
}

/**
 * The endpoints' routes. `deliverNow` asks this process's webhook worker, if
 * it has one, to look at the queue at once (a ping is for a person waiting).
 */
export const webhookEndpointRoutes = (deliverNow?: () => void) =>
  newRouter()
    .openapi(listRoute, async (c) => {
      adminOnly(c);
      const page = await c.get("tenant").run((sql) => listEndpoints(sql, c.req.valid("query")), { oneStatement: true });
      return list(c, page.rows as never[], page.meta);
    })
    .openapi(getRoute, async (c) => {
      adminOnly(c);
      const id = endpointId(c);
      const record = await c.get("tenant").run((sql) => getEndpoint(sql, id), { oneStatement: true });
      if (!record) throw notFound("webhook endpoint");
      return ok(c, record) as never;
    })
    .openapi(createOne, async (c) => {
      adminOnly(c);
      const fields = c.req.valid("json");
      checkUrl(c, fields.url);
      const secret = newSecret();
      const record = await c.get("tenant").run((sql) =>
        addEndpoint(
          sql,
          {
            url: fields.url,
            description: fields.description ?? null,
            types: fields.types ?? null,
            enabled: fields.enabled ?? true,
          },
          secret,
        ),
      );
      if (!record) throw notFound("webhook endpoint");
      locate(c, `/api/v1/webhook-endpoints/${record.id}`);
      answerHoldsSecret(c);
      return ok(c, { ...record, secret }, 201) as never;
    })
    .openapi(changeRoute("patch"), async (c) => {
      c.req.valid("json");
      return (await change(c)) as never;
    })
    .openapi(changeRoute("put"), async (c) => {
      c.req.valid("json");
      return (await change(c)) as never;
    })
    .openapi(deleteOne, async (c) => {
      adminOnly(c);
      const id = endpointId(c);
      if (!(await c.get("tenant").run((sql) => deleteEndpoint(sql, id)))) throw notFound("webhook endpoint");
      return message(c, "webhook endpoint deleted");
    })
    .openapi(rotateOne, async (c) => {
      adminOnly(c);
      const id = endpointId(c);
      const grace = (c.req.valid("json") as z.infer<typeof Rotation> | undefined)?.grace_period_hours ?? DEFAULT_GRACE_HOURS;
      const secret = newSecret();
      const record = await c.get("tenant").run((sql) => rotateSecret(sql, id, secret, grace));
      if (!record) throw notFound("webhook endpoint");
      answerHoldsSecret(c);
      return ok(c, { ...record, secret }) as never;
    })
    .openapi(deliveriesRoute, async (c) => {
      adminOnly(c);
      const id = endpointId(c);
      const query = c.req.valid("query");
      const page = await c.get("tenant").run(async (sql) => {
        if (!(await getEndpoint(sql, id))) throw notFound("webhook endpoint");
        return listDeliveries(sql, id, query);
      });
      return list(c, page.rows as never[], page.meta);
    })
    .openapi(redeliverRoute, async (c) => {
      adminOnly(c);
      const { id, deliveryId } = c.req.valid("param");
      if (!isUuid(id) || !isUuid(deliveryId)) throw notFound("webhook delivery");
      const delivery = await c.get("tenant").run(async (sql) => {
        const result = await redeliver(sql, id, deliveryId);
        if (result === "disabled") throw conflict("the webhook endpoint is disabled: enable it first");
        if (result === "in_flight") throw conflict("the delivery is being sent right now; ask again when it is done");
        if (result !== "queued") throw notFound("webhook delivery");
        return getDelivery(sql, id, deliveryId);
      });
      return ok(c, delivery) as never;
    })
    .openapi(pingRoute, async (c) => {
      adminOnly(c);
      const id = endpointId(c);
      const delivery = await c.get("tenant").run(async (sql) => {
        const deliveryId = await pingEndpoint(sql, id);
        if (!deliveryId) throw notFound("webhook endpoint");
        return getDelivery(sql, id, deliveryId);
      });
      // Committed: a worker can lease it now.
      deliverNow?.();
      return ok(c, delivery, 202) as never;
    });
