import type { Context } from "hono";
import type { AppEnv } from "../app-env.ts";
import type { RateCharge, RateGrant, RateState } from "../db/rate-lease.ts";
import { ApiError } from "../errors.ts";

/** The SQLSTATE of a lease refused because the user's budget is spent (sql/migrations/*_rate_leases.sql). */
export const RATE_SPENT = "CA429";

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

/**
 * Operations whose work grows with the body's list: a hit per `per` items
 * of the list at `items`, at least one, at most `most` (the list's own
 * bound, beyond which the request is refused anyway). A full assign of
 * 1,000 costs what a bulk create does.
 */
const SIZED: Array<{ method: string; path: RegExp; items: string; per: number; most: number }> = [
  { method: "POST", path: /\/participants\/assign$/, items: "assignments", per: 100, most: 10 },
];

/**
 * The weight of this request: HEAD costs what GET does (it does the same
 * work). A sized operation's JSON body is read for it (the body policy has
 * already bounded it, and Hono keeps the parse for the route).
 */
export async function rateWeight(c: Context<AppEnv>): Promise<number> {
  const method = c.req.method === "HEAD" ? "GET" : c.req.method;
  const sized = SIZED.find((rule) => rule.method === method && rule.path.test(c.req.path));
  if (sized) {
    const body: unknown = await c.req.json().catch(() => undefined);
    const items = typeof body === "object" && body !== null ? (body as Record<string, unknown>)[sized.items] : undefined;
    const count = Array.isArray(items) ? items.length : 0;
    return Math.min(sized.most, Math.max(1, Math.ceil(count / sized.per)));
  }
  return HEAVY.find((rule) => rule.method === method && rule.path.test(c.req.path))?.weight ?? 1;
}

/**
 * Hits one lease takes beyond the request at hand: 100, or a hundredth of a
 * large limit (a busy user of a 100,000 limit writes the shared count once
 * per 1,000 requests, not per 100); never more than the limit.
 */
export const aheadFor = (limit: number) => Math.min(limit, Math.max(100, Math.floor(limit / 100)));
/** Callers whose leases and credentials a process remembers; the oldest are forgotten beyond this. */
const MOST_CALLERS = 10_000;

interface Lease {
  userId: string;
  /** Hits in hand, leased and not yet spent. */
  hits: number;
  /** What the shared count had left after the last lease. */
  shared: number;
  /** When the lease's window ends, on this process's clock (performance.now()). */
  ends: number;
  /** The shared count had nothing left for the last request: refused until the window ends. */
  spent: boolean;
}

/**
 * Rate limits per person (a user's keys and tokens share one budget), kept
 * in the database across every process and isolate but not written on every
 * request: each process leases hits from the user's shared count in batches
 * (private.rate_lease, sql/migrations/*_rate_leases.sql) and spends them
 * locally. Leases are taken only from what is left, so all processes together
 * never admit more than the limit in a window (no overshoot); a process may
 * hold a few leased hits unspent when another is refused (at most an eighth
 * of what was left when it leased, and never more than aheadFor(limit) + 1).
 *
 * One per app (a server process, an Edge isolate). Keyed by credential (an
 * API key's hash, a token's subject) to find the user before the database
 * answers; the database still checks the credential on every request.
 */
export class RateLimiter {
  readonly #leases = new Map<string, Lease>();
  /** The user each credential last belonged to. */
  readonly #users = new Map<string, string>();
  /** Credentials whose lease is being asked for, settled when its answer is in. */
  readonly #asking = new Map<string, Promise<void>>();

  constructor(
    readonly limit: number,
    readonly windowSeconds = WINDOW_SECONDS,
  ) {}

  /**
   * Takes `weight` hits from the lease in hand for this credential's user:
   * the state to answer with, "spent" when the user has none left until the
   * window ends, or undefined when a lease must be asked for (chargeFor).
   */
  take(credential: string, weight: number): RateState | "spent" | undefined {
    const userId = this.#users.get(credential);
    const lease = userId === undefined ? undefined : this.#leases.get(userId);
    const now = performance.now();
    if (!lease || now >= lease.ends) return undefined;
    // Hits in hand are spent first, even once the shared count has nothing left: they were leased for this.
    if (lease.hits >= weight) {
      lease.hits -= weight;
      return this.#state(lease, now);
    }
    return lease.spent ? "spent" : undefined;
  }

  /**
   * Hits in hand, or the right to ask the database for a lease: one request
   * per credential asks at a time, the others of a concurrent burst wait for
   * its answer and spend what it leased. (When every request of a burst asked
   * at once, the leases they took beyond their own hit landed in hand after
   * most of them had been refused: 140 requests at once against a limit of 30
   * got 10 answers.) `release` must be called once the lease is settled
   * (leased, refused, or the request failed).
   */
  async turn(credential: string, weight: number): Promise<{ local: RateState | "spent" | undefined; release: () => void }> {
    for (;;) {
      const local = this.take(credential, weight);
      if (local !== undefined) return { local, release: () => {} };
      const asking = this.#asking.get(credential);
      if (!asking) break;
      await asking;
    }
    let release = () => {};
    const asking = new Promise<void>((done) => {
      release = () => {
        if (this.#asking.get(credential) === asking) this.#asking.delete(credential);
        done();
      };
    });
    this.#asking.set(credential, asking);
    return { local: undefined, release };
  }

  /** What to ask the database for: this request's weight and a batch ahead. */
  chargeFor(weight: number): RateCharge {
    return { weight, want: weight + aheadFor(this.limit), limit: this.limit, windowSeconds: this.windowSeconds };
  }

  /** What the database leased to this credential's user; the request's own weight is spent from it. */
  leased(credential: string, userId: string, granted: RateGrant, weight: number): RateState {
    this.#remember(credential, userId);
    const now = performance.now();
    const lease = this.#leases.get(userId);
    const ends = now + granted.window_ms;
    // Hits left from an earlier lease of the same window stay in hand.
    const carried = lease && now < lease.ends ? lease.hits : 0;
    const next: Lease = { userId, hits: carried + granted.granted - weight, shared: granted.remaining, ends, spent: false };
    this.#leases.delete(userId);
    this.#leases.set(userId, next);
    this.#forgetOldest(this.#leases);
    return this.#state(next, now);
  }

  /** The database refused a lease: nothing left for this user until the window ends, in `resetSeconds`. */
  refused(credential: string, userId: string | undefined, resetSeconds: number): RateState {
    const user = userId ?? this.#users.get(credential);
    if (user !== undefined) {
      this.#remember(credential, user);
      const now = performance.now();
      const lease = this.#leases.get(user);
      // Hits still in hand (fewer than a heavy request weighs) stay there for lighter requests.
      const hits = lease && now < lease.ends ? lease.hits : 0;
      this.#leases.set(user, { userId: user, hits, shared: 0, ends: now + resetSeconds * 1000, spent: true });
      this.#forgetOldest(this.#leases);
    }
    return { limit: this.limit, remaining: -1, reset: resetSeconds };
  }

  /** The state of a user known to be spent (take gave "spent"). */
  spentState(credential: string): RateState {
    const lease = this.#leases.get(this.#users.get(credential) ?? "");
    const reset = lease ? Math.max(1, Math.ceil((lease.ends - performance.now()) / 1000)) : this.windowSeconds;
    return { limit: this.limit, remaining: -1, reset };
  }

  #state(lease: Lease, now: number): RateState {
    return { limit: this.limit, remaining: lease.shared + lease.hits, reset: Math.max(1, Math.ceil((lease.ends - now) / 1000)) };
  }

  #remember(credential: string, userId: string) {
    if (this.#users.get(credential) === userId) return;
    this.#users.delete(credential);
    this.#users.set(credential, userId);
    this.#forgetOldest(this.#users);
  }

  #forgetOldest(map: Map<string, unknown>) {
    if (map.size <= MOST_CALLERS) return;
    const oldest = map.keys().next().value;
    if (oldest !== undefined) map.delete(oldest);
  }
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
    undefined,
    { ...rateHeaders(state), "Retry-After": String(state.reset) },
  );
}
