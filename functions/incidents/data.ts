import type { z } from "@hono/zod-openapi";
import { door } from "../care/data.ts";
import type { ListMeta } from "../db/list.ts";
import type { Sql } from "../db/sql.ts";
import type { Incident, IncidentChanges, IncidentCreate } from "./schemas.ts";

/**
 * Incidents through the database's doors (private.incident*,
 * *_incidents.sql), which check care access (403), show safeguarding
 * incidents to safeguarding leads only (404 to anyone else), record every
 * read in the audit trail, and only ever insert: an amendment is a new row.
 */

export type IncidentRecord = z.infer<typeof Incident>;

export interface IncidentListOptions {
  instance_id?: string;
  participant_id?: string;
  category?: string;
  severity?: string;
  status?: string;
  occurred_from?: string;
  occurred_to?: string;
  needs_attention?: boolean;
  limit: number;
  offset: number;
}

export async function listIncidents(sql: Sql, options: IncidentListOptions) {
  const { limit, offset, ...filters } = options;
  const found = await door<{ rows: IncidentRecord[]; total: number }>(sql, "select private.incidents($1, $2, $3) as value", [
    JSON.stringify(filters),
    limit,
    offset,
  ]);
  const meta: ListMeta = { total: found.total, limit, offset };
  return { rows: found.rows, meta };
}

export function getIncident(sql: Sql, id: string) {
  return door<IncidentRecord>(sql, "select private.incident($1) as value", [id]);
}

export function reportIncident(sql: Sql, input: z.infer<typeof IncidentCreate>) {
  return door<IncidentRecord>(sql, "select private.incident_create($1) as value", [JSON.stringify(input)]);
}

export function amendIncident(sql: Sql, id: string, changes: z.infer<typeof IncidentChanges>, reason: string) {
  return door<IncidentRecord>(sql, "select private.incident_amend($1, $2, $3) as value", [id, JSON.stringify(changes), reason]);
}
