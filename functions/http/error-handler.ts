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

/**
 * Answers any thrown thing in the envelope. What the client is not told (the
 * cause of a 500 or a 503) goes to the log once, with the request's id, which
 * the client gets in `error.request_id`.
 */
export function handleError(error: unknown, c: Context) {
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
