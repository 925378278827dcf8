import type { JWTPayload, JWTVerifyGetKey } from "jose";
import type { Config } from "../config.ts";
import { unauthorized } from "../errors.ts";

export interface TokenIdentity {
  subject: string;
  email?: string;
  /** Whether the e-mail may find a user: the token's `email_verified: true`, or AUTH_ASSUME_EMAIL_VERIFIED. */
  emailVerified: boolean;
  /** An optional tenant claim, used only to choose among users sharing an e-mail. */
  tenantId?: string;
}

export const BEARER_NOT_CONFIGURED =
  "Bearer tokens are not accepted by this server: it has neither AUTH_JWT_SECRET nor AUTH_JWKS_URL set. Send X-API-Key, or have the operator set one of them";

export type TokenVerifier = (token: string) => Promise<TokenIdentity | undefined>;

/**
 * Verifies Bearer JWTs against AUTH_JWT_SECRET (HS256) or AUTH_JWKS_URL
 * (RS256/ES256 and the other asymmetric algorithms a JWKS can hold). `exp` is
 * required; issuer and audience are checked when configured. Returns undefined
 * for any token that does not verify: the caller answers 401 without saying which
 * check failed. A server with neither setting refuses every token with a 401 that
 * says so, since no token could ever verify there.
 */
export function bearerVerifier(config: Config): TokenVerifier {
  const secret = config.AUTH_JWT_SECRET ? new TextEncoder().encode(config.AUTH_JWT_SECRET) : undefined;
  const jwksUrl = config.AUTH_JWKS_URL ? new URL(config.AUTH_JWKS_URL) : undefined;
  const options = {
    issuer: config.AUTH_JWT_ISSUER,
    audience: config.AUTH_JWT_AUDIENCE,
    requiredClaims: ["exp"],
  };
  // jose is loaded with the first Bearer token, not at start (API-key requests and
  // /health never need it); the key set is created once, so its cache of fetched keys lasts.
  let loading: Promise<{ jwtVerify: typeof import("jose").jwtVerify; jwks?: JWTVerifyGetKey }> | undefined;
  const load = () =>
    (loading ??= import("jose").then((jose) => ({
      jwtVerify: jose.jwtVerify,
      jwks: jwksUrl && jose.createRemoteJWKSet(jwksUrl),
    })));

  async function verify(token: string): Promise<JWTPayload | undefined> {
    const { jwtVerify, jwks } = await load();
    const attempts: Array<() => Promise<{ payload: JWTPayload }>> = [];
    if (secret) attempts.push(() => jwtVerify(token, secret, { ...options, algorithms: ["HS256"] }));
    if (jwks) {
      attempts.push(() =>
        jwtVerify(token, jwks, { ...options, algorithms: ["RS256", "RS384", "RS512", "ES256", "ES384", "PS256", "EdDSA"] }),
      );
    }
    for (const attempt of attempts) {
      try {
        return (await attempt()).payload;
      } catch {
        // Try the next key source; a token that none accepts is refused below.
      }
    }
    return undefined;
  }

  return async (token) => {
    if (!secret && !jwksUrl) throw unauthorized(BEARER_NOT_CONFIGURED);
    const payload = await verify(token);
    if (!payload || typeof payload.sub !== "string" || payload.sub === "") return undefined;
    const email = typeof payload.email === "string" ? payload.email : undefined;
    const tenantId = typeof payload.tenant_id === "string" ? payload.tenant_id : undefined;
    // Only the top-level claim counts: Supabase's user_metadata is written by the user.
    const emailVerified = payload.email_verified === true || config.AUTH_ASSUME_EMAIL_VERIFIED;
    return { subject: payload.sub, email, tenantId, emailVerified };
  };
}
