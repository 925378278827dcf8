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
 * A path's bucket: its number of segments and its first three
 * (`5 /api/v1/participants`), so a request tests the regular expressions of a
 * handful of routes, not of all. Undefined for a path with fewer segments.
 */
function bucketOf(path: string): string | undefined {
  if (path.includes("*")) return undefined;
  const segments = path.split("/");
  if (segments.length < 4) return undefined;
  return `${segments.length} ${segments.slice(0, 4).join("/")}`;
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
  private buckets?: Map<string, CompiledRoute[]>;
  /** Routes whose first segments or length vary (a parameter there, or `*`): checked for every path. */
  private anywhere: CompiledRoute[] = [];

  constructor(private readonly app: Hono<never>) {}

  /** The routes a path could match: those of its length and first three segments, and the ones that vary. */
  private candidates(path: string): CompiledRoute[] {
    // Built on first use, once every router is mounted. Middleware ("ALL") is not a route.
    if (!this.buckets) {
      this.buckets = new Map();
      for (const r of this.app.routes) {
        if (r.method === "ALL") continue;
        const route = { method: r.method, regex: compile(r.path), literal: !/[:*]/.test(r.path) };
        const key = bucketOf(r.path);
        if (key === undefined || /[:*]/.test(key)) this.anywhere.push(route);
        else this.buckets.set(key, [...(this.buckets.get(key) ?? []), route]);
      }
    }
    const key = bucketOf(path);
    const bucket = (key !== undefined && this.buckets.get(key)) || [];
    return this.anywhere.length ? [...bucket, ...this.anywhere] : bucket;
  }

  /** Whether some route answers this path, by any method. */
  knows(path: string): boolean {
    return this.candidates(path).some((r) => r.regex.test(path));
  }

  /** Throws NOT_FOUND or METHOD_NOT_ALLOWED unless some route answers this method and path. */
  check(method: string, path: string): void {
    const wanted = method === "HEAD" ? "GET" : method;
    const matching = this.candidates(path).filter((r) => r.regex.test(path));
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
