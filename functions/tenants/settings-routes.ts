import { createRoute, z } from "@hono/zod-openapi";
import type { Sql } from "../db/sql.ts";
import { notFound } from "../errors.ts";
import { ok } from "../http/envelope.ts";
import { dataOf, json, newRouter } from "../http/openapi.ts";
import { operation } from "../http/operation.ts";
import { requireAdmin } from "../http/replay-rules.ts";

/**
 * GET|PATCH /api/v1/tenant/settings: the tenant's settings, columns of
 * public.tenants (each with a default; health_retention_days is null by
 * default, meaning no retention). Every caller of the tenant
 * reads them; admins change them (also held by RLS), and each change is in
 * the audit trail (resource_type tenant).
 */

const TenantSettings = z
  .object({
    incident_notice_hours: z.number().int().openapi({
      description:
        "Hours after an incident occurred within which its guardians are to be recorded as notified; later, it needs attention (default 24)",
    }),
    health_retention_days: z.number().int().nullable().openapi({
      description:
        "Days an erased participant's health and incident records are kept, detached from any name, before the sweep deletes them; null (the default): erasure removes them with the rest",
    }),
  })
  .openapi("TenantSettings");

const TenantSettingsChange = z
  .strictObject({
    incident_notice_hours: z.number().int().min(1).max(720).optional().openapi({ description: "1 to 720" }),
    health_retention_days: z
      .number()
      .int()
      .min(1)
      .max(36_500)
      .nullable()
      .optional()
      .openapi({ description: "1 to 36,500 (100 years), or null for no retention; applies to erasures from then on" }),
  })
  .refine((body) => Object.keys(body).length > 0, "send a setting to change")
  .openapi("TenantSettingsChange");

type Settings = z.infer<typeof TenantSettings>;
const COLUMNS = "t.incident_notice_hours, t.health_retention_days";

const tags = ["tenant"];

const getRoute = createRoute(
  operation({
    method: "get",
    path: "/settings",
    summary: "Get the tenant's settings",
    description: "The tenant's settings, for every caller of the tenant.",
    tags,
    responses: { 200: json(dataOf(TenantSettings), "The settings") },
  }),
);

const patchRoute = createRoute(
  operation({
    errors: [403],
    method: "patch",
    path: "/settings",
    summary: "Change the tenant's settings (admins)",
    description: "Changes the settings sent; the others stay. Admins only; recorded in the audit trail (resource_type tenant).",
    tags,
    request: { body: { content: { "application/json": { schema: TenantSettingsChange } }, required: true } },
    responses: { 200: json(dataOf(TenantSettings), "The settings") },
  }),
);

const read = (sql: Sql) => sql.one<Settings>(`select ${COLUMNS} from public.tenants t`, []);

export const tenantSettingsRoutes = newRouter()
  .openapi(getRoute, async (c) => {
    const settings = await c.get("tenant").run(read, { oneStatement: true });
    if (!settings) throw notFound("tenant");
    return ok(c, settings);
  })
  .openapi(patchRoute, async (c) => {
    requireAdmin(c, "only an admin can change the tenant's settings");
    const change = c.req.valid("json");
    const settings = await c.get("tenant").run(
      (sql) =>
        // A setting sent as null is set to null (health_retention_days: no retention); one not sent stays.
        sql.one<Settings>(
          `update public.tenants t
             set incident_notice_hours = coalesce($1, t.incident_notice_hours),
                 health_retention_days = case when $2::boolean then $3::int else t.health_retention_days end
             returning ${COLUMNS}`,
          [
            change.incident_notice_hours ?? null,
            change.health_retention_days !== undefined,
            change.health_retention_days ?? null,
          ],
        ),
      { oneStatement: true },
    );
    if (!settings) throw notFound("tenant");
    return ok(c, settings);
  });
