import { createMiddleware } from "hono/factory";

export interface CorsOptions {
  /** Allowed origins; empty or undefined allows any origin (`*`), never with credentials. */
  origins?: string[];
  allowHeaders: string[];
  allowMethods: string[];
  /** Response headers a browser client may read. */
  exposeHeaders: string[];
  maxAgeSeconds: number;
}

/**
 * CORS headers, as hono/cors sets them, but added to the response after the
 * route has made it. hono/cors touches the response before the route runs,
 * so Hono merges two responses and @hono/node-server then streams the body
 * through a web ReadableStream instead of writing the string it holds, on
 * every request. Any OPTIONS request is answered
 * here as a preflight.
 */
export function cors(options: CorsOptions) {
  const any = !options.origins || options.origins.length === 0;
  const allowed = new Set(options.origins ?? []);
  const allowOrigin = (origin: string | undefined) => (any ? "*" : origin && allowed.has(origin) ? origin : undefined);
  const methods = options.allowMethods.join(",");
  const headers = options.allowHeaders.join(",");
  const maxAge = String(options.maxAgeSeconds);
  const expose = options.exposeHeaders.join(",");

  return createMiddleware(async (c, next) => {
    const origin = allowOrigin(c.req.header("origin"));
    if (c.req.method === "OPTIONS") {
      const preflight: Record<string, string> = {
        "Access-Control-Max-Age": maxAge,
        "Access-Control-Allow-Methods": methods,
        "Access-Control-Allow-Headers": headers,
        Vary: any ? "Access-Control-Request-Headers" : "Origin, Access-Control-Request-Headers",
      };
      if (origin) preflight["Access-Control-Allow-Origin"] = origin;
      return c.body(null, 204, preflight);
    }
    await next();
    if (origin) {
      c.res.headers.set("Access-Control-Allow-Origin", origin);
      c.res.headers.set("Access-Control-Expose-Headers", expose);
    }
    if (!any) c.res.headers.append("Vary", "Origin");
  });
}
