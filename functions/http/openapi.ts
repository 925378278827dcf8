import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppEnv } from "../app-env.ts";
import { ERROR_STATUS, type ErrorCode } from "../errors.ts";
import { validationHook } from "./validation.ts";

/**
 * Shared pieces of every route's contract. Routes are declared with zod
 * schemas that both validate requests and document them (GET /api/v1/openapi.json).
 */
export function newRouter() {
  return new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
}

export const ErrorSchema = z
  .object({
    success: z.literal(false),
    error: z.object({
      code: z.enum(Object.keys(ERROR_STATUS) as [ErrorCode, ...ErrorCode[]]).openapi({ example: "VALIDATION_ERROR" }),
      message: z.string(),
      details: z.unknown().optional().openapi({ description: "The offending field(s): {field, issue} or a list of them" }),
      request_id: z.string().openapi({ description: "Also in the X-Request-Id header and the server's log" }),
    }),
  })
  .openapi("Error");

export const MetaSchema = z
  .object({ total: z.number().int(), limit: z.number().int(), offset: z.number().int() })
  .openapi("ListMeta");

export const MessageSchema = z.object({ success: z.literal(true), message: z.string() }).openapi("Message");

export function json<T extends z.ZodType>(schema: T, description: string) {
  return { content: { "application/json": { schema } }, description };
}

export function dataOf<T extends z.ZodType>(schema: T) {
  return z.object({ success: z.literal(true), data: schema });
}

export function listOf<T extends z.ZodType>(schema: T) {
  return z.object({ success: z.literal(true), data: z.array(schema), meta: MetaSchema });
}

/** The error responses a route can give, for its documentation. */
export function errors(...statuses: Array<400 | 401 | 403 | 404 | 409 | 412 | 413 | 415 | 429 | 503>) {
  const descriptions: Record<number, string> = {
    400: "Validation error",
    401: "Missing or invalid credential",
    403: "Not allowed",
    404: "Not found in the caller's tenant",
    409: "Conflict",
    412: "If-Match no longer matches the record's ETag; nothing was changed",
    413: "Payload too large",
    429: "Rate limit spent; Retry-After says when to come back",
    415: "Unsupported media type",
    503: "Database unavailable",
  };
  return Object.fromEntries(statuses.map((s) => [s, json(ErrorSchema, descriptions[s] ?? "Error")]));
}

/** A GET whose If-None-Match names the record's current ETag: no body. */
export const NOT_MODIFIED = { 304: { description: "Not modified: If-None-Match names the current ETag (no body)" } };

/** Both credentials the API accepts, for the OpenAPI `security` of authenticated routes. */
export const authenticated: Array<Record<string, string[]>> = [{ ApiKey: [] }, { Bearer: [] }];
