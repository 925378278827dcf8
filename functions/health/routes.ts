import { createRoute, z } from "@hono/zod-openapi";
import { ok } from "../http/envelope.ts";
import { serviceUnavailable } from "../http/errors.ts";
import { dataOf, errors, json, newRouter } from "../http/openapi.ts";
import { VERSION } from "../version.ts";

const PING_TIMEOUT_MS = 2_000;

const Health = z.object({ status: z.literal("ok"), database: z.literal("ok"), version: z.string() }).openapi("Health");

const route = createRoute({
  method: "get",
  path: "/health",
  summary: "Liveness and database check (no credential)",
  tags: ["health"],
  responses: { 200: json(dataOf(Health), "Service and database are up"), ...errors(503) },
});

export const healthRoutes = newRouter().openapi(route, async (c) => {
  const timeout = new Promise<never>((_, reject) =>
    setTimeout(() => reject(serviceUnavailable("the database did not answer")), PING_TIMEOUT_MS),
  );
  try {
    await Promise.race([c.var.db.query("select 1"), timeout]);
  } catch {
    throw serviceUnavailable("the database did not answer");
  }
  return ok(c, { status: "ok" as const, database: "ok" as const, version: VERSION });
});
