import type { Hono } from "hono";
import { ApiError } from "../errors.ts";

interface CompiledRoute {
  method: string;
  regex: RegExp;
  /** No parameters: `/api-keys/my-key`, not `/api-keys/:id`. */
  literal: boolean;
}

/** Hono path syntax (`/participants/:id`, `*`) as an anchored regular expression. */
function compile(path: string): RegExp {
  const source = path
    .split("/")
    .map((part) => {
      if (part === "*") return ".*";
      if (part.startsWith(":")) return "[^/]+";
      return part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    })
    .join("/");
  // Exact: Hono routes strictly, so `/health/` has no handler and must be a 404 here, not a 500 later.
  return new RegExp(`^${source}$`);
}

/**
 * Knows which methods each registered path answers, so an unknown path gets
 * 404 and a known path with the wrong method 405 (with Allow) — both before
 * authentication, since the route list is public anyway (openapi.json).
 * hono/method-not-allowed is not used for this: it answers after the
 * handlers have run, so an unauthenticated request would get 401 where the
 * contract wants 404 or 405, and it does not let a literal path win over a
 * parameterised one.
 */
export class RouteTable {
  private compiled?: CompiledRoute[];

  constructor(private readonly app: Hono<never>) {}

  private routes(): CompiledRoute[] {
    // Built on first use, once every router is mounted. Middleware ("ALL") is not a route.
    this.compiled ??= this.app.routes
      .filter((r) => r.method !== "ALL")
      .map((r) => ({ method: r.method, regex: compile(r.path), literal: !/[:*]/.test(r.path) }));
    return this.compiled;
  }

  /** Throws NOT_FOUND or METHOD_NOT_ALLOWED unless some route answers this method and path. */
  check(method: string, path: string): void {
    const wanted = method === "HEAD" ? "GET" : method;
    const matching = this.routes().filter((r) => r.regex.test(path));
    // A path a route names literally is that resource: `/api-keys/my-key` is not also an `/api-keys/:id`.
    const named = matching.some((r) => r.literal) ? matching.filter((r) => r.literal) : matching;
    const allowed = new Set(named.map((r) => r.method));
    if (allowed.has(wanted) || (method === "OPTIONS" && allowed.size > 0)) return;
    if (allowed.size === 0) throw new ApiError("NOT_FOUND", `no route for ${path}`);
    const allow = [...allowed].sort().join(", ");
    throw new ApiError("METHOD_NOT_ALLOWED", `${method} is not allowed on ${path}; allowed: ${allow}`, undefined, {
      Allow: allow,
    });
  }
}
