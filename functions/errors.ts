import type { ContentfulStatusCode } from "hono/utils/http-status";

/** The error codes of the contract (docs/api.md, "The contract") and the status each one carries. */
export const ERROR_STATUS = {
  VALIDATION_ERROR: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  CONFLICT: 409,
  PRECONDITION_FAILED: 412,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  TOO_MANY_REQUESTS: 429,
  INTERNAL_ERROR: 500,
  SERVICE_UNAVAILABLE: 503,
} as const satisfies Record<string, ContentfulStatusCode>;

export type ErrorCode = keyof typeof ERROR_STATUS;

/**
 * One offending field: `{field: "sub_group_id", issue: "does not belong to super_group_id"}`.
 * `field` is the name a client sent (a body field, with `.` and the index for
 * nested ones: `participants.3.first_name`; a query parameter; a header such as
 * `If-Match`; `body` for the body as a whole). A CSV import adds the file's
 * `line` and the header's `column`. The error schema (http/openapi.ts) is
 * derived from this; to say more in an issue, add an optional member here.
 */
export interface FieldIssue {
  field: string;
  issue: string;
  line?: number;
  column?: string;
  /** A room over its capacity (409): which room, its places, and the live participants it would hold. */
  room_id?: string;
  room_number?: string;
  capacity?: number;
  occupancy?: number;
  /** A CSV import's room over capacity: its block's name and the lines that fill it. */
  block_name?: string;
  lines?: number[];
  /** A CSV import's summary entry (no `line`): how many lines have this problem, and a few of their values. */
  count?: number;
  samples?: string[];
  /** An as-needed dose refused (409): an earlier dose that stands in its way. */
  entry_id?: string;
  administered_at?: string;
}

/** `details` is always a list; one issue may be given alone. */
export type ErrorDetails = FieldIssue | readonly FieldIssue[];

/** Seconds a client is asked to wait after a 503, in its Retry-After header. */
const SERVICE_RETRY_AFTER_SECONDS = "2";

/**
 * Headers an error of a kind always carries: a 503 is a passing state (a
 * database restart, a storage outage), so it says when to try again; a 401
 * names the credentials the API takes (RFC 9110 §11.6.1).
 */
const DEFAULT_HEADERS: Partial<Record<ErrorCode, Record<string, string>>> = {
  SERVICE_UNAVAILABLE: { "Retry-After": SERVICE_RETRY_AFTER_SECONDS },
  UNAUTHORIZED: { "WWW-Authenticate": 'ApiKey realm="camp", header="X-API-Key", Bearer realm="camp"' },
};

/** An error meant for the client: its code, message and details are sent as they are. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly details?: FieldIssue[];
  readonly headers?: Record<string, string>;

  constructor(code: ErrorCode, message: string, details?: ErrorDetails, headers?: Record<string, string>) {
    super(message);
    this.name = "ApiError";
    this.code = code;
    this.details = details === undefined ? undefined : Array.isArray(details) ? [...details] : [details as FieldIssue];
    this.headers = { ...DEFAULT_HEADERS[code], ...headers };
  }

  get status(): ContentfulStatusCode {
    return ERROR_STATUS[this.code];
  }
}

export const badRequest = (message: string, details?: ErrorDetails) => new ApiError("VALIDATION_ERROR", message, details);
export const invalidField = (field: string, issue: string) =>
  new ApiError("VALIDATION_ERROR", `${field}: ${issue}`, { field, issue });
export const unauthorized = (message = "missing or invalid credential") => new ApiError("UNAUTHORIZED", message);
export const INVALID_API_KEY = "invalid, revoked or expired API key";
export const forbidden = (message: string) => new ApiError("FORBIDDEN", message);
export const notFound = (what: string) => new ApiError("NOT_FOUND", `${what} not found`);
export const conflict = (message: string, details?: ErrorDetails) => new ApiError("CONFLICT", message, details);
export const serviceUnavailable = (message = "the database is unavailable") => new ApiError("SERVICE_UNAVAILABLE", message);
