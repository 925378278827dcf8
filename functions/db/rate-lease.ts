import { hex } from "./statements.ts";

/**
 * The database side of rate-limit leases (private.rate_lease; the policy is
 * http/rate-limit.ts): what to ask for, and what a lease statement's row
 * says was granted. The lease travels in the key lookup's round trip.
 */

/** A rate-limit lease to ask for: `weight` hits for the request, up to `want` in all, of `limit` per `windowSeconds`. */
export interface RateCharge {
  weight: number;
  want: number;
  limit: number;
  windowSeconds: number;
}

/** What private.rate_lease granted: hits, what the shared count has left, milliseconds until the window ends. */
export interface RateGrant {
  granted: number;
  remaining: number;
  window_ms: number;
}

/** What is left of the caller's rate limit after this request. */
export interface RateState {
  limit: number;
  remaining: number;
  /** Seconds until the window ends. */
  reset: number;
}

/** A lease's columns as a row of the key lookup carries them (null when no lease was asked). */
export type GrantRow = { [K in keyof RateGrant]: RateGrant[K] | null };

export const grantOf = (row: GrantRow | undefined): RateGrant | undefined =>
  row?.granted == null ? undefined : { granted: row.granted, remaining: row.remaining ?? 0, window_ms: row.window_ms ?? 1 };

/** A lease statement's call, for the user `subject` (SQL) or the key with this hash. */
export const leaseCall = (charge: RateCharge, of: { subject: string } | { keyHash: Uint8Array }) =>
  "subject" in of
    ? `private.rate_lease(${of.subject}, ${charge.weight}, ${charge.want}, ${charge.limit}, ${charge.windowSeconds})`
    : `private.rate_lease_key('\\x${hex(of.keyHash)}'::bytea, ${charge.weight}, ${charge.want}, ${charge.limit}, ${charge.windowSeconds})`;
