import type { Database } from "../functions/db/database.ts";
import { describeError, log } from "../functions/log.ts";
import { enforceReportingLimits } from "../functions/reporting/roles.ts";

/**
 * Runs the reporting guard every `intervalMs` (see enforceReportingLimits):
 * a reporting role may lift its own statement timeout, the guard still ends
 * what runs past the limit it was granted. A failed round (the database is
 * down, the role may not signal) is logged and the next one tries again.
 * Returns the function that stops it.
 */
export function startReportingGuard(db: Database, intervalMs: number): () => void {
  if (intervalMs <= 0) return () => {};
  let running = false;
  const timer = setInterval(async () => {
    if (running) return;
    running = true;
    try {
      for (const action of await enforceReportingLimits(db)) {
        log.warn("reporting guard ended a statement or session past its granted limit", {
          action: action.action,
          pid: action.pid,
          role: action.role_name,
        });
      }
    } catch (error) {
      log.warn("reporting guard could not run", describeError(error));
    } finally {
      running = false;
    }
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
