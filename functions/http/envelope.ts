import type { Context, TypedResponse } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { AppEnv } from "../app-env.ts";
import type { ListMeta } from "../db/list.ts";
import type { ApiError } from "../errors.ts";

/** `{success: true, data}`; 201 for creates, 200 otherwise. */
export function ok<T, S extends 200 | 201 | 202 = 200>(c: Context, data: T, status?: S) {
  return c.json({ success: true as const, data }, (status ?? 200) as S);
}

/**
 * A 201's `Location`: `target` (a path as the app routes it) under PUBLIC_URL
 * when the operator set it, otherwise as a reference relative to the request,
 * which resolves right under any prefix the platform serves the app below
 * (the Edge Function's /functions/v1/api).
 */
export function locate(c: Context<AppEnv>, target: string): void {
  const base = c.get("config").PUBLIC_URL?.replace(/\/+$/, "");
  c.header("Location", base ? `${base}${target}` : relativeReference(c.req.path, target));
}

function relativeReference(from: string, to: string): string {
  const [toPath = "", query] = to.split("?");
  const fromDirs = from.split("/").slice(0, -1);
  const toParts = toPath.split("/");
  let common = 0;
  while (common < fromDirs.length && common < toParts.length - 1 && fromDirs[common] === toParts[common]) common++;
  const up = fromDirs.length - common;
  return `${up > 0 ? "../".repeat(up) : "./"}${toParts.slice(common).join("/")}${query ? `?${query}` : ""}`;
}

/** `{success: true, data: [...], meta: {total, limit, offset}}`. */
export function list<T>(c: Context, data: T[], meta: ListMeta) {
  return c.json({ success: true as const, data, meta }, 200);
}

/**
 * The same list envelope around a page that Postgres has already written as
 * a JSON array of T (participants: see listParticipants), spliced in as it
 * is. Typed as the JSON response it is, which the route's schema describes.
 */
export function listOfJson<T>(c: Context, json: string, meta: ListMeta) {
  const body = `{"success":true,"data":${json},"meta":${JSON.stringify(meta)}}`;
  return c.body(body, 200, { "Content-Type": "application/json" }) as unknown as TypedResponse<
    { success: true; data: T[]; meta: ListMeta },
    200,
    "json"
  >;
}

/** `{success: true, data}` around one T that Postgres has already written as JSON, spliced in as it is. */
export function okOfJson<T, S extends 200 | 201 = 200>(c: Context, json: string, status?: S) {
  return c.body(`{"success":true,"data":${json}}`, status ?? 200, {
    "Content-Type": "application/json",
  }) as unknown as TypedResponse<{ success: true; data: T }, S, "json">;
}

/** `{success: true, message}` for operations that return no record (deletes, revokes). */
export function message(c: Context, text: string) {
  return c.json({ success: true as const, message: text }, 200);
}

/** The one place the error envelope is written; `request_id` ties it to the server's log. */
export function errorBody(error: ApiError, requestId?: string) {
  return {
    success: false as const,
    error: {
      code: error.code,
      message: error.message,
      ...(error.details === undefined ? {} : { details: error.details }),
      ...(requestId === undefined ? {} : { request_id: requestId }),
    },
  };
}

export function failure(c: Context, error: ApiError) {
  for (const [name, value] of Object.entries(error.headers ?? {})) c.header(name, value);
  return c.json(errorBody(error, c.get("requestId")), error.status as ContentfulStatusCode);
}
// y
