import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../app-env.ts";
import { logRequest } from "../log.ts";

export const REQUEST_ID_HEADER = "X-Request-Id";

/** A client's own id is kept only when it is a short token that cannot smuggle anything into a log or a header. */
const SAFE_ID = /^[A-Za-z0-9._:-]{1,64}$/;

/**
 * Gives every request the server's own id (a new UUID), answers it in
 * `X-Request-Id`, puts it in every error body (see envelope.ts), the audit
 * trail and the request's log line, which names the route's pattern, never the
 * path or query as sent (they may carry names). A client's `X-Request-Id` is
 * kept beside it as `client_request_id` (log line, audit trail) when it is a
 * safe token: never as the id itself, which a client could then choose to
 * collide with another request's or to blame another caller.
 */
export function requestId() {
  return createMiddleware<AppEnv>(async (c, next) => {
    const id = crypto.randomUUID();
    const sent = c.req.header(REQUEST_ID_HEADER);
    const clientId = sent !== undefined && SAFE_ID.test(sent) ? sent : undefined;
    c.set("requestId", id);
    if (clientId !== undefined) c.set("clientRequestId", clientId);
    const started = performance.now();
    await next();
    c.res.headers.set(REQUEST_ID_HEADER, id);
    logRequest({
      request_id: id,
      ...(clientId === undefined ? {} : { client_request_id: clientId }),
      method: c.req.method,
      route: c.req.routePath,
      status: c.res.status,
      ms: Math.round((performance.now() - started) * 10) / 10,
    });
  });
}
