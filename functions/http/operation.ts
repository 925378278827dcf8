import type { RouteConfig } from "@hono/zod-openapi";
import {
  authenticated,
  componentName,
  type ErrorStatus,
  errorResponseName,
  RESPONSE_HEADERS,
  type RequestHeader,
  type ResponseHeader,
} from "./openapi.ts";

/**
 * Declares an operation with everything it can answer, so the OpenAPI
 * document is the whole truth and a route author writes only what is
 * particular to the route: its success answer(s) and its own errors. The
 * rest follows from what the operation is (docs/architecture.md, "How to
 * declare a route"):
 *
 * - every operation: 400 (an unknown query parameter, a bad path or query
 *   value), 500, 503 with Retry-After;
 * - authenticated (the default; `public: true` for none): both credentials,
 *   401 with WWW-Authenticate, 429 with Retry-After;
 * - a path parameter: 404;
 * - authenticated: 403 (a read-only key writing, a key with the attendance
 *   scope alone outside movements, roll calls, presence and rosters);
 * - every method but GET: 413 and 415 (any body is checked against the
 *   path's type and limit);
 * - POST: reads Idempotency-Key, answers 409 (a key reused or in flight) and
 *   may answer Idempotent-Replayed; a 201 carries Location;
 * - `etag: true`: a GET reads If-None-Match and answers ETag and 304; PUT,
 *   PATCH and DELETE read If-Match and answer 412, and (PUT, PATCH, POST)
 *   send the new ETag.
 *
 * X-Request-Id, RateLimit and RateLimit-Policy go with every answer and are
 * declared once for the document (http/openapi.ts EVERY_ANSWER_HEADERS), not
 * here. Each error status is one shared answer (components/responses).
 */
export interface OperationOptions {
  /** A one-line imperative summary ("Get a room") and a description of what it does (Spectral wants both). */
  summary: string;
  description: string;
  /** No credential needed (no 401, 403 or 429). */
  public?: boolean;
  /**
   * The record has an ETag: conditional reads, If-Match writes (see above).
   * `"optional"`: a GET whose record may not have one yet (a care record never written).
   */
  etag?: boolean | "optional";
  /** Statuses particular to the operation, beyond those derived (e.g. 403 on an admin-only read, 409). */
  errors?: ErrorStatus[];
  /** Headers particular to the success answers (e.g. Cache-Control on a download). */
  headers?: ResponseHeader[];
}

/** The success headers a 304 repeats: caching ones (ETag is added for every 304). */
const NOT_MODIFIED_HEADERS = new Set<ResponseHeader>(["Cache-Control"]);

const parameter = (name: RequestHeader) => ({ $ref: `#/components/parameters/${componentName(name)}` });

function headerRefs(names: ResponseHeader[]): Record<string, { $ref: string }> {
  return Object.fromEntries([...new Set(names)].map((name) => [name, { $ref: `#/components/headers/${componentName(name)}` }]));
}

export function operation<R extends RouteConfig>(route: R & OperationOptions): R {
  const { public: isPublic, etag, errors = [], headers = [], ...config } = route;
  const method = config.method;
  const write = method !== "get";
  const post = method === "post";
  const hasPathParameter = /\{[^}]+\}/.test(config.path);

  const statuses = new Set<ErrorStatus>([400, 500, 503, ...errors]);
  if (!isPublic) for (const s of [401, 429] as const) statuses.add(s);
  if (hasPathParameter) statuses.add(404);
  if (!isPublic) statuses.add(403);
  if (write) for (const s of [413, 415] as const) statuses.add(s);
  if (post && !isPublic) statuses.add(409);
  if (etag && (method === "put" || method === "patch" || method === "delete")) statuses.add(412);

  const responses: Record<string, unknown> = {};
  for (const [status, answer] of Object.entries(config.responses)) {
    const success = Number(status) >= 200 && Number(status) < 300;
    const sent: ResponseHeader[] = success ? [...headers] : [];
    if (success && post && !isPublic) sent.push("Idempotent-Replayed");
    if (status === "201") sent.push("Location");
    if (success && etag === true && method !== "delete") sent.push("ETag");
    const refs: Record<string, object> = headerRefs(sent);
    if (success && etag === "optional") refs.ETag = { ...RESPONSE_HEADERS.ETag, required: false };
    responses[status] = { ...(answer as object), ...(Object.keys(refs).length > 0 ? { headers: refs } : {}) };
  }
  if (etag && method === "get") {
    // A 304 carries the validators and caching headers a 200 would (RFC 9110, 15.4.5), no
    // representation metadata: no Content-Disposition on a download's 304.
    responses["304"] = {
      description: "Not modified: If-None-Match names the current ETag (no body)",
      headers: headerRefs(["ETag", ...headers.filter((name) => NOT_MODIFIED_HEADERS.has(name))]),
    };
  }
  for (const status of [...statuses].sort()) {
    responses[String(status)] ??= { $ref: `#/components/responses/${errorResponseName(status)}` };
  }

  const parameters: Array<{ $ref: string }> = [...((config.parameters as Array<{ $ref: string }>) ?? [])];
  if (post && !isPublic) parameters.push(parameter("Idempotency-Key"));
  if (etag && method === "get") parameters.push(parameter("If-None-Match"));
  if (etag && (method === "put" || method === "patch" || method === "delete")) parameters.push(parameter("If-Match"));

  return {
    ...config,
    ...(isPublic ? { security: [] } : { security: authenticated }),
    ...(parameters.length > 0 ? { parameters } : {}),
    responses,
  } as unknown as R;
}
