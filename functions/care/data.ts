import type { z } from "@hono/zod-openapi";
import type { ListMeta } from "../db/list.ts";
import type { Sql } from "../db/sql.ts";
import type { Precondition } from "../http/etag.ts";
import type { SortKey } from "../resources/listing.ts";
import type { CareRecord, CareRecordPatch, Consents, ConsentsPut, Contact, ContactCreate, ContactUpdate } from "./schemas.ts";

/**
 * Care data access. The API role holds no privilege on the care tables: each
 * function here calls one of the database's doors (private.care_*, see
 * sql/migrations/*_care_records.sql), which decides from the request's claims
 * whether the caller may (403 otherwise), finds the participant in the
 * caller's tenant (404), and writes every read into the audit trail, in the
 * request's transaction.
 */

export type ContactRecord = z.infer<typeof Contact>;
export type CareRecordData = z.infer<typeof CareRecord>;
export type ConsentsData = z.infer<typeof Consents>;

/** A record and its row version (for its ETag; null when there is no record yet). */
export interface Versioned<T> {
  record: T;
  version: string | null;
}

/** The one value a door's statement returns (a door answers or raises; it never returns no row). */
export async function door<T>(sql: Sql, text: string, values: unknown[]): Promise<T> {
  const row = await sql.one<{ value: T }>(text, values);
  if (!row) throw new Error("a care door returned no row");
  return row.value;
}

/** An If-Match as the doors take it: null (no condition), '*' (any existing record) or row versions. */
export const versions = (precondition: Precondition) =>
  precondition === undefined ? null : precondition === "*" ? ["*"] : precondition;

export interface ContactListOptions {
  include_deleted?: boolean;
  updated_since?: string;
  sort?: SortKey[];
  limit: number;
  offset: number;
}

/**
 * One page of a participant's contacts. A participant has at most 100
 * (the database refuses more), so the door returns them all in their stable
 * order and the page is cut here.
 */
export async function listContacts(sql: Sql, participantId: string, options: ContactListOptions) {
  let contacts = await door<ContactRecord[]>(sql, "select private.care_contacts($1, $2) as value", [
    participantId,
    options.include_deleted ?? false,
  ]);
  if (options.updated_since !== undefined) {
    const since = Date.parse(options.updated_since);
    contacts = contacts.filter((contact) => Date.parse(contact.updated_at) >= since);
  }
  if (options.sort?.length) contacts = [...contacts].sort(byKeys<ContactRecord>(options.sort));
  const meta: ListMeta = { total: contacts.length, limit: options.limit, offset: options.offset };
  return { rows: contacts.slice(options.offset, options.offset + options.limit), meta };
}

/**
 * Postgres's order for the sort keys, then id in the direction of the last
 * key: ascending puts an unset value last, descending first. Timestamps are
 * ISO 8601 in UTC with milliseconds, so they compare as text.
 */
export function byKeys<R extends object>(keys: SortKey[]) {
  const last = keys[keys.length - 1] as SortKey;
  const all = keys.some((key) => key.column === "id") ? keys : [...keys, { column: "id", descending: last.descending }];
  return (a: R, b: R) => {
    for (const { column, descending } of all) {
      const x = a[column as keyof R] as string | number | null;
      const y = b[column as keyof R] as string | number | null;
      if (x === y) continue;
      const order = x === null ? 1 : y === null ? -1 : x < y ? -1 : 1;
      return descending ? -order : order;
    }
    return 0;
  };
}

export function getContact(sql: Sql, participantId: string, contactId: string) {
  return door<Versioned<ContactRecord>>(sql, "select private.care_contact($1, $2) as value", [participantId, contactId]);
}

export function createContact(sql: Sql, participantId: string, input: z.infer<typeof ContactCreate>) {
  return door<Versioned<ContactRecord>>(sql, "select private.care_contact_create($1, $2) as value", [
    participantId,
    JSON.stringify(input),
  ]);
}

export function updateContact(
  sql: Sql,
  participantId: string,
  contactId: string,
  input: z.infer<typeof ContactUpdate>,
  precondition: Precondition,
) {
  return door<Versioned<ContactRecord>>(sql, "select private.care_contact_update($1, $2, $3, $4) as value", [
    participantId,
    contactId,
    JSON.stringify(input),
    versions(precondition),
  ]);
}

export async function deleteContact(sql: Sql, participantId: string, contactId: string, precondition: Precondition) {
  await sql.query("select private.care_contact_delete($1, $2, $3)", [participantId, contactId, versions(precondition)]);
}

export function getCareRecord(sql: Sql, participantId: string) {
  return door<Versioned<CareRecordData>>(sql, "select private.care_record($1) as value", [participantId]);
}

/** PUT (`replace`: fields left out are emptied) or PATCH (only the fields sent). */
export function writeCareRecord(
  sql: Sql,
  participantId: string,
  input: z.infer<typeof CareRecordPatch>,
  replace: boolean,
  precondition: Precondition,
) {
  return door<Versioned<CareRecordData>>(sql, "select private.care_record_write($1, $2, $3, $4) as value", [
    participantId,
    JSON.stringify(input),
    replace,
    versions(precondition),
  ]);
}

export function getConsents(sql: Sql, participantId: string) {
  return door<ConsentsData>(sql, "select private.care_consents($1) as value", [participantId]);
}

/** Records the answers; also the object key of a photo a refusal removed, to delete after commit. */
export async function recordConsents(sql: Sql, participantId: string, input: z.infer<typeof ConsentsPut>) {
  const recorded = await door<ConsentsData & { removed_photo_key: string | null }>(
    sql,
    "select private.care_consents_record($1, $2) as value",
    [participantId, JSON.stringify(input)],
  );
  const { removed_photo_key: removedPhotoKey, ...consents } = recorded;
  return { consents, removedPhotoKey };
}
