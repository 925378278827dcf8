import { createMiddleware } from "hono/factory";
import { administrationRoutes } from "./administrations/routes.ts";
import { apiKeyRoutes } from "./api-keys/routes.ts";
import type { AppEnv } from "./app-env.ts";
import { attendanceRoutes } from "./attendance/routes.ts";
import { auditRoutes } from "./audit/routes.ts";
import { bearerVerifier, type TokenVerifier } from "./auth/bearer-token.ts";
import { authenticate } from "./auth/middleware.ts";
import { blockRoutes } from "./blocks/routes.ts";
import { careRoutes } from "./care/routes.ts";
import type { Config } from "./config.ts";
import type { Database } from "./db/database.ts";
import { type GuideReader, mountDocs } from "./docs/routes.ts";
import { ApiError } from "./errors.ts";
import { eventRoutes } from "./events/routes.ts";
import { subgroupRoutes, supergroupRoutes } from "./groups/routes.ts";
import { healthRoutes } from "./health/routes.ts";
import { bodyPolicy } from "./http/body-policy.ts";
import { cors } from "./http/cors.ts";
import { handleError } from "./http/error-handler.ts";
import { isFunctionMount, mountedNotFound } from "./http/function-prefix.ts";
import { idempotency } from "./http/idempotency.ts";
import { newRouter, registerContract } from "./http/openapi.ts";
import { QueryRules } from "./http/query-rules.ts";
import { RateLimiter } from "./http/rate-limit.ts";
import { requestId } from "./http/request-id.ts";
import { RouteTable } from "./http/route-table.ts";
import { incidentRoutes } from "./incidents/routes.ts";
import { instanceRoutes } from "./instances/routes.ts";
import { meRoutes } from "./me/routes.ts";
import { medicationPassRoutes } from "./medications/pass.ts";
import { medicationRoutes } from "./medications/routes.ts";
import { eraseRoutes } from "./participants/erase.ts";
import { participantRoutes } from "./participants/routes.ts";
import { participantAssignRoutes } from "./participants-assign/routes.ts";
import { BULK_BODIES, participantBulkRoutes } from "./participants-bulk/routes.ts";
import { defaultPhotoStore } from "./photos/default-store.ts";
import { PHOTO_BODY, photoRoutes } from "./photos/routes.ts";
import type { PhotoStore } from "./photos/store.ts";
import { instancePresenceRoutes, rollCallRoutes } from "./roll-calls/routes.ts";
import { roomRoutes } from "./rooms/routes.ts";
import { tenantSettingsRoutes } from "./tenants/settings-routes.ts";
import { userRoutes } from "./users/routes.ts";
import { webhookEndpointRoutes } from "./webhook-endpoints/routes.ts";

export interface AppDeps {
  db: Database;
  config: Config;
  /** Defaults to verification against the configured secret / JWKS. */
  verifyToken?: TokenVerifier;
  /** Where photos are kept; defaults to Supabase Storage when its URL and key are configured. */
  photoStore?: PhotoStore;
  /** Asks this process's webhook worker, if it runs one, to look at the queue now (a ping). */
  deliverNow?: () => void;
  /** Aborted when the server begins to stop: requests that wait (the event feed's `wait`) answer at once. */
  shutdown?: AbortSignal;
  /** Reads the guides of docs/ that /docs links to, where the runtime has them (docs/routes.ts GUIDES). */
  readGuide?: GuideReader;
}

/**
 * The whole HTTP service, independent of the runtime: the Node server and the
 * Edge Function both serve `createApp(...).fetch`.
 * Order: request id → CORS → context → 404/405 and strict queries → body policy →
 * auth (under /api/v1) → idempotent retries (keyed POSTs) → route.
 */
export function createApp(deps: AppDeps) {
  const app = newRouter();
  const routeTable = new RouteTable(app as never);
  const queryRules = new QueryRules(app as never);
  const origins = deps.config.CORS_ORIGINS?.split(",")
    .map((o) => o.trim())
    .filter(Boolean);

  app.use("*", requestId());
  app.use(
    "*",
    cors({
      origins,
      allowHeaders: [
        "Content-Type",
        "Authorization",
        "X-API-Key",
        "X-Request-Id",
        "Idempotency-Key",
        "If-Match",
        "If-None-Match",
      ],
      allowMethods: ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
      // Every header a browser client may need to read.
      exposeHeaders: [
        "ETag",
        "Location",
        "X-Request-Id",
        "Retry-After",
        "RateLimit",
        "RateLimit-Policy",
        "Idempotent-Replayed",
        "WWW-Authenticate",
      ],
      maxAgeSeconds: 600,
    }),
  );
  app.use(
    "*",
    createMiddleware<AppEnv>(async (c, next) => {
      c.set("db", deps.db.forRequest());
      c.set("config", deps.config);
      // No answer is to be sniffed into another type: a CSV cell or a JSON string must never run as HTML.
      c.header("X-Content-Type-Options", "nosniff");
      try {
        routeTable.check(c.req.method, c.req.path);
      } catch (error) {
        // Under the Edge Function, a 404 says where the function is mounted and what would have matched.
        if (!(error instanceof ApiError && error.code === "NOT_FOUND" && isFunctionMount(c.env))) throw error;
        throw new ApiError(
          "NOT_FOUND",
          mountedNotFound(c.req.path, c.env, (path) => routeTable.knows(path)),
        );
      }
      queryRules.check(c.req.method, c.req.path, Object.keys(c.req.queries()));
      await next();
    }),
  );
  app.use("*", bodyPolicy([PHOTO_BODY, ...BULK_BODIES]));
  // Public documentation (openapi.json, /docs): mounted before authentication, whose chain it ends.
  mountDocs(app, deps.readGuide);
  // One limiter per app (a server process, an Edge isolate): it holds this process's leases of every user's budget.
  const limit = deps.config.RATE_LIMIT_PER_MINUTE;
  const limiter = limit === 0 ? undefined : new RateLimiter(limit);
  app.use("/api/v1/*", authenticate(deps.verifyToken ?? bearerVerifier(deps.config), limiter));
  app.use("/api/v1/*", idempotency());

  const photoStore = deps.photoStore ?? defaultPhotoStore(deps.config);
  app.route("/", healthRoutes(photoStore));
  app.route("/api/v1/me", meRoutes);
  app.route("/api/v1/api-keys", apiKeyRoutes);
  app.route("/api/v1/tenant", tenantSettingsRoutes);
  app.route("/api/v1/users", userRoutes);
  app.route("/api/v1/audit-events", auditRoutes);
  app.route("/api/v1/events", eventRoutes(deps.shutdown));
  app.route("/api/v1/webhook-endpoints", webhookEndpointRoutes(deps.deliverNow));
  app.route("/api/v1/attendance", attendanceRoutes);
  app.route("/api/v1/roll-calls", rollCallRoutes);
  app.route("/api/v1/instances", instancePresenceRoutes);
  app.route("/api/v1/instances", medicationPassRoutes);
  app.route("/api/v1/instances", instanceRoutes);
  app.route("/api/v1/groups/supergroups", supergroupRoutes);
  app.route("/api/v1/groups/subgroups", subgroupRoutes);
  app.route("/api/v1/blocks", blockRoutes);
  app.route("/api/v1/rooms", roomRoutes);
  // Before participantRoutes: its /{id} would otherwise answer /bulk, /export.csv, /import and /assign.
  app.route("/api/v1/participants", participantBulkRoutes);
  app.route("/api/v1/participants", participantAssignRoutes);
  app.route("/api/v1/participants", eraseRoutes(photoStore));
  app.route("/api/v1/participants", careRoutes(photoStore));
  app.route("/api/v1/participants", medicationRoutes());
  app.route("/api/v1/participants", administrationRoutes());
  app.route("/api/v1/participants", participantRoutes);
  app.route("/api/v1/photos", photoRoutes(photoStore));
  app.route("/api/v1/incidents", incidentRoutes());

  registerContract(app);

  app.notFound((c) => handleError(new Error("unreachable: the route table answers first"), c));
  app.onError(handleError);
  return app;
}

export type App = ReturnType<typeof createApp>;
