import { createRemoteJWKSet, type JWTPayload, type JWTVerifyGetKey, jwtVerify } from "jose";
import type { Config } from "../config.ts";

export interface TokenIdentity {
  subject: string;
  email?: string;
  /** An optional tenant claim, used only to choose among users sharing an e-mail. */
  tenantId?: string;
}

export type TokenVerifier = (token: string) => Promise<TokenIdentity | undefined>;

/**
 * Verifies Bearer JWTs against AUTH_JWT_SECRET (HS256) or AUTH_JWKS_URL
 * (RS256/ES256 and the other asymmetric algorithms a JWKS can hold). `exp` is
 * required; issuer and audience are checked when configured. Returns undefined
 * for any token that does not verify: the caller answers 401 without saying why.
 */
export function bearerVerifier(config: Config): TokenVerifier {
  const keys: { secret?: Uint8Array; jwks?: JWTVerifyGetKey } = {};
  if (config.AUTH_JWT_SECRET) keys.secret = new TextEncoder().encode(config.AUTH_JWT_SECRET);
  if (config.AUTH_JWKS_URL) keys.jwks = createRemoteJWKSet(new URL(config.AUTH_JWKS_URL));
  const options = {
    issuer: config.AUTH_JWT_ISSUER,
    audience: config.AUTH_JWT_AUDIENCE,
    requiredClaims: ["exp"],
  };

  async function verify(token: string): Promise<JWTPayload | undefined> {
    const attempts: Array<() => Promise<{ payload: JWTPayload }>> = [];
    if (keys.secret) {
      const secret = keys.secret;
      attempts.push(() => jwtVerify(token, secret, { ...options, algorithms: ["HS256"] }));
    }
    if (keys.jwks) {
      const jwks = keys.jwks;
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
    const payload = await verify(token);
    if (!payload || typeof payload.sub !== "string" || payload.sub === "") return undefined;
    const email = typeof payload.email === "string" ? payload.email : undefined;
    const tenantId = typeof payload.tenant_id === "string" ? payload.tenant_id : undefined;
    return { subject: payload.sub, email, tenantId };
  };
}
