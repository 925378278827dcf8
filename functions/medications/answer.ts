import type { Context } from "hono";
import type { AppEnv } from "../app-env.ts";
import type { Versioned } from "../care/data.ts";
import { invalidField, notFound } from "../errors.ts";
import { ok } from "../http/envelope.ts";
import { etagOf, notModified } from "../http/etag.ts";
import { isUuid, textIssue } from "../resources/fields.ts";

/**
 * Path ids of the health centre's routes: one that is not a uuid names
 * nothing (404, naming what was not found), a hostile one is 400 naming it.
 */
export function pathIds(c: Context<AppEnv>, names: Readonly<Record<string, string>>): void {
  for (const [name, noun] of Object.entries(names)) {
    const value = c.req.param(name) ?? "";
    if (isUuid(value)) continue;
    const issue = textIssue(value);
    throw issue ? invalidField(name, issue) : notFound(noun);
  }
}

/** The record and its ETag (when it has a version), or 304 when If-None-Match names it. */
export function versioned<T, S extends 200 | 201 = 200>(c: Context<AppEnv>, found: Versioned<T>, status?: S) {
  if (found.version !== null) {
    const etag = etagOf(found.version);
    c.header("ETag", etag);
    if (c.req.method === "GET" && notModified(c, etag)) return c.body(null, 304) as never;
  }
  return ok<T, S>(c, found.record, status);
}
