import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import { fromPgError, isUnavailable } from "../db/pg-errors.ts";
import { ApiError, type ErrorCode } from "../errors.ts";
import { describeError, log } from "../log.ts";
import { failure } from "./envelope.ts";

const CODE_FOR_STATUS: Record<number, ErrorCode> = {
  400: "VALIDATION_ERROR",
  401: "UNAUTHORIZED",
  403: "FORBIDDEN",
  404: "NOT_FOUND",
  405: "METHOD_NOT_ALLOWED",
  409: "CONFLICT",
  413: "PAYLOAD_TOO_LARGE",
  415: "UNSUPPORTED_MEDIA_TYPE",
  503: "SERVICE_UNAVAILABLE",
};

/** Every thrown thing as a client error; anything unexpected is logged and reported generically. */
export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof HTTPException) {
    const code = CODE_FOR_STATUS[error.status] ?? "INTERNAL_ERROR";
    // Hono's own messages ("Malformed JSON in request body") are safe to pass on.
    return new ApiError(code, code === "INTERNAL_ERROR" ? "internal error" : error.message || code.toLowerCase());
  }
  const mapped = fromPgError(error);
  if (mapped) return mapped;
  if (isUnavailable(error)) return new ApiError("SERVICE_UNAVAILABLE", "the database is unavailable");
  return new ApiError("INTERNAL_ERROR", "internal error");
}

/** nginx's status for a request its client closed: no answer is sent, the request's log line shows it. */
export const CLIENT_CLOSED_REQUEST = 499;

/**
 * Whether the request failed because its client went away: the runtime aborts
 * the request's signal when the connection closes early (Node, Deno), and
 * Node's body stream fails with its own "aborted" (ECONNRESET), which may
 * surface before the signal is aborted.
 */
function clientHungUp(c: Context, error: unknown): boolean {
  if (c.req.raw.signal?.aborted) return true;
  return error instanceof Error && error.message === "aborted" && (error as { code?: unknown }).code === "ECONNRESET";
}

/**
 * Answers any thrown thing in the envelope. What the client is not told (the
 * cause of a 500 or a 503) goes to the log once, with the request's id, which
 * the client gets in `error.request_id`. A client that hung up is no fault of
 * the service: one info line says so (no stack), and nobody reads the answer.
 */
export function handleError(error: unknown, c: Context) {
  if (clientHungUp(c, error)) {
    const { error: kind, code } = describeError(error);
    log.info("client hung up", {
      request_id: c.get("requestId"),
      method: c.req.method,
      route: c.req.routePath,
      error: kind,
      code,
    });
    return c.body(null, CLIENT_CLOSED_REQUEST as never);
  }
  const apiError = toApiError(error);
  if (apiError.code === "INTERNAL_ERROR" || apiError.code === "SERVICE_UNAVAILABLE") {
    // An ApiError made from a failure (photo storage) carries it as its cause.
    const cause = error instanceof ApiError && error.cause !== undefined ? error.cause : error;
    const fields = { request_id: c.get("requestId"), method: c.req.method, route: c.req.routePath, ...describeError(cause) };
    if (apiError.code === "INTERNAL_ERROR") log.error("request failed", fields);
    else log.warn("service unavailable", { ...fields, reason: apiError.message });
  }
  return failure(c, apiError);
}
