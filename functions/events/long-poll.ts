/**
 * How `wait` holds a feed request: no database connection while it waits
 * (each look is a short transaction of its own), a look every POLL_MS, and at
 * most MAX_WAITING_PER_USER waiting requests per user in this process; a
 * request over that answers at once, as if it had not asked to wait, so a
 * key cannot pile up waiting requests.
 */
export const POLL_MS = 1_000;
export const MAX_WAIT_SECONDS = 30;
const MAX_WAITING_PER_USER = 4;

export class Waiting {
  readonly #byUser = new Map<string, number>();

  /** A slot for this user's wait, or undefined when they hold all of theirs. */
  enter(userId: string): (() => void) | undefined {
    const held = this.#byUser.get(userId) ?? 0;
    if (held >= MAX_WAITING_PER_USER) return undefined;
    this.#byUser.set(userId, held + 1);
    let left = false;
    return () => {
      if (left) return;
      left = true;
      const now = (this.#byUser.get(userId) ?? 1) - 1;
      if (now === 0) this.#byUser.delete(userId);
      else this.#byUser.set(userId, now);
    };
  }
}

/** Resolves after `ms`, or at once when a signal aborts. */
export function pause(ms: number, signals: Array<AbortSignal | undefined>): Promise<void> {
  return new Promise((done) => {
    const live = signals.filter((s): s is AbortSignal => s !== undefined);
    if (live.some((s) => s.aborted)) return done();
    const finish = () => {
      clearTimeout(timer);
      for (const s of live) s.removeEventListener("abort", finish);
      done();
    };
    const timer = setTimeout(finish, ms);
    for (const s of live) s.addEventListener("abort", finish, { once: true });
  });
}
