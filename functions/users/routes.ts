import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../app-env.ts";
import { notFound } from "../errors.ts";
import { list, locate, ok } from "../http/envelope.ts";
import { dataOf, json, listOf, newRouter } from "../http/openapi.ts";
import { operation } from "../http/operation.ts";
import { requireAdmin } from "../http/replay-rules.ts";
import { readOnlyFields } from "../resources/derive.ts";
import { cleanText, IdParam, isUuid, pagination, SHORT_TEXT } from "../resources/fields.ts";
import { addUser, changeUser, getUser, listUsers } from "./data.ts";

/** Users of the tenant, managed by its admins (staff get 403). */

const Role = z.enum(["admin", "staff"]);
const CareAccess = z.enum(["none", "read", "write"]).openapi({
  description:
    "How far the user reaches children's contacts, care records and consents: none, read or write (an API key also needs its care scope). New users: write for admins, none for staff.",
});
const timestamp = () => z.string().openapi({ format: "date-time" });

const User = z
  .object({
    id: z.string().openapi({ format: "uuid" }),
    email: z.string(),
    role: Role,
    active: z.boolean(),
    care_access: CareAccess,
    safeguarding_lead: z.boolean().openapi({
      description: "Reads incidents of category safeguarding (with care access); only admins set it",
    }),
    created_at: timestamp(),
    updated_at: timestamp(),
    has_live_key: z.boolean(),
  })
  .openapi("User");

/** The read form's other fields, accepted in a body and ignored (a client may send back what it read). */
const USER_READ_ONLY = readOnlyFields(["id", "active", "created_at", "updated_at", "has_live_key"]);

const NewUser = z
  .strictObject({
    ...USER_READ_ONLY,
    email: z.string().trim().min(3).max(320).email(),
    role: Role.openapi({ description: "admin or staff" }),
  })
  .openapi("NewUser");

const UserChange = z
  .strictObject({
    ...readOnlyFields(["id", "email", "created_at", "updated_at", "has_live_key"]),
    role: Role.optional(),
    active: z.boolean().optional().openapi({ description: "false revokes the user's keys and refuses their Bearer tokens" }),
    care_access: CareAccess.optional(),
    safeguarding_lead: z.boolean().optional().openapi({
      description: "true marks the user a safeguarding lead: they read safeguarding incidents (with care access)",
    }),
  })
  .refine(
    (body) =>
      body.role !== undefined ||
      body.active !== undefined ||
      body.care_access !== undefined ||
      body.safeguarding_lead !== undefined,
    "send role, active, care_access, safeguarding_lead or more",
  )
  .openapi("UserChange");

const Query = z.object({
  role: Role.optional(),
  active: z
    .enum(["true", "false"])
    .transform((v) => v === "true")
    .optional()
    .openapi({ type: "string", enum: ["true", "false"] }),
  q: cleanText().trim().min(1).max(SHORT_TEXT).optional().openapi({ description: "Part of the e-mail address" }),
  ...pagination(100),
});

const tags = ["users"];
const body = <T extends z.ZodType>(schema: T) => ({ content: { "application/json": { schema } }, required: true });

const adminOnly = (c: Context<AppEnv>) => requireAdmin(c, "only an admin can manage users");

const listRoute = createRoute(
  operation({
    errors: [403],
    method: "get",
    path: "/",
    summary: "List the tenant's users (admins)",
    description: "The tenant's users, oldest first, filtered by role, active or part of the e-mail address. Admins only.",
    tags,
    request: { query: Query },
    responses: { 200: json(listOf(User), "A page of users") },
  }),
);
const getRoute = createRoute(
  operation({
    errors: [403, 404],
    method: "get",
    path: "/{id}",
    summary: "Get a user (admins)",
    description: "One user of the tenant, with whether they have a live key. Admins only.",
    tags,
    request: { params: IdParam },
    responses: { 200: json(dataOf(User), "The user") },
  }),
);
const createOne = createRoute(
  operation({
    errors: [403, 409],
    method: "post",
    path: "/",
    summary: "Add a user (admins)",
    description: "Adds a user to the tenant with a role; 409 when the e-mail address is taken in the tenant. Admins only.",
    tags,
    request: { body: body(NewUser) },
    responses: { 201: json(dataOf(User), "The new user") },
  }),
);
const changeOne = createRoute(
  operation({
    errors: [403, 404, 409],
    method: "patch",
    path: "/{id}",
    summary: "Change a user (admins)",
    description:
      "Changes a user's role, care access or safeguarding lead mark, or deactivates them (their keys are revoked and their Bearer tokens refused); the last active admin cannot be demoted or deactivated (409). Admins only.",
    tags,
    request: { params: IdParam, body: body(UserChange) },
    responses: { 200: json(dataOf(User), "The user") },
  }),
);

export const userRoutes = newRouter()
  .openapi(listRoute, async (c) => {
    adminOnly(c);
    const page = await c.get("tenant").run((sql) => listUsers(sql, c.req.valid("query")), { oneStatement: true });
    return list(c, page.rows, page.meta);
  })
  .openapi(getRoute, async (c) => {
    adminOnly(c);
    const { id } = c.req.valid("param");
    const user = isUuid(id) ? await c.get("tenant").run((sql) => getUser(sql, id), { oneStatement: true }) : undefined;
    if (!user) throw notFound("user");
    return ok(c, user);
  })
  .openapi(createOne, async (c) => {
    adminOnly(c);
    const { email, role } = c.req.valid("json");
    const user = await c.get("tenant").run((sql) => addUser(sql, email, role), { oneStatement: true });
    if (!user) throw notFound("user");
    locate(c, `/api/v1/users/${user.id}`);
    return ok(c, user, 201);
  })
  .openapi(changeOne, async (c) => {
    adminOnly(c);
    const { id } = c.req.valid("param");
    const change = c.req.valid("json");
    const user = isUuid(id) ? await c.get("tenant").run((sql) => changeUser(sql, id, change)) : undefined;
    if (!user) throw notFound("user");
    return ok(c, user);
  });
