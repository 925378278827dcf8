import type { Context } from "hono";
import type { AppEnv } from "../app-env.ts";
import type { RateCharge, RateState } from "../db/database.ts";
import { ApiError } from "../errors.ts";

/** The window of every rate limit: requests are counted per caller per minute. */
const WINDOW_SECONDS = 60;

/**
 * What a request costs: one hit, and more for the operations that do the
 * work of many requests in one (a bulk create of up to 1,000 rows, a CSV
 * import, a whole-instance CSV export).
 */
const HEAVY: Array<{ method: string; path: RegExp; weight: number }> = [
  { method: "POST", path: /\/participants\/bulk$/, weight: 10 },
  { method: "POST", path: /\/participants\/import$/, weight: 10 },
  { method: "GET", path: /\/participants\/export\.csv$/, weight: 10 },
];

/** The charge of this request against RATE_LIMIT_PER_MINUTE, or none when limits are off (0). */
export function rateCharge(c: Context<AppEnv>): RateCharge | undefined {
  const limit = c.get("config").RATE_LIMIT_PER_MINUTE;
  if (limit === 0) return undefined;
  const heavy = HEAVY.find((rule) => rule.method === c.req.method && rule.path.test(c.req.path));
  return { weight: heavy?.weight ?? 1, limit, windowSeconds: WINDOW_SECONDS };
}

/**
 * The IETF RateLimit fields (draft-ietf-httpapi-ratelimit-headers): the
 * policy (`q` hits per `w` seconds) and what is left of it (`r` hits, for
 * `t` more seconds).
 */
export function rateHeaders(state: RateState): Record<string, string> {
  return {
    "RateLimit-Policy": `"default";q=${state.limit};w=${WINDOW_SECONDS}`,
    RateLimit: `"default";r=${Math.max(0, state.remaining)};t=${state.reset}`,
  };
}

/** Over the limit: 429 with Retry-After and the RateLimit fields. */
export function tooManyRequests(state: RateState): ApiError {
  return new ApiError(
    "TOO_MANY_REQUESTS",
    `rate limit of ${state.limit} requests a minute spent; retry in ${state.reset} s`,
    { limit: state.limit, retry_after_seconds: state.reset },
    { ...rateHeaders(state), "Retry-After": String(state.reset) },
  );
}
