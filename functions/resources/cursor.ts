import { badRequest } from "../errors.ts";
import type { SortKey } from "./listing.ts";

/**
 * Keyset pages: `after=<cursor>` continues a list after the row a cursor
 * names, by a condition on the list's order, so page 2,000 costs what page
 * 1 costs (an offset reads and drops every row before it). A cursor is the
 * last row's sort values and id (as Postgres writes them as text) and the
 * sort it was made for, base64url-encoded JSON: opaque to clients, never
 * trusted. Its values reach SQL only as parameters, typed by the column
 * they are compared with.
 */

/** What a cursor holds: the sort it belongs to and the row's key values, id last. */
interface CursorBody {
  sort: string;
  key: Array<string | null>;
}

/** The sort keys as the cursor records them (`surname,-created_at`, id implied last). */
const sortSignature = (keys: SortKey[]) => keys.map((key) => `${key.descending ? "-" : ""}${key.column}`).join(",");

const encode = (body: CursorBody): string => {
  const bytes = new TextEncoder().encode(JSON.stringify(body));
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
};

const invalid = () =>
  badRequest("after: is not a cursor this list gave", { field: "after", issue: "is not a cursor this list gave" });

function decode(cursor: string): CursorBody {
  let body: unknown;
  try {
    const binary = atob(cursor.replace(/-/g, "+").replace(/_/g, "/"));
    body = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(Uint8Array.from(binary, (c) => c.charCodeAt(0))));
  } catch {
    throw invalid();
  }
  const shaped = body as Partial<CursorBody> | null;
  if (
    typeof shaped !== "object" ||
    shaped === null ||
    typeof shaped.sort !== "string" ||
    !Array.isArray(shaped.key) ||
    !shaped.key.every((value) => value === null || (typeof value === "string" && !value.includes("\u0000")))
  ) {
    throw invalid();
  }
  return shaped as CursorBody;
}

/** A list's order: its keys, each a column or an expression over the row, and whether it can be null. */
export interface OrderColumn {
  key: SortKey;
  /** The SQL of the key in a WHERE over the row (a column, or a computed field's expression). */
  sql: string;
  nullable: boolean;
}

/**
 * The condition "after the row the cursor names" in `columns`' order, with
 * its parameters numbered from `next`. With every key non-null and in one
 * direction, a row comparison, which an index on the keys serves as a range;
 * otherwise its expansion, key by key, with Postgres's default null order
 * (last ascending, first descending).
 */
export function afterCondition(
  cursor: string,
  columns: OrderColumn[],
  next: number,
  offset: number,
): { condition: string; params: Array<string | null> } {
  if (offset > 0) {
    throw badRequest("offset: cannot be combined with after; a cursor already says where the page starts", {
      field: "offset",
      issue: "cannot be combined with after",
    });
  }
  const body = decode(cursor);
  if (body.sort !== sortSignature(columns.map((c) => c.key)) || body.key.length !== columns.length) {
    throw badRequest("after: was made for another sort; start again without it", {
      field: "after",
      issue: "was made for another sort",
    });
  }
  const values = body.key;
  const descending = columns[0]?.key.descending ?? false;
  if (columns.every((c, i) => !c.nullable && values[i] !== null && c.key.descending === descending)) {
    const placeholders = values.map((_, i) => `$${next + i}`);
    return {
      condition: `(${columns.map((c) => c.sql).join(", ")}) ${descending ? "<" : ">"} (${placeholders.join(", ")})`,
      params: values,
    };
  }
  const params: Array<string | null> = [];
  const placeholder = (value: string | null) => {
    params.push(value);
    return `$${next + params.length - 1}`;
  };
  const equal = (c: OrderColumn, value: string | null) =>
    value === null ? `${c.sql} is null` : `${c.sql} = ${placeholder(value)}`;
  const beyond = (c: OrderColumn, value: string | null) => {
    if (value === null) return c.key.descending ? `${c.sql} is not null` : "false";
    const compared = `${c.sql} ${c.key.descending ? "<" : ">"} ${placeholder(value)}`;
    return c.nullable && !c.key.descending ? `(${compared} or ${c.sql} is null)` : compared;
  };
  const alternatives = columns.map((c, i) =>
    [...columns.slice(0, i).map((earlier, j) => equal(earlier, values[j] ?? null)), beyond(c, values[i] ?? null)].join(" and "),
  );
  return { condition: `(${alternatives.map((a) => `(${a})`).join(" or ")})`, params };
}

/** SQL for a row's cursor values, as a JSON array of texts (id last), for `cursorOf`. */
export const cursorValues = (columns: OrderColumn[]) =>
  `json_build_array(${columns.map((c) => `(${c.sql})::text`).join(", ")})::text`;

/** The cursor of a row whose values `cursorValues` wrote. */
export function cursorOf(columns: OrderColumn[], values: string): string {
  return encode({ sort: sortSignature(columns.map((c) => c.key)), key: JSON.parse(values) as Array<string | null> });
}
