import { bytesToHex } from "@noble/hashes/utils.js";
import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../app-env.ts";
import { type IdempotencyLookup, lookupStatement } from "../db/idempotency-lookup.ts";
import type { ApiKeyRow } from "../db/key-check.ts";
import { isPgError } from "../db/pg-errors.ts";
import { leaseCall, type RateGrant, type RateState } from "../db/rate-lease.ts";
import type { TenantScope } from "../db/tenant-scope.ts";
import { forbidden, INVALID_API_KEY, unauthorized } from "../errors.ts";
import { handleError } from "../http/error-handler.ts";
import { idempotencyKeyOf } from "../http/idempotency.ts";
import { RATE_SPENT, type RateLimiter, rateHeaders, rateWeight, tooManyRequests } from "../http/rate-limit.ts";
import type { Principal } from "../principal.ts";
import { isUuid } from "../resources/fields.ts";
import { hashApiKey, looksLikeApiKey } from "./api-key-format.ts";
import type { TokenIdentity, TokenVerifier } from "./bearer-token.ts";

type TokenUserRow = Omit<ApiKeyRow, "key_id" | "scopes">;

/** What a read-only key may do: read, and rotate or revoke itself. */
const READ_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** The server's id of the request and the client's own, which the audit trail records. */
const requestIds = (c: Context<AppEnv>) => ({ requestId: c.get("requestId"), clientRequestId: c.get("clientRequestId") });
const OWN_KEY = /\/api-keys\/(regenerate|revoke)$/;

/**
 * What the attendance scope reaches (docs/api.md, "On site"): movements, roll
 * calls, an instance's presence and roster, and the event feed that keeps a
 * roster fresh. A key with `attendance` writes these whatever its other
 * scopes; a key with `attendance` and without `read` reaches nothing else
 * but who it is and its own key.
 */
const ON_SITE = /^\/api\/v1\/((attendance|roll-calls)(\/.*)?|instances\/[^/]+\/(presence|roster)\/?|events\/?)$/;
const ALWAYS = /^\/api\/v1\/(me|api-keys\/(my-key|regenerate|revoke))\/?$/;

/** Why the key's scopes do not reach this request, or undefined when they do. */
function scopeRefusal(principal: Principal, method: string, path: string): string | undefined {
  const { scopes } = principal;
  if (!scopes.includes("read") && !ON_SITE.test(path) && !ALWAYS.test(path)) {
    return "this API key has the attendance scope only: it reaches movements, roll calls, presence, rosters and the event feed";
  }
  if (scopes.includes("write") || READ_METHODS.has(method) || OWN_KEY.test(path)) return undefined;
  if (scopes.includes("attendance") && ON_SITE.test(path)) return undefined;
  return scopes.includes("attendance")
    ? "this API key may write movements and roll calls only (the attendance scope, without write)"
    : "this API key is read-only: it may only GET and HEAD";
}

/**
 * Resolves the caller from `X-API-Key` (preferred when both are sent) or
 * `Authorization: Bearer`. Nothing is cached: a revoked key is refused on the
 * very next request by every server process. Sets the caller (`principal`)
 * and its tenant scope (`tenant`), through which the routes reach the
 * database. An API-key lookup also opens the scope's first transaction when
 * it can (Database.authenticateApiKey); it is closed here if the route never
 * used it.
 */
export function authenticate(verifyToken: TokenVerifier, limiter: RateLimiter | undefined) {
  return createMiddleware<AppEnv>(async (c, next) => {
    const db = c.get("db");
    const apiKey = c.req.header("x-api-key");
    const authorization = c.req.header("authorization");
    const weight = await rateWeight(c);
    let tenant: TenantScope<Principal>;
    let rate: RateState | undefined;

    if (apiKey !== undefined) {
      if (!looksLikeApiKey(apiKey)) throw unauthorized("invalid API key");
      const hash = await hashApiKey(apiKey);
      const credential = `key:${bytesToHex(hash)}`;
      // Hits in hand, or a lease to ask for with the key lookup; a caller known to be spent is still checked first.
      const { local, release } = limiter ? await limiter.turn(credential, weight) : NO_LIMIT;
      try {
        // A POST's Idempotency-Key is looked up in the same round trip, in the scope the lookup opens.
        const idempotencyKey = idempotencyKeyOf(c);
        const openScope = local !== "spent" && (await bodyInHand(c));
        const toPrincipal = (row: ApiKeyRow): Principal => ({
          tenantId: row.tenant_id,
          userId: row.user_id,
          email: row.email,
          role: row.role,
          via: "api_key" as const,
          keyId: row.key_id,
          scopes: row.scopes,
          ...requestIds(c),
        });
        const leaseNeeded = limiter !== undefined && local === undefined;
        if (openScope && !leaseNeeded && READ_METHODS.has(c.req.method) && ONE_TRIP_READS.test(c.req.path)) {
          // A read whose route needs no caller before its query, with no lease to take: the key is
          // checked by the query's own round trip (one in all), and a read never needs write scope.
          return serve(c, next, db.deferApiKey(hash, toPrincipal, requestIds(c)), local, true);
        }
        const found = await refusedAs429(limiter, credential, () =>
          db.authenticateApiKey<Principal, IdempotencyLookup>(hash, toPrincipal, {
            openScope,
            charge: local === undefined ? limiter?.chargeFor(weight) : undefined,
            ids: requestIds(c),
            inScope: idempotencyKey === undefined ? undefined : (quote) => lookupStatement(quote(idempotencyKey)),
          }),
        );
        if (!found) throw unauthorized(INVALID_API_KEY);
        tenant = found.scope;
        if (found.inScope) c.set("idempotencyLookup", found.inScope);
        rate = settle(limiter, credential, local, tenant.principal.userId, found.lease, weight);
      } finally {
        release();
      }
    } else if (authorization !== undefined) {
      const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
      if (!match?.[1]) throw unauthorized("Authorization must be 'Bearer <token>'");
      const identity = await verifyToken(match[1]);
      if (!identity) throw unauthorized("invalid or expired token");
      const credential = `sub:${identity.subject}`;
      const { local, release } = limiter ? await limiter.turn(credential, weight) : NO_LIMIT;
      try {
        const charge = local === undefined ? limiter?.chargeFor(weight) : undefined;
        // The database decides (private.resolve_token_user): by subject, or the
        // first time by a verified e-mail that no other identity holds yet.
        // A lease for the user is taken in the same statement, committed at once.
        const lease = charge
          ? ` left join lateral ${leaseCall(charge, { subject: "'user:' || u.user_id::text" })} h on true`
          : "";
        const [user, ...others] = await refusedAs429(limiter, credential, () =>
          db.query<TokenUserRow & Partial<RateGrant>>(
            `select u.*${lease ? ", h.granted, h.remaining, h.window_ms" : ""} from private.resolve_token_user($1, $2, $3, $4) u${lease}`,
            [
              identity.subject,
              identity.email ?? null,
              identity.emailVerified,
              identity.tenantId && isUuid(identity.tenantId) ? identity.tenantId : null,
            ],
          ),
        );
        if (!user || others.length > 0) throw unauthorized(unknownUserMessage(identity));
        tenant = db.scopeFor<Principal>({
          tenantId: user.tenant_id,
          userId: user.user_id,
          email: user.email,
          role: user.role,
          via: "bearer",
          scopes: ["read", "write"],
          ...requestIds(c),
        });
        const grant = user.granted == null ? undefined : (user as RateGrant);
        rate = settle(limiter, credential, local, user.user_id, grant, weight);
      } finally {
        release();
      }
    } else {
      throw unauthorized("missing credential: send X-API-Key or Authorization: Bearer");
    }

    const principal = tenant.principal;
    c.set("principal", principal);
    if (rate && rate.remaining < 0) {
      await tenant.close();
      throw tooManyRequests(rate);
    }
    const refusal = scopeRefusal(principal, c.req.method, c.req.path);
    if (refusal) {
      await tenant.close();
      throw forbidden(refusal);
    }
    return serve(c, next, tenant, rate);
  });
}

/** No rate limit: nothing in hand, nothing to wait for. */
const NO_LIMIT = { local: undefined, release: () => {} };

/**
 * Why a verified token found no user, as far as the token itself tells: whether
 * some user has its e-mail is not said, so a token cannot probe for addresses.
 */
function unknownUserMessage(identity: TokenIdentity): string {
  const base = "token does not belong to a known user";
  if (identity.email !== undefined && !identity.emailVerified) {
    return `${base}: its subject finds no active user, and its e-mail finds one only when the token says email_verified: true (AUTH_ASSUME_EMAIL_VERIFIED=true accepts tokens without the claim)`;
  }
  return base;
}

/**
 * Reads whose route reads no caller before its one statement (the lists and
 * single records of participants, instances, groups, blocks and rooms): their
 * key check may travel with that statement (RequestDatabase.deferApiKey).
 */
const ONE_TRIP_READS =
  /^\/api\/v1\/(participants|instances|groups\/supergroups|groups\/subgroups|blocks|rooms)(\/[0-9A-Fa-f-]{36})?\/?$/;

/** The route, in the caller's tenant scope, closed when it is done; every answer says what is left of the rate limit. */
async function serve(
  c: Context<AppEnv>,
  next: () => Promise<void>,
  tenant: TenantScope<Principal>,
  rate: RateState | undefined,
  deferred = false,
) {
  c.set("tenant", tenant);
  try {
    await next();
  } finally {
    await tenant.close();
  }
  // A read whose key was checked with its query: its scopes are known now. Nothing was written;
  // an attendance-only key gets its 403 instead of the answer.
  if (deferred) {
    const refusal = scopeRefusal(tenant.principal, c.req.method, c.req.path);
    if (refusal) {
      c.res = undefined;
      c.res = handleError(forbidden(refusal), c);
      // Hono carries the replaced answer's headers over: none of the record's may stay.
      for (const name of ["ETag", "Cache-Control", "Content-Length"]) c.res.headers.delete(name);
    }
  }
  // A 429 carries the same fields itself.
  if (rate) for (const [name, value] of Object.entries(rateHeaders(rate))) c.res.headers.set(name, value);
}

/** The rate state of a request whose credential checked out: from the hits in hand, or the lease just granted. */
function settle(
  limiter: RateLimiter | undefined,
  credential: string,
  local: RateState | "spent" | undefined,
  userId: string,
  lease: RateGrant | undefined,
  weight: number,
): RateState | undefined {
  if (!limiter) return undefined;
  if (local === "spent") return limiter.spentState(credential);
  if (lease) return limiter.leased(credential, userId, lease, weight);
  return local;
}

/** A lease the database refused (CA429: the user's budget is spent) is a 429, remembered until the window ends. */
async function refusedAs429<T>(limiter: RateLimiter | undefined, credential: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (!limiter || !isPgError(error) || error.code !== RATE_SPENT) throw error;
    const subject = /^user:(.+)$/.exec(error.hint ?? "")?.[1];
    throw tooManyRequests(limiter.refused(credential, subject, Number(error.detail) || limiter.windowSeconds));
  }
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
