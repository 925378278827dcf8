import type { Database } from "../db/database.ts";

/**
 * The incidents sweep: one incident.needs_attention event per open incident
 * whose guardians were not recorded as notified within the tenant's deadline
 * (a serious one is raised when reported), raised once whoever sweeps
 * (private.raise_incident_alerts, *_incidents.sql). Run beside the overdue
 * doses' sweep by every webhook worker and by `camp health sweep`.
 */
export async function raiseIncidentAlerts(db: Database, now?: Date): Promise<number> {
  const [row] = await db.query<{ raised: number }>(
    now ? "select private.raise_incident_alerts($1) as raised" : "select private.raise_incident_alerts() as raised",
    now ? [now.toISOString()] : [],
  );
  return Number(row?.raised ?? 0);
}
