import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppEnv } from "../app-env.ts";
import { ERROR_STATUS, type ErrorCode } from "../errors.ts";
import { validationHook } from "./validation.ts";

/**
 * The pieces of the contract every operation shares: the envelope's schemas,
 * the error schema and its examples, and the headers (components). Routes
 * declare themselves with `operation()` (http/operation.ts), which uses these.
 */
export function newRouter() {
  return new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
}

const ERROR_CODES = Object.keys(ERROR_STATUS) as [ErrorCode, ...ErrorCode[]];

/** The one shape of `error.details` (errors.ts FieldIssue). */
export const FieldIssueSchema = z
  .object({
    field: z.string().openapi({
      description:
        "What the client sent wrong, by the name it sent: a body field (nested ones with dots and indexes, `participants.3.first_name`), a query or path parameter, a header (`If-Match`), or `body` for the body as a whole",
      example: "end_date",
    }),
    issue: z.string().openapi({ description: "What is wrong with it, in words", example: "must not be before start_date" }),
    line: z.number().int().optional().openapi({ description: "CSV import: the line of the file" }),
    column: z.string().optional().openapi({ description: "CSV import: the column as the file's header names it" }),
    room_id: z
      .string()
      .optional()
      .openapi({ format: "uuid", description: "A room over its capacity (409): the room; one issue per room over" }),
    room_number: z.string().optional().openapi({ description: "A room over its capacity (409): its room number" }),
    capacity: z.number().int().optional().openapi({ description: "A room over its capacity (409): its places" }),
    occupancy: z.number().int().optional().openapi({
      description:
        "A room over its capacity (409): the live participants it would hold had the write gone through (more than capacity)",
    }),
    block_name: z.string().optional().openapi({ description: "CSV import, a room over its capacity: its block's name" }),
    lines: z
      .array(z.number().int())
      .optional()
      .openapi({ description: "CSV import, a room over its capacity: the lines that put participants into it" }),
    count: z
      .number()
      .int()
      .optional()
      .openapi({ description: "CSV import, a summary entry (no line): how many lines have this problem in this column" }),
    samples: z
      .array(z.string())
      .optional()
      .openapi({ description: "CSV import, a summary entry: a few of the values at fault (never of safeguarding columns)" }),
    entry_id: z.string().optional().openapi({
      format: "uuid",
      description: "An as-needed dose refused (409): an earlier dose given within its limits, one issue per dose",
    }),
    administered_at: z
      .string()
      .optional()
      .openapi({ format: "date-time", description: "An as-needed dose refused (409): when that earlier dose was given" }),
  })
  .openapi("FieldIssue", { description: "One offending field" });

export const ErrorSchema = z
  .object({
    success: z.literal(false),
    error: z.object({
      code: z.enum(ERROR_CODES).openapi({ description: "Stable; each code has one HTTP status" }),
      message: z.string().openapi({ description: "For people; may change between versions" }),
      details: z.array(FieldIssueSchema).optional().openapi({
        description: "The offending fields, when the error is about some (400 names each one)",
      }),
      request_id: z.string().openapi({ description: "Also in the X-Request-Id header and the server's log" }),
    }),
  })
  .openapi("Error");

export const MetaSchema = z
  .object({
    total: z.number().int().openapi({ description: "Records matching the filters, on every page" }),
    limit: z.number().int(),
    offset: z.number().int(),
    next: z.string().nullable().optional().openapi({
      description:
        "Lists that page by cursor: pass it as `after` for the page that follows; null on the last page. Absent from other lists.",
    }),
  })
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

/** Where a key comes from: the ApiKey scheme's description, which the reference page shows under Authorize. */
export const KEY_ORIGIN = [
  "`npm start` prints one for the demo tenant's admin on its first start;",
  "an operator issues one with `npm run camp -- keys issue <email>` (or `camp tenant create` for a new tenant);",
  "a signed-in user trades a Bearer token for one with `POST /api/v1/api-keys/generate`.",
].join(" ");

/** Both credentials the API accepts, for the OpenAPI `security` of authenticated routes. */
export const authenticated: Array<Record<string, string[]>> = [{ ApiKey: [] }, { Bearer: [] }];

export type ErrorStatus = 400 | 401 | 403 | 404 | 409 | 412 | 413 | 415 | 429 | 500 | 503;

/** What each error status means, with an example body showing its code. */
const ERROR_ANSWERS: Record<ErrorStatus, { description: string; message: string; details?: object[] }> = {
  400: {
    description: "A body field, query parameter, path parameter or header is not valid (each one named in details)",
    message: "invalid request: end_date: must not be before start_date",
    details: [{ field: "end_date", issue: "must not be before start_date" }],
  },
  401: { description: "No credential, or one that is unknown, revoked or expired", message: "missing or invalid credential" },
  403: {
    description:
      "The credential may not do this (a read-only key writing, a key with the attendance scope alone outside movements, roll calls, presence and rosters, a staff user doing what admins do, a replay to a caller who lost the rights the first request used)",
    message: "this API key is read-only: it may only GET and HEAD",
  },
  404: { description: "No such record in the caller's tenant", message: "room not found" },
  409: {
    description:
      "A uniqueness or reference rule, an archived instance, or an Idempotency-Key used for another request, still in flight, or whose answer is not kept (it held a secret, shown once, or named a participant since erased)",
    message: "name is already used in this instance",
    details: [{ field: "name", issue: "is already used in this instance" }],
  },
  412: {
    description: "If-Match no longer matches the record's ETag; nothing was changed",
    message: "the record has changed since you read it (If-Match no longer matches its ETag)",
    details: [{ field: "If-Match", issue: "does not match the current ETag" }],
  },
  413: {
    description: "The body is over the operation's limit",
    message: "JSON bodies are limited to 1 MB",
    details: [{ field: "body", issue: "must be at most 1048576 bytes" }],
  },
  415: {
    description: "A body of a type this operation does not take",
    message: "Content-Type must be application/json",
    details: [{ field: "content-type", issue: "'text/plain' is not accepted here" }],
  },
  429: { description: "The caller's rate limit is spent; Retry-After says when to come back", message: "rate limit spent" },
  500: { description: "Unexpected failure; the log has the cause under error.request_id", message: "internal error" },
  503: {
    description: "The database (or, for photos, photo storage) is unavailable; Retry-After says when to try again",
    message: "the database is unavailable",
  },
};

/** The component name of an error status's answer: `NOT_FOUND` → `NotFound`. */
export const errorResponseName = (status: ErrorStatus) =>
  (CODE_OF[status] as string).toLowerCase().replace(/(^|_)([a-z])/g, (_, __, letter: string) => letter.toUpperCase());

const CODE_OF: Record<number, ErrorCode> = Object.fromEntries(
  Object.entries(ERROR_STATUS).map(([code, status]) => [status, code as ErrorCode]),
);

/** The answer of an error status: the Error schema, an example with that status's code, and its own headers. */
function errorAnswer(status: ErrorStatus, headers: Record<string, { $ref: string }>) {
  const answer = ERROR_ANSWERS[status];
  const example = {
    success: false,
    error: {
      code: CODE_OF[status],
      message: answer.message,
      ...(answer.details ? { details: answer.details } : {}),
      request_id: "9b2f7c7e-4c1a-4f7e-9a53-2b8f1c0d6e11",
    },
  };
  return {
    description: answer.description,
    ...(Object.keys(headers).length > 0 ? { headers } : {}),
    content: { "application/json": { schema: { $ref: "#/components/schemas/Error" }, example } },
  };
}

/**
 * The headers of the contract, as components: each operation refers to those
 * it reads (parameters) or sends (headers: http/operation.ts). Names are as
 * clients write them. A header an answer declares is always sent, except
 * those marked optional: the rate-limit fields (limits may be off) and
 * Idempotent-Replayed (only on a replay).
 */
export const RESPONSE_HEADERS = {
  ETag: {
    description:
      "The record's current version (strong); send it back in If-Match to change it safely, or in If-None-Match to re-read",
    required: true,
    schema: { type: "string", example: '"7391"' },
  },
  Location: {
    description: "Where the created record (or collection) is read",
    required: true,
    schema: { type: "string", format: "uri-reference" },
  },
  "Retry-After": {
    description: "Seconds to wait before trying again",
    required: true,
    schema: { type: "string", pattern: "^[0-9]+$" },
  },
  "Idempotent-Replayed": {
    description: "`true` when this is the stored answer to an earlier request with the same Idempotency-Key",
    required: false,
    schema: { type: "string", enum: ["true"] },
  },
  "WWW-Authenticate": { description: "The credentials the API takes", required: true, schema: { type: "string" } },
  "Cache-Control": { description: "How the answer may be cached", required: true, schema: { type: "string" } },
  "Content-Disposition": {
    description: "The file name a download is saved under",
    required: true,
    schema: { type: "string" },
  },
} as const;

export type ResponseHeader = keyof typeof RESPONSE_HEADERS;

/**
 * The headers that go with every answer, declared once rather than under each
 * status of each operation (a reference a person reads lists them once, in
 * info.description): the document's `x-headers-on-every-answer`
 * (docs/client-ready.ts), each a Header Object with `on`: `all`, or
 * `authenticated` (every answer of an operation that takes a credential, but
 * a 401, which has no caller to count against). tests/support/contract.ts
 * holds every answer to it.
 */
export const EVERY_ANSWER_HEADERS = {
  "X-Request-Id": {
    description:
      "On every answer: the server's own id of the request, also in error.request_id, the log and the audit trail; a client's X-Request-Id is never used as it (the audit trail keeps a safe one as client_request_id)",
    required: true,
    schema: { type: "string" },
    on: "all",
  },
  RateLimit: {
    description:
      'On every answer to a credential but a 401, when limits are on: what is left of the caller\'s rate limit, `"default";r=<requests left>;t=<seconds to reset>`',
    required: false,
    schema: { type: "string", example: '"default";r=57;t=42' },
    on: "authenticated",
  },
  "RateLimit-Policy": {
    description:
      'On every answer to a credential but a 401, when limits are on: the caller\'s rate limit, `"default";q=<requests>;w=<window seconds>`',
    required: false,
    schema: { type: "string", example: '"default";q=600;w=60' },
    on: "authenticated",
  },
} as const;

export const REQUEST_HEADERS = {
  "Idempotency-Key": {
    name: "Idempotency-Key",
    in: "header",
    required: false,
    description:
      "Makes a POST safe to retry: the same key with the same request within 24 hours replays the stored answer (with Idempotent-Replayed: true) and writes nothing; another request with the key, or a retry while the first still runs, is 409. A replay needs the rights the first request used (an admin's role, care access): 403 otherwise. An answer holding a secret (API key generate and regenerate, a webhook endpoint's create and rotate-secret) is never stored: a retry is 409, the secret being shown only once; so is a retry whose answer named a participant erased since. 1 to 255 visible ASCII characters, e.g. a UUID.",
    schema: { type: "string", minLength: 1, maxLength: 255, pattern: "^[!-~]{1,255}$" },
  },
  "If-Match": {
    name: "If-Match",
    in: "header",
    required: false,
    // No example value: the reference page would put it in the form, and a PATCH sent with it would be 412.
    description:
      'Change or delete only if the record\'s ETag is still this one, as read (`"7391"`), or `*`: any live record; otherwise 412 and nothing changes',
    schema: { type: "string" },
  },
  "If-None-Match": {
    name: "If-None-Match",
    in: "header",
    required: false,
    description: 'An ETag read earlier, as read (`"7391"`): 304 without a body while it is still current',
    schema: { type: "string" },
  },
} as const;

export type RequestHeader = keyof typeof REQUEST_HEADERS;

/** The component name of a header: `If-None-Match` → `IfNoneMatch`. */
export const componentName = (header: string) => header.replace(/-/g, "");

/** Registers the shared components (security schemes, headers, header parameters) on the app's document. */
export function registerContract(app: OpenAPIHono<AppEnv>): void {
  const registry = app.openAPIRegistry;
  registry.register("Error", ErrorSchema);
  registry.registerComponent("securitySchemes", "ApiKey", {
    type: "apiKey",
    in: "header",
    name: "X-API-Key",
    description: KEY_ORIGIN,
  });
  registry.registerComponent("securitySchemes", "Bearer", {
    type: "http",
    scheme: "bearer",
    bearerFormat: "JWT",
    description:
      "A JWT of the identity provider the server trusts (`AUTH_JWT_SECRET` or `AUTH_JWKS_URL`; Supabase Auth on Supabase): its subject names a user of a tenant, or its e-mail does when the token says `email_verified: true`.",
  });
  for (const [name, header] of Object.entries(RESPONSE_HEADERS)) {
    registry.registerComponent("headers", componentName(name), header as never);
  }
  for (const status of Object.keys(ERROR_ANSWERS).map(Number) as ErrorStatus[]) {
    const headers: ResponseHeader[] = [];
    if (status === 401) headers.push("WWW-Authenticate");
    if (status === 429 || status === 503) headers.push("Retry-After");
    const refs = Object.fromEntries(headers.map((name) => [name, { $ref: `#/components/headers/${componentName(name)}` }]));
    registry.registerComponent("responses", errorResponseName(status), errorAnswer(status, refs) as never);
  }
  for (const [name, parameter] of Object.entries(REQUEST_HEADERS)) {
    registry.registerComponent("parameters", componentName(name), parameter as never);
  }
}
