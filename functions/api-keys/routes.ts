import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../app-env.ts";
import type { Sql } from "../db/sql.ts";
import { conflict, notFound, unauthorized } from "../errors.ts";
import { list, locate, message, ok } from "../http/envelope.ts";
import { dataOf, json, listOf, MessageSchema, newRouter } from "../http/openapi.ts";
import { operation } from "../http/operation.ts";
import { answerHoldsSecret, requireAdmin } from "../http/replay-rules.ts";
import type { Principal } from "../principal.ts";
import { idFilter, isUuid, pagination, requiredText } from "../resources/fields.ts";
import { activeKeyOf, findUserByEmail, issueKey, keyById, listKeys, replaceKey, revokeKey } from "./data.ts";

/** Stored in this order (api_keys_scopes_check). */
const SCOPE_ORDER = ["read", "write", "care"] as const;

const Scopes = z
  .array(z.enum(SCOPE_ORDER))
  .min(1)
  .max(3)
  .refine((scopes) => new Set(scopes).size === scopes.length, "must not repeat a scope")
  .refine((scopes) => scopes.includes("read"), 'must include "read"')
  .transform((scopes) => SCOPE_ORDER.filter((scope) => scopes.includes(scope)))
  .openapi({
    description:
      '["read"] (GET and HEAD only) or ["read", "write"] (everything the user\'s role allows), each optionally with "care": the user\'s care access to contacts, care records and consents (a key without it reaches none, whatever its user may)',
    example: ["read", "write", "care"],
  });

const KeyRecord = z
  .object({
    id: z.string().uuid(),
    user_id: z.string().uuid(),
    email: z.string(),
    name: z.string().nullable(),
    scopes: z.array(z.enum(SCOPE_ORDER)),
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
  scopes: Scopes.optional().openapi({ description: 'Default ["read", "write"]: everything the user\'s role allows' }),
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

/** The caller's own key: the one it authenticated with, or (for a Bearer token) its live key. */
async function currentKeyId(sql: Sql, principal: Principal): Promise<string> {
  if (principal.keyId) return principal.keyId;
  const key = await activeKeyOf(sql, principal.userId);
  if (!key) throw notFound("API key");
  return key.id;
}

const tags = ["api-keys"];

const generate = createRoute(
  operation({
    errors: [403, 404, 409],
    method: "post",
    path: "/generate",
    summary: "Issue a key for a user",
    description:
      "Issues a key for a user of the tenant: an admin for anyone, anyone else for themselves with a Bearer token. The secret is in this answer only. 409 while the user has a live key.",
    tags,
    request: { body: { content: { "application/json": { schema: GenerateBody } }, required: true } },
    responses: { 201: json(dataOf(IssuedKey), "The new key, shown once") },
  }),
);

const myKey = createRoute(
  operation({
    errors: [404],
    method: "get",
    path: "/my-key",
    summary: "Get the caller's current key",
    description:
      "The key the caller authenticated with (for a Bearer token, the user's live key); never the secret. 404 when there is none.",
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
    description: "Every key of the tenant, newest first, never a secret; filter by user_id or live. Admins only.",
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
    summary: "Revoke a key of the tenant (admins)",
    description:
      "Revokes any key of the tenant; it is refused on the very next request by every server process. 409 when it is already revoked. Admins only.",
    tags,
    request: { params: KeyId },
    responses: { 200: json(MessageSchema, "Revoked") },
  }),
);

const regenerate = createRoute(
  operation({
    errors: [404],
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
    errors: [404],
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
    const principal = c.get("principal");
    const self = principal.email.toLowerCase() === email.toLowerCase();
    // An admin may issue for anyone in the tenant; anyone else only for
    // themselves, and only on the strength of an identity-provider token.
    if (!(principal.via === "bearer" && self)) requireAdmin(c, "only an admin can issue keys for other users");
    const issued = await c.get("tenant").run(async (sql) => {
      const user = await findUserByEmail(sql, email);
      if (!user) throw notFound("user");
      return issueKey(sql, user.id, { expiresAt: expires_at ? new Date(expires_at) : null, name, scopes });
    });
    locate(c, `/api/v1/api-keys/${issued.id}`);
    answerHoldsSecret(c);
    return ok(c, issued, 201);
  })
  .openapi(myKey, async (c) => {
    const principal = c.get("principal");
    const tenant = c.get("tenant");
    const record = await tenant.run((sql) =>
      principal.keyId ? keyById(sql, principal.keyId) : activeKeyOf(sql, principal.userId),
    );
    if (!record) throw notFound("API key");
    return ok(c, record);
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
      const replaced = await replaceKey(sql, await currentKeyId(sql, principal));
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
      const keyId = await currentKeyId(sql, principal);
      if (!(await revokeKey(sql, keyId))) throw unauthorized("API key has been revoked");
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
