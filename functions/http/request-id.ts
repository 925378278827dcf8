import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../app-env.ts";
import { logRequest } from "../log.ts";

export const REQUEST_ID_HEADER = "X-Request-Id";

/** A client's own id is kept only when it is a short token that cannot smuggle anything into a log or a header. */
const SAFE_ID = /^[A-Za-z0-9._:-]{1,64}$/;

/**
 * Gives every request an id (the client's `X-Request-Id` when it is a safe
 * token, otherwise a new UUID), answers it in `X-Request-Id`, puts it in every
 * error body (see envelope.ts) and in the request's log line, which names the
 * route's pattern, never the path or query as sent (they may carry names).
 */
export function requestId() {
  return createMiddleware<AppEnv>(async (c, next) => {
    const sent = c.req.header(REQUEST_ID_HEADER);
    const id = sent !== undefined && SAFE_ID.test(sent) ? sent : crypto.randomUUID();
    c.set("requestId", id);
    const started = performance.now();
    await next();
    c.res.headers.set(REQUEST_ID_HEADER, id);
    logRequest({
      request_id: id,
      method: c.req.method,
      route: c.req.routePath,
      status: c.res.status,
      ms: Math.round((performance.now() - started) * 10) / 10,
    });
  });
}
