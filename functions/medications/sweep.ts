import type { Database } from "../db/database.ts";

/**
 * The overdue sweep: one medication.overdue event per scheduled dose left
 * uncharted past its grace period, raised once whoever sweeps
 * (private.raise_overdue_doses, *_medication_pass.sql). Run by every webhook
 * worker about once a minute and by `camp health sweep`.
 */
export async function raiseOverdueDoses(db: Database, now?: Date): Promise<number> {
  const [row] = await db.query<{ raised: number }>(
    now ? "select private.raise_overdue_doses($1) as raised" : "select private.raise_overdue_doses() as raised",
    now ? [now.toISOString()] : [],
  );
  return Number(row?.raised ?? 0);
}

/** How often a worker sweeps: an overdue dose is raised within about a minute of its grace period ending. */
export const OVERDUE_SWEEP_MS = 60_000;

/**
 * The retention sweep: deletes the health records of erased participants
 * kept past their tenant's retention period
 * (private.sweep_retained_health_records, *_health_retention.sql). Run by the
 * webhook workers' hourly housekeeping and by `camp health sweep`.
 */
export async function sweepRetainedHealthRecords(db: Database, now?: Date): Promise<number> {
  const [row] = await db.query<{ deleted: number }>(
    now
      ? "select private.sweep_retained_health_records($1) as deleted"
      : "select private.sweep_retained_health_records() as deleted",
    now ? [now.toISOString()] : [],
  );
  return Number(row?.deleted ?? 0);
}
