import type { z } from "@hono/zod-openapi";
import { door } from "../care/data.ts";
import type { ListMeta } from "../db/list.ts";
import type { Sql } from "../db/sql.ts";
import type { Administration, AdministrationCreate } from "./schemas.ts";

/**
 * The medication administration record through the database's doors
 * (private.medication_administration*), which check care access (403), find
 * the participant (404), record reads in the audit trail, and only ever
 * insert: nothing here (or anywhere) can change or remove an entry.
 */

export type AdministrationRecord = z.infer<typeof Administration>;

export interface AdministrationListOptions {
  medication_id?: string;
  from?: string;
  to?: string;
  limit: number;
  offset: number;
}

export async function listAdministrations(sql: Sql, participantId: string, options: AdministrationListOptions) {
  const rows = await door<AdministrationRecord[]>(sql, "select private.medication_administrations($1, $2, $3, $4) as value", [
    participantId,
    options.medication_id ?? null,
    options.from ?? null,
    options.to ?? null,
  ]);
  const meta: ListMeta = { total: rows.length, limit: options.limit, offset: options.offset };
  return { rows: rows.slice(options.offset, options.offset + options.limit), meta };
}

export function getAdministration(sql: Sql, participantId: string, entryId: string) {
  return door<AdministrationRecord>(sql, "select private.medication_administration($1, $2) as value", [participantId, entryId]);
}

/** The entry and whether it was charted now (false: its nonce was seen before, the stored entry). */
export function chartAdministration(sql: Sql, participantId: string, input: z.infer<typeof AdministrationCreate>) {
  return door<{ record: AdministrationRecord; created: boolean }>(
    sql,
    "select private.medication_administration_create($1, $2) as value",
    [participantId, JSON.stringify(input)],
  );
}
