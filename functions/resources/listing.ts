import { z } from "@hono/zod-openapi";
import { pagination } from "./fields.ts";

/**
 * What every list takes beside its filters (docs/api.md, "The contract"):
 * `sort`, `updated_since`, `include_deleted`, `limit` and `offset`. Declared
 * once here, so every list parses them alike and the OpenAPI document says
 * the same of each.
 */

export interface SortKey {
  column: string;
  descending: boolean;
}

export interface ListOptions {
  sort?: SortKey[];
  updated_since?: string;
  include_deleted: boolean;
  limit: number;
  offset: number;
  /** A cursor from an earlier page's meta.next (lists that offer one). */
  after?: string;
}

/**
 * `sort=surname,-created_at`: fields of `sortable` (and `id`), each at most
 * once, `-` for descending. Parsed into SortKeys; the ORDER BY is built from
 * these names only, never from the client's text.
 */
function sortParam(sortable: readonly string[]) {
  const allowed = new Set([...sortable, "id"]);
  const list = [...allowed].join(", ");
  return z
    .string()
    .transform((value, ctx) => {
      const keys: SortKey[] = [];
      for (const part of value.split(",")) {
        const descending = part.startsWith("-");
        const column = descending ? part.slice(1) : part;
        if (!allowed.has(column)) {
          ctx.addIssue({ code: "custom", message: `'${part}' is not a sort field; sort by ${list}, '-' for descending` });
          return z.NEVER;
        }
        if (keys.some((key) => key.column === column)) {
          ctx.addIssue({ code: "custom", message: `'${column}' is given twice` });
          return z.NEVER;
        }
        keys.push({ column, descending });
      }
      return keys;
    })
    .optional()
    .openapi({
      type: "string",
      description: `Comma-separated fields to sort by, \`-\` for descending (${list}); \`id\` breaks ties so pages stay stable. Default: created_at.`,
      example: sortable.includes("surname") ? "surname,first_name" : "-created_at",
    });
}

/** Longest cursor accepted: a few sort keys of at most 2,000 characters each, encoded. */
const MAX_CURSOR = 12_000;

const AfterParam = z
  .string()
  .max(MAX_CURSOR, "is not a cursor this list gave")
  .regex(/^[A-Za-z0-9_-]+$/, "is not a cursor this list gave")
  .optional()
  .openapi({
    type: "string",
    description:
      "Continue after the last row of an earlier page: the `meta.next` it answered. Pages by cursor cost the same however deep; use `offset` to jump to a page by number. Not combined with an offset.",
  });

/** The list options of a list whose records may be sorted by `sortable`. */
export const listing = (sortable: readonly string[], defaultLimit: number) => ({
  sort: sortParam(sortable),
  updated_since: z
    .string()
    .datetime({ offset: true, message: "must be an RFC 3339 timestamp, e.g. 2026-07-14T09:30:00Z" })
    .optional()
    .openapi({
      type: "string",
      format: "date-time",
      description:
        "Only records changed (created, updated or deleted) at or after this time. To mirror a tenant, pass the newest updated_at you hold minus a minute, with include_deleted=true.",
    }),
  include_deleted: z
    .enum(["true", "false"])
    .transform((value) => value === "true")
    .optional()
    .openapi({
      type: "string",
      enum: ["true", "false"],
      description: "Also soft-deleted records, with their deleted_at (default false)",
    }),
  ...pagination(defaultLimit),
});

/** The list options and `after`, for a list whose data access pages by keyset too (resources/cursor.ts). */
export const cursorListing = (sortable: readonly string[], defaultLimit: number) => ({
  ...listing(sortable, defaultLimit),
  after: AfterParam,
});

/**
 * The ORDER BY of a list page over `alias`: the client's keys, then `id`
 * in the direction of the last key (so an index on the keys and id serves
 * either direction), or created_at and id by default.
 */
export function orderBy(sort: SortKey[] | undefined, alias = ""): string {
  return orderKeys(sort)
    .map((key) => `${alias}${key.column}${key.descending ? " desc" : ""}`)
    .join(", ");
}

/** The keys of a list's order: the client's, or created_at; then `id` in the direction of the last. */
export function orderKeys(sort: SortKey[] | undefined): SortKey[] {
  const keys = sort && sort.length > 0 ? sort : [{ column: "created_at", descending: false }];
  const last = keys[keys.length - 1] as SortKey;
  return keys.some((key) => key.column === "id") ? keys : [...keys, { column: "id", descending: last.descending }];
}

/** Conditions for `updated_since` and `include_deleted` on `alias`, with their parameters numbered from `next`. */
export function syncConditions(options: Pick<ListOptions, "updated_since" | "include_deleted">, alias: string, next: number) {
  const where: string[] = options.include_deleted ? [] : [`${alias}deleted_at is null`];
  const params: unknown[] = [];
  if (options.updated_since !== undefined) {
    params.push(options.updated_since);
    where.push(`${alias}updated_at >= $${next}::timestamptz`);
  }
  return { where, params };
}

/** The optional field a record carries when a list includes deleted ones. */
export const deletedAtField = {
  deleted_at: z
    .string()
    .nullable()
    .optional()
    .openapi({ format: "date-time", description: "When it was deleted; present only with include_deleted=true" }),
};
