import type { Context } from "hono";
import { ApiError } from "../errors.ts";

/**
 * Optimistic concurrency for single records. A record's version is its row
 * version in Postgres (`xmin`, the transaction that wrote it), so it changes
 * with every write of the record, whoever makes it (the API, a bulk import, a
 * trigger, SQL by hand), and needs no column of its own. Its strong ETag is
 * the version in quotes.
 */
export const etagOf = (version: string) => `"${version}"`;

/** Row versions an `If-Match` accepts: `*` (any live record), a list, or no condition (undefined). */
export type Precondition = "*" | string[] | undefined;

const TAG = /^(W\/)?"([^"]*)"$/;

function tags(header: string): Array<{ weak: boolean; value: string }> {
  return header
    .split(",")
    .map((part) => TAG.exec(part.trim()))
    .filter((match): match is RegExpExecArray => match !== null)
    .map((match) => ({ weak: Boolean(match[1]), value: match[2] as string }));
}

/** The request's If-Match as row versions; weak tags never match it (RFC 9110 §13.1.1). */
export function ifMatch(c: Context): Precondition {
  const header = c.req.header("if-match");
  if (header === undefined) return undefined;
  if (header.trim() === "*") return "*";
  // Only versions Postgres can hold can match; anything else matches nothing. A record
  // whose ETag also carries the versions of what its computed fields are read from
  // (`"<own>.<parent's>"`, a room's `"<own>.<block's>.<occupancy>"`, a block's totals)
  // is matched on its own version: If-Match guards the record's own fields.
  return tags(header)
    .map((tag) => (tag.weak ? undefined : /^([0-9]{1,10})(?:\.[0-9]{0,19}){0,3}$/.exec(tag.value)?.[1]))
    .filter((version): version is string => version !== undefined);
}

/** Whether If-None-Match names this ETag (weak comparison) or `*`: the client's copy is current. */
export function notModified(c: Context, etag: string): boolean {
  const header = c.req.header("if-none-match");
  if (header === undefined) return false;
  if (header.trim() === "*") return true;
  const value = TAG.exec(etag)?.[2];
  return tags(header).some((tag) => tag.value === value);
}

export const preconditionFailed = () =>
  new ApiError("PRECONDITION_FAILED", "the record has changed since you read it (If-Match no longer matches its ETag)", {
    field: "If-Match",
    issue: "does not match the current ETag",
  });
