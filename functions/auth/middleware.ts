import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../app-env.ts";
import type { ApiKeyRow, RateState, TenantScope } from "../db/database.ts";
import { type IdempotencyLookup, lookupStatement } from "../db/idempotency-lookup.ts";
import { forbidden, unauthorized } from "../errors.ts";
import { idempotencyKeyOf } from "../http/idempotency.ts";
import { rateCharge, rateHeaders, tooManyRequests } from "../http/rate-limit.ts";
import type { Principal } from "../principal.ts";
import { isUuid } from "../resources/fields.ts";
import { hashApiKey, looksLikeApiKey } from "./api-key-format.ts";
import type { TokenVerifier } from "./bearer-token.ts";

type TokenUserRow = Omit<ApiKeyRow, "key_id" | "scopes">;

/** What a read-only key may do: read, and rotate or revoke itself. */
const READ_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);
const OWN_KEY = /\/api-keys\/(regenerate|revoke)$/;

/**
 * Resolves the caller from `X-API-Key` (preferred when both are sent) or
 * `Authorization: Bearer`. Nothing is cached: a revoked key is refused on the
 * very next request by every server process. Sets the caller (`principal`)
 * and its tenant scope (`tenant`), through which the routes reach the
 * database. An API-key lookup also opens the scope's first transaction when
 * it can (Database.authenticateApiKey); it is closed here if the route never
 * used it.
 */
export function authenticate(verifyToken: TokenVerifier) {
  return createMiddleware<AppEnv>(async (c, next) => {
    const db = c.get("db");
    const apiKey = c.req.header("x-api-key");
    const authorization = c.req.header("authorization");
    const charge = rateCharge(c);
    let tenant: TenantScope<Principal>;
    let rate: RateState | undefined;

    if (apiKey !== undefined) {
      if (!looksLikeApiKey(apiKey)) throw unauthorized("invalid API key");
      const hash = await hashApiKey(apiKey);
      // A POST's Idempotency-Key is looked up in the same round trip, in the scope the lookup opens.
      const idempotencyKey = idempotencyKeyOf(c);
      const found = await db.authenticateApiKey<Principal, IdempotencyLookup>(
        hash,
        (row) => ({
          tenantId: row.tenant_id,
          userId: row.user_id,
          email: row.email,
          role: row.role,
          via: "api_key" as const,
          keyId: row.key_id,
          scopes: row.scopes,
          requestId: c.get("requestId"),
        }),
        {
          openScope: await bodyInHand(c),
          charge,
          requestId: c.get("requestId"),
          inScope: idempotencyKey === undefined ? undefined : (quote) => lookupStatement(quote(idempotencyKey)),
        },
      );
      if (!found) throw unauthorized("invalid, revoked or expired API key");
      ({ scope: tenant, rate } = found);
      if (found.inScope) c.set("idempotencyLookup", found.inScope);
    } else if (authorization !== undefined) {
      const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
      if (!match?.[1]) throw unauthorized("Authorization must be 'Bearer <token>'");
      const identity = await verifyToken(match[1]);
      if (!identity) throw unauthorized("invalid or expired token");
      // The database decides (private.resolve_token_user): by subject, or the
      // first time by a verified e-mail that no other identity holds yet.
      // A Bearer caller's requests count against its user (in the same statement, committed at once).
      const count = charge
        ? ` left join lateral private.rate_hit('user:' || u.user_id::text, ${charge.weight}, ${charge.limit}, ${charge.windowSeconds}) h on true`
        : "";
      const [user, ...others] = await db.query<
        TokenUserRow & { rate_limit?: number; remaining?: number; reset_seconds?: number }
      >(`select u.*${count ? ", h.*" : ""} from private.resolve_token_user($1, $2, $3, $4) u${count}`, [
        identity.subject,
        identity.email ?? null,
        identity.emailVerified,
        identity.tenantId && isUuid(identity.tenantId) ? identity.tenantId : null,
      ]);
      if (!user || others.length > 0) throw unauthorized("token does not belong to a known user");
      tenant = db.scopeFor<Principal>({
        tenantId: user.tenant_id,
        userId: user.user_id,
        email: user.email,
        role: user.role,
        via: "bearer",
        scopes: ["read", "write"],
        requestId: c.get("requestId"),
      });
      if (user.rate_limit != null)
        rate = { limit: user.rate_limit, remaining: user.remaining ?? 0, reset: user.reset_seconds ?? 1 };
    } else {
      throw unauthorized("missing credential: send X-API-Key or Authorization: Bearer");
    }

    const principal = tenant.principal;
    c.set("principal", principal);
    c.set("tenant", tenant);
    try {
      if (rate && rate.remaining < 0) throw tooManyRequests(rate);
      if (!principal.scopes.includes("write") && !READ_METHODS.has(c.req.method) && !OWN_KEY.test(c.req.path)) {
        throw forbidden("this API key is read-only: it may only GET and HEAD");
      }
      await next();
    } finally {
      await tenant.close();
    }
    // Every answer says what is left; a 429 carries the same fields itself.
    if (rate) for (const [name, value] of Object.entries(rateHeaders(rate))) c.res.headers.set(name, value);
  });
}

/**
 * Whether the request's body is in hand, so a transaction opened with the key
 * lookup is not held while a client sends it: no body, or a JSON body (at most
 * 1 MB, see body-policy.ts), which is read and parsed here. Hono keeps the
 * parse (or its failure) for the route's validator, which reports a malformed
 * body as before. Other bodies (photos, CSV) stream; they get no early scope.
 */
async function bodyInHand(c: Context<AppEnv>): Promise<boolean> {
  const length = c.req.header("content-length");
  if (length === undefined ? !c.req.header("transfer-encoding") : Number(length) === 0) return true;
  if (c.req.header("content-type")?.split(";")[0]?.trim().toLowerCase() !== "application/json") return false;
  await c.req.json().catch(() => undefined);
  return true;
}
