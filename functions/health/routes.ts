import { createRoute, z } from "@hono/zod-openapi";
import { serviceUnavailable } from "../errors.ts";
import { ok } from "../http/envelope.ts";
import { dataOf, json, newRouter } from "../http/openapi.ts";
import { operation } from "../http/operation.ts";
import type { PhotoStore, StoreHealth } from "../photos/store.ts";
import { VERSION } from "../version.ts";

const PING_TIMEOUT_MS = 2_000;
/** /health is public: the storage check is shared for a while, so polling it cannot flood the store. */
const STORAGE_CHECK_TTL_MS = 10_000;

const Health = z
  .object({
    status: z.literal("ok"),
    database: z.literal("ok"),
    storage: z.enum(["ok", "unavailable", "misconfigured"]).openapi({
      description:
        "Photo storage: `unavailable` when it does not answer (may pass), `misconfigured` when it refuses the service's key, URL or bucket (needs the operator). Photo requests answer 503 until it is `ok`; everything else works.",
    }),
    version: z.string(),
  })
  .openapi("Health");

const route = createRoute(
  operation({
    public: true,
    method: "get",
    path: "/health",
    summary: "Check liveness, the database and photo storage (no credential)",
    description:
      "200 while the database answers, whatever the state of photo storage (in the body); 503 when the database does not.",
    tags: ["health"],
    responses: { 200: json(dataOf(Health), "Service and database are up") },
  }),
);

function withTimeout<T>(work: Promise<T>, fallback: () => T): Promise<T> {
  return Promise.race([work, new Promise<T>((done) => setTimeout(() => done(fallback()), PING_TIMEOUT_MS))]);
}

export function healthRoutes(store: PhotoStore) {
  let storage: { state: Promise<StoreHealth>; at: number } | undefined;
  const storageState = () => {
    if (!storage || Date.now() - storage.at > STORAGE_CHECK_TTL_MS) {
      const state = withTimeout(store.health(), () => "unavailable" as const).catch(() => "unavailable" as const);
      storage = { state, at: Date.now() };
    }
    return storage.state;
  };

  return newRouter().openapi(route, async (c) => {
    const db = c.get("db");
    const database = withTimeout(
      db.query("select 1").then(() => true),
      () => false,
    ).catch(() => false);
    const [databaseUp, storageHealth] = await Promise.all([database, storageState()]);
    if (!databaseUp) throw serviceUnavailable("the database did not answer");
    return ok(c, { status: "ok" as const, database: "ok" as const, storage: storageHealth, version: VERSION });
  });
}
