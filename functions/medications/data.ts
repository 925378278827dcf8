import type { z } from "@hono/zod-openapi";
import { byKeys, door, type Versioned, versions } from "../care/data.ts";
import type { ListMeta } from "../db/list.ts";
import type { Sql } from "../db/sql.ts";
import type { Precondition } from "../http/etag.ts";
import type { SortKey } from "../resources/listing.ts";
import { type Medication, type MedicationCreate, type MedicationUpdate, normaliseTimes } from "./schemas.ts";

/**
 * A participant's medications, through the database's doors
 * (private.medication*, sql/migrations/*_health_medications.sql), which
 * check care access (403), find the participant in the caller's tenant (404)
 * and record every read in the audit trail, in the request's transaction.
 */

export type MedicationRecord = z.infer<typeof Medication>;

export interface MedicationListOptions {
  include_deleted?: boolean;
  updated_since?: string;
  sort?: SortKey[];
  limit: number;
  offset: number;
}

/** One page; a participant has at most 100 medications, so the door returns them all and the page is cut here. */
export async function listMedications(sql: Sql, participantId: string, options: MedicationListOptions) {
  let rows = await door<MedicationRecord[]>(sql, "select private.medications($1, $2) as value", [
    participantId,
    options.include_deleted ?? false,
  ]);
  if (options.updated_since !== undefined) {
    const since = Date.parse(options.updated_since);
    rows = rows.filter((row) => Date.parse(row.updated_at) >= since);
  }
  if (options.sort?.length) rows = [...rows].sort(byKeys<MedicationRecord>(options.sort));
  const meta: ListMeta = { total: rows.length, limit: options.limit, offset: options.offset };
  return { rows: rows.slice(options.offset, options.offset + options.limit), meta };
}

export function getMedication(sql: Sql, participantId: string, medicationId: string) {
  return door<Versioned<MedicationRecord>>(sql, "select private.medication($1, $2) as value", [participantId, medicationId]);
}

export function createMedication(sql: Sql, participantId: string, input: z.infer<typeof MedicationCreate>) {
  return door<Versioned<MedicationRecord>>(sql, "select private.medication_create($1, $2) as value", [
    participantId,
    JSON.stringify(normaliseTimes(input)),
  ]);
}

export function updateMedication(
  sql: Sql,
  participantId: string,
  medicationId: string,
  input: z.infer<typeof MedicationUpdate>,
  precondition: Precondition,
) {
  return door<Versioned<MedicationRecord>>(sql, "select private.medication_update($1, $2, $3, $4) as value", [
    participantId,
    medicationId,
    JSON.stringify(normaliseTimes(input)),
    versions(precondition),
  ]);
}

export async function deleteMedication(sql: Sql, participantId: string, medicationId: string, precondition: Precondition) {
  await sql.query("select private.medication_delete($1, $2, $3)", [participantId, medicationId, versions(precondition)]);
}
