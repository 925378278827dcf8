/**
 * When a failed delivery is tried again: exponential backoff (15 s, 45 s,
 * 2 min 15 s, … ×3 each time, at most 12 h apart, ±10 % so that a receiver
 * that comes back is not met by every delivery at once), for 72 hours from the
 * cycle's first attempt; the last retry falls at the 72nd hour.
 */
export interface RetryPolicy {
  firstDelayMs: number;
  factor: number;
  maxDelayMs: number;
  /** How long after its first attempt a delivery is still retried. */
  windowMs: number;
  jitter: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  firstDelayMs: 15_000,
  factor: 3,
  maxDelayMs: 12 * 3_600_000,
  windowMs: 72 * 3_600_000,
  jitter: 0.1,
};

/** When to try again after the `tries`-th failed attempt of a cycle that began at `cycleStart`, or undefined: give up. */
export function retryAt(policy: RetryPolicy, tries: number, cycleStart: Date, now: Date, random = Math.random): Date | undefined {
  const end = cycleStart.getTime() + policy.windowMs;
  if (now.getTime() >= end) return undefined;
  const base = Math.min(policy.firstDelayMs * policy.factor ** Math.max(0, tries - 1), policy.maxDelayMs);
  const delay = base * (1 + policy.jitter * (2 * random() - 1));
  return new Date(Math.min(now.getTime() + delay, end));
}
