import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../app-env.ts";
import type { Sql } from "../db/sql.ts";
import { badRequest, conflict, notFound, unauthorized } from "../errors.ts";
import { list, locate, message, ok } from "../http/envelope.ts";
import { dataOf, json, listOf, MessageSchema, newRouter } from "../http/openapi.ts";
import { operation } from "../http/operation.ts";
import { answerHoldsSecret, requireAdmin } from "../http/replay-rules.ts";
import type { Principal } from "../principal.ts";
import { idField, idFilter, isUuid, pagination, requiredText } from "../resources/fields.ts";
import {
  findUserByEmail,
  findUserById,
  issueFirstKey,
  issueKey,
  type KeyRecord as KeyRecordRow,
  keyById,
  listKeys,
  liveKeysOf,
  replaceKey,
  revokeKey,
} from "./data.ts";
import { SCOPES, scopeList } from "./scopes.ts";

const KeyRecord = z
  .object({
    id: z.string().uuid(),
    user_id: z.string().uuid(),
    email: z.string(),
    name: z.string().nullable(),
    scopes: z.array(z.enum(SCOPES)),
    key_prefix: z.string().openapi({ example: "camp_Ab3dE9fG" }),
    created_at: z.string().datetime(),
    last_used_at: z.string().datetime().nullable(),
    expires_at: z.string().datetime().nullable(),
    revoked_at: z.string().datetime().nullable(),
  })
  .openapi("ApiKey");

const IssuedKey = KeyRecord.extend({
  key: z.string().openapi({ description: "The secret. Shown only in this response; store it now." }),
}).openapi("IssuedApiKey");

const GenerateBody = z.strictObject({
  email: z.string().trim().min(3).max(320).email(),
  expires_at: z
    .string()
    .datetime({ offset: true })
    .refine((v) => Date.parse(v) > Date.now(), "must be in the future")
    .optional()
    .openapi({ description: "Optional expiry (ISO 8601). Keys do not expire unless this is given." }),
  name: requiredText(100).optional().openapi({ description: "What the key is for, e.g. the script that uses it" }),
  scopes: scopeList().optional().openapi({ description: 'Default ["read", "write"]: everything the user\'s role allows' }),
});

const CreateBody = z.strictObject({
  email: z.string().trim().min(3).max(320).email().optional().openapi({ description: "The key's user; or user_id" }),
  user_id: idField().optional().openapi({ description: "The key's user; or email" }),
  name: requiredText(100).openapi({
    description: "What the key is for, e.g. the script that uses it; unique among the user's live keys (case-insensitive)",
  }),
  scopes: scopeList(),
  expires_at: z
    .string()
    .datetime({ offset: true })
    .refine((v) => Date.parse(v) > Date.now(), "must be in the future")
    .optional()
    .openapi({ description: "Optional expiry (ISO 8601). Keys do not expire unless this is given." }),
});

const ListQuery = z.object({
  user_id: idFilter(),
  live: z
    .enum(["true", "false"])
    .transform((v) => v === "true")
    .optional()
    .openapi({
      type: "string",
      enum: ["true", "false"],
      description: "Only live keys (true) or only revoked and expired ones (false)",
    }),
  ...pagination(100),
});

const KeyId = z.object({ id: z.string().openapi({ param: { name: "id", in: "path" }, format: "uuid" }) });

/** Only admins manage other people's keys. */
const adminOnly = (c: Context<AppEnv>) => requireAdmin(c, "only an admin can list or revoke the tenant's keys");

/**
 * Who may issue a key for this user: an admin for anyone of the tenant; anyone
 * else for themselves, and only on the strength of an identity-provider token
 * (a leaked key must not be able to mint keys that outlive its revocation).
 */
function mayIssueFor(c: Context<AppEnv>, user: { email?: string; user_id?: string }): void {
  const principal = c.get("principal");
  const self =
    user.email !== undefined ? principal.email.toLowerCase() === user.email.toLowerCase() : principal.userId === user.user_id;
  if (!(principal.via === "bearer" && self)) requireAdmin(c, "only an admin can issue keys for other users");
}

/**
 * The caller's own key: the one it authenticated with, or for a Bearer token
 * its live key. A Bearer caller holding several names none of them: 409, as
 * acting on one of them at random (revoking it, say) would surprise.
 */
async function currentKey(sql: Sql, principal: Principal): Promise<KeyRecordRow> {
  if (principal.keyId) {
    const key = await keyById(sql, principal.keyId);
    if (!key) throw notFound("API key");
    return key;
  }
  const live = await liveKeysOf(sql, principal.userId);
  if (live.length === 0) throw notFound("API key");
  if (live.length > 1) {
    throw conflict(
      `${principal.email} holds ${live.length} live API keys and a Bearer token names none of them: call with the key itself (an admin lists and revokes keys by id: GET /api/v1/api-keys, DELETE /api/v1/api-keys/{id})`,
      { field: "Authorization", issue: "names no single API key" },
    );
  }
  return live[0] as KeyRecordRow;
}

const tags = ["api-keys"];

const generate = createRoute(
  operation({
    errors: [403, 404, 409],
    method: "post",
    path: "/generate",
    summary: "Issue a key for a user",
    description:
      "Issues a user's first key: an admin for anyone of the tenant, anyone else for themselves with a Bearer token. The secret is in this answer only. 409 while the user has a live key (its message names the ways out: `regenerate`, or a further named key with `POST /api-keys`).",
    tags,
    request: { body: { content: { "application/json": { schema: GenerateBody } }, required: true } },
    responses: { 201: json(dataOf(IssuedKey), "The new key, shown once") },
  }),
);

const create = createRoute(
  operation({
    errors: [403, 404, 409],
    method: "post",
    path: "/",
    summary: "Issue a named key for a user",
    description:
      "Issues a further key for a user of the tenant (named by `email` or `user_id`), beside any it holds: an admin for anyone, anyone else for themselves with a Bearer token. Each key has its own name (unique among the user's live keys, else 409), scopes and expiry; a user holds at most 50 live keys (409 beyond). The secret is in this answer only.",
    tags,
    request: { body: { content: { "application/json": { schema: CreateBody } }, required: true } },
    responses: { 201: json(dataOf(IssuedKey), "The new key, shown once") },
  }),
);

const myKey = createRoute(
  operation({
    errors: [404, 409],
    method: "get",
    path: "/my-key",
    summary: "Get the caller's current key",
    description:
      "The key the caller authenticated with (for a Bearer token, the user's live key); never the secret. 404 when there is none; 409 for a Bearer caller holding several (the token names none of them).",
    tags,
    responses: { 200: json(dataOf(KeyRecord), "The key record") },
  }),
);

const byId = createRoute(
  operation({
    method: "get",
    path: "/{id}",
    summary: "Get a key record",
    description:
      "One key record, never the secret: admins see any key of the tenant, others only their own (anyone else's is 404).",
    tags,
    request: { params: KeyId },
    responses: { 200: json(dataOf(KeyRecord), "The key record") },
  }),
);

const listRoute = createRoute(
  operation({
    errors: [403],
    method: "get",
    path: "/",
    summary: "List the tenant's keys (admins)",
    description:
      "Every key of the tenant, newest first, with their names, never a secret; filter by user_id or live. Admins only.",
    tags,
    request: { query: ListQuery },
    responses: { 200: json(listOf(KeyRecord), "A page of key records") },
  }),
);

const revokeById = createRoute(
  operation({
    errors: [403, 404, 409],
    method: "delete",
    path: "/{id}",
    summary: "Revoke one key of the tenant (admins)",
    description:
      "Revokes one key of the tenant, leaving its user's other keys live; it is refused on the very next request by every server process. 409 when it is already revoked. Admins only (anyone may revoke the key they call with: DELETE /api-keys/revoke).",
    tags,
    request: { params: KeyId },
    responses: { 200: json(MessageSchema, "Revoked") },
  }),
);

const regenerate = createRoute(
  operation({
    errors: [404, 409],
    method: "post",
    path: "/regenerate",
    summary: "Regenerate the caller's key",
    description:
      "Revokes the caller's key and issues a new one in one transaction; the new key keeps the old one's name, scopes and expiry. The secret is in this answer only.",
    tags,
    responses: { 200: json(dataOf(IssuedKey), "The new key, shown once") },
  }),
);

const revoke = createRoute(
  operation({
    errors: [404, 409],
    method: "delete",
    path: "/revoke",
    summary: "Revoke the caller's key",
    description:
      "Revokes the key the caller authenticated with (for a Bearer token, the user's live key); it is refused from the next request on.",
    tags,
    responses: { 200: json(MessageSchema, "Revoked") },
  }),
);

export const apiKeyRoutes = newRouter()
  .openapi(generate, async (c) => {
    const { email, expires_at, name, scopes } = c.req.valid("json");
    mayIssueFor(c, { email });
    const issued = await c.get("tenant").run(async (sql) => {
      const user = await findUserByEmail(sql, email);
      if (!user) throw notFound("user");
      return issueFirstKey(sql, user, { expiresAt: expires_at ? new Date(expires_at) : null, name, scopes });
    });
    locate(c, `/api/v1/api-keys/${issued.id}`);
    answerHoldsSecret(c);
    return ok(c, issued, 201);
  })
  .openapi(create, async (c) => {
    const { email, user_id, expires_at, name, scopes } = c.req.valid("json");
    if ((email === undefined) === (user_id === undefined)) {
      throw badRequest("name the key's user with exactly one of email and user_id", [
        { field: "email", issue: "send exactly one of email and user_id" },
        { field: "user_id", issue: "send exactly one of email and user_id" },
      ]);
    }
    mayIssueFor(c, { email, user_id });
    const issued = await c.get("tenant").run(async (sql) => {
      const user = email !== undefined ? await findUserByEmail(sql, email) : await findUserById(sql, user_id as string);
      if (!user) throw notFound("user");
      return issueKey(sql, user.id, { expiresAt: expires_at ? new Date(expires_at) : null, name, scopes });
    });
    locate(c, `/api/v1/api-keys/${issued.id}`);
    answerHoldsSecret(c);
    return ok(c, issued, 201);
  })
  .openapi(myKey, async (c) => {
    const principal = c.get("principal");
    return ok(c, await c.get("tenant").run((sql) => currentKey(sql, principal)));
  })
  .openapi(byId, async (c) => {
    const { id } = c.req.valid("param");
    const principal = c.get("principal");
    const record = isUuid(id) ? await c.get("tenant").run((sql) => keyById(sql, id), { oneStatement: true }) : undefined;
    // Someone else's key is as unknown to a non-admin as one of another tenant.
    if (!record || (principal.role !== "admin" && record.user_id !== principal.userId)) throw notFound("API key");
    return ok(c, record);
  })
  .openapi(listRoute, async (c) => {
    adminOnly(c);
    const page = await c.get("tenant").run((sql) => listKeys(sql, c.req.valid("query")), { oneStatement: true });
    return list(c, page.rows, page.meta);
  })
  .openapi(regenerate, async (c) => {
    const principal = c.get("principal");
    const issued = await c.get("tenant").run(async (sql) => {
      const replaced = await replaceKey(sql, (await currentKey(sql, principal)).id);
      // A concurrent regenerate or revoke got there first: this key is no longer valid.
      if (!replaced) throw unauthorized("API key has been revoked");
      return replaced;
    });
    answerHoldsSecret(c);
    return ok(c, issued);
  })
  .openapi(revoke, async (c) => {
    const principal = c.get("principal");
    await c.get("tenant").run(async (sql) => {
      const key = await currentKey(sql, principal);
      if (!(await revokeKey(sql, key.id))) throw unauthorized("API key has been revoked");
    });
    return message(c, "API key revoked");
  })
  // After /revoke, which /{id} would otherwise answer.
  .openapi(revokeById, async (c) => {
    adminOnly(c);
    const { id } = c.req.valid("param");
    await c.get("tenant").run(async (sql) => {
      const key = isUuid(id) ? await keyById(sql, id) : undefined;
      if (!key) throw notFound("API key");
      if (!(await revokeKey(sql, id))) throw conflict("this key is already revoked");
    });
    return message(c, "API key revoked");
  });
