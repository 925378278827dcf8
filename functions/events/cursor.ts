import { invalidField } from "../errors.ts";

/**
 * A position in the change feed: the writing transaction's id and the event's
 * id, `<xact_id>.<id>`, both unsigned decimal. Clients treat it as opaque.
 * Events come in (xact_id, id) order; a cursor of (xmin, 0) stands before
 * every event that can still commit.
 */
export interface Cursor {
  xactId: string;
  id: string;
}

export const START: Cursor = { xactId: "0", id: "0" };

const FORM = /^([0-9]{1,20})\.([0-9]{1,19})$/;
const MAX_XID = 2n ** 64n - 1n;
const MAX_ID = 2n ** 63n - 1n;

export const formatCursor = (cursor: Cursor): string => `${cursor.xactId}.${cursor.id}`;

/** A cursor a client sent back; anything else is a 400 naming `after`. */
export function parseCursor(value: string): Cursor {
  const match = FORM.exec(value);
  if (!match || BigInt(match[1] as string) > MAX_XID || BigInt(match[2] as string) > MAX_ID) {
    throw invalidField("after", "must be a cursor from a previous answer's meta.next, or now");
  }
  return { xactId: BigInt(match[1] as string).toString(), id: BigInt(match[2] as string).toString() };
}

/** Whether a cursor stands at or before a transaction id (both unsigned 64-bit decimals). */
export const atOrBefore = (cursor: Cursor, xactId: string): boolean => BigInt(cursor.xactId) <= BigInt(xactId);
