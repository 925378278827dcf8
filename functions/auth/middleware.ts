import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../app-env.ts";
import { unauthorized } from "../http/errors.ts";
import { hashApiKey, looksLikeApiKey } from "./api-key-format.ts";
import type { TokenVerifier } from "./bearer-token.ts";
import type { Principal } from "./principal.ts";

interface KeyRow {
  key_id: string;
  tenant_id: string;
  user_id: string;
  email: string;
  role: Principal["role"];
}

type TokenUserRow = Omit<KeyRow, "key_id">;

/**
 * Resolves the caller from `X-API-Key` (preferred when both are sent) or
 * `Authorization: Bearer`. Nothing is cached: a revoked key is refused on the
 * very next request by every server process.
 */
export function authenticate(verifyToken: TokenVerifier) {
  return createMiddleware<AppEnv>(async (c, next) => {
    const db = c.var.db;
    const apiKey = c.req.header("x-api-key");
    const authorization = c.req.header("authorization");
    let principal: Principal | undefined;

    if (apiKey !== undefined) {
      if (!looksLikeApiKey(apiKey)) throw unauthorized("invalid API key");
      const [row] = await db.query<KeyRow>("select * from private.authenticate_api_key($1)", [await hashApiKey(apiKey)]);
      if (!row) throw unauthorized("invalid, revoked or expired API key");
      principal = {
        tenantId: row.tenant_id,
        userId: row.user_id,
        email: row.email,
        role: row.role,
        via: "api_key",
        keyId: row.key_id,
      };
    } else if (authorization !== undefined) {
      const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
      if (!match?.[1]) throw unauthorized("Authorization must be 'Bearer <token>'");
      const identity = await verifyToken(match[1]);
      if (!identity) throw unauthorized("invalid or expired token");
      const rows = await db.query<TokenUserRow>("select * from private.find_token_user($1, $2)", [
        identity.subject,
        identity.email ?? null,
      ]);
      // One e-mail may belong to users of several tenants; a tenant_id claim
      // can pick one, otherwise the token cannot be mapped without guessing.
      const candidates = identity.tenantId ? rows.filter((r) => r.tenant_id === identity.tenantId) : rows;
      if (candidates.length !== 1 || !candidates[0]) throw unauthorized("token does not belong to a known user");
      const user = candidates[0];
      principal = { tenantId: user.tenant_id, userId: user.user_id, email: user.email, role: user.role, via: "bearer" };
    } else {
      throw unauthorized("missing credential: send X-API-Key or Authorization: Bearer");
    }

    c.set("principal", principal);
    await next();
  });
}
