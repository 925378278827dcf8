import type { Config } from "./config.ts";
import type { IdempotencyLookup } from "./db/idempotency-lookup.ts";
import type { RequestDatabase } from "./db/request-database.ts";
import type { TenantScope } from "./db/tenant-scope.ts";
import type { Principal } from "./principal.ts";

/**
 * What the middleware puts on each request's context, for the routes to read
 * with `c.get(name)`: Hono's `c.var` copies every variable into a new object on
 * each read.
 */
export interface AppEnv {
  Variables: {
    /** The request's one way to Postgres: one pooled connection at a time (db/one-connection.ts). */
    db: RequestDatabase;
    config: Config;
    /** Set first, for every request (http/request-id.ts). */
    requestId: string;
    /** The client's own X-Request-Id, when it sent a safe one (http/request-id.ts). */
    clientRequestId?: string;
    /** Set by the auth middleware on every /api/v1 route. */
    principal: Principal;
    /** The caller's tenant scope: every route's way to the database (set and closed by the auth middleware). */
    tenant: TenantScope<Principal>;
    /** An Idempotency-Key's lock and stored answer, when the key lookup's round trip fetched them (http/idempotency.ts). */
    idempotencyLookup?: IdempotencyLookup;
    /** For a POST with an Idempotency-Key: what the route says of its answer, for storing it (http/replay-rules.ts). */
    answerRules?: AnswerRules;
  };
}

/** A right beyond write scope: an admin's role, or care access (write, since only POSTs are stored). */
export type Right = "admin" | "care";

/**
 * What the route has said about its answer so far, for a POST sent with an
 * Idempotency-Key (http/replay-rules.ts says it, http/idempotency.ts stores it).
 */
export interface AnswerRules {
  holdsSecret: boolean;
  rights: Set<Right>;
}
