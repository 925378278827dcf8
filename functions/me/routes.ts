import { createRoute, z } from "@hono/zod-openapi";
import { SCOPES, type Scope } from "../api-keys/scopes.ts";
import type { Sql } from "../db/sql.ts";
import { unauthorized } from "../errors.ts";
import { ok } from "../http/envelope.ts";
import { dataOf, json, newRouter } from "../http/openapi.ts";
import { operation } from "../http/operation.ts";
import type { Principal } from "../principal.ts";

/**
 * GET /api/v1/me: who the caller is, so a UI can decide what to show without
 * probing for a 403: the user, the tenant and the credential (an API key with
 * its scopes and expiry, or a Bearer token and its subject).
 */

const Me = z
  .object({
    user: z.object({
      id: z.string().openapi({ format: "uuid" }),
      email: z.string(),
      role: z
        .enum(["admin", "staff"])
        .openapi({ description: "admin: everything in the tenant; staff: no users, keys of others or audit" }),
      active: z.boolean(),
      care_access: z.enum(["none", "read", "write"]).openapi({
        description:
          "How far the user reaches children's contacts, care records and consents (an API key also needs its care scope)",
      }),
      safeguarding_lead: z.boolean().openapi({
        description: "Whether the user reads safeguarding incidents (with care access); admins mark leads",
      }),
    }),
    tenant: z.object({ id: z.string().openapi({ format: "uuid" }), name: z.string() }),
    credential: z
      .discriminatedUnion("type", [
        z
          .object({
            type: z.literal("api_key"),
            id: z.string().openapi({ format: "uuid" }),
            name: z.string().nullable(),
            scopes: z.array(z.enum(SCOPES)).openapi({
              description: '["read"] may only GET and HEAD; "care" reaches the care data the user may',
            }),
            expires_at: z.string().nullable().openapi({ format: "date-time" }),
          })
          .openapi("ApiKeyCredential"),
        z
          .object({
            type: z.literal("bearer"),
            subject: z.string().openapi({ description: "The token's `sub`, as the identity provider issued it" }),
            scopes: z.array(z.enum(SCOPES)).openapi({
              description: "A token may do all its user's role and care access allow",
            }),
          })
          .openapi("BearerCredential"),
      ])
      .openapi({ description: "How the caller authenticated" }),
  })
  .openapi("Me");

type MeRecord = z.infer<typeof Me>;

interface Row {
  user_id: string;
  email: string;
  role: "admin" | "staff";
  active: boolean;
  auth_subject: string | null;
  tenant_id: string;
  tenant_name: string;
  key_id: string | null;
  key_name: string | null;
  care_access: "none" | "read" | "write";
  safeguarding_lead: boolean;
  key_scopes: Scope[] | null;
  key_expires_at: Date | null;
}

/** The caller, its tenant and its key in one statement (the tenant's own rows, under RLS). */
async function whoIs(sql: Sql, principal: Principal): Promise<MeRecord | undefined> {
  const row = await sql.one<Row>(
    `select u.id as user_id, u.email, u.role, u.active, u.care_access, u.safeguarding_lead, u.auth_subject, t.id as tenant_id, t.name as tenant_name,
            k.id as key_id, k.name as key_name, k.scopes as key_scopes, k.expires_at as key_expires_at
     from public.users u
     join public.tenants t on t.id = u.tenant_id
     left join public.api_keys k on k.id = $2::uuid and k.user_id = u.id
     where u.id = $1`,
    [principal.userId, principal.keyId ?? null],
  );
  if (!row) return undefined;
  const credential: MeRecord["credential"] =
    principal.via === "api_key" && row.key_id
      ? {
          type: "api_key",
          id: row.key_id,
          name: row.key_name,
          scopes: row.key_scopes ?? principal.scopes,
          expires_at: row.key_expires_at?.toISOString() ?? null,
        }
      : { type: "bearer", subject: row.auth_subject ?? "", scopes: principal.scopes };
  return {
    user: {
      id: row.user_id,
      email: row.email,
      role: row.role,
      active: row.active,
      care_access: row.care_access,
      safeguarding_lead: row.safeguarding_lead,
    },
    tenant: { id: row.tenant_id, name: row.tenant_name },
    credential,
  };
}

const route = createRoute(
  operation({
    method: "get",
    path: "/",
    summary: "Get the caller",
    description:
      "Who the caller is: the user (id, e-mail, role, active), the tenant (id, name) and the credential: an API key (id, name, scopes, expiry) or a Bearer token (its subject). A UI can choose its menus from this instead of probing for 403s.",
    tags: ["me"],
    responses: { 200: json(dataOf(Me), "The caller") },
  }),
);

export const meRoutes = newRouter().openapi(route, async (c) => {
  const principal = c.get("principal");
  const me = await c.get("tenant").run((sql) => whoIs(sql, principal), { oneStatement: true });
  // The user went away between authentication and this read.
  if (!me) throw unauthorized("the caller's user no longer exists");
  return ok(c, me);
});
