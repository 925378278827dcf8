import type { OpenAPIHono } from "@hono/zod-openapi";
import { ApiError } from "../errors.ts";

/** How many unknown parameters an answer names; the rest are counted. */
const NAMED_AT_MOST = 5;
/** A name longer than this is cut in the answer (the URL itself may be up to 16 KB). */
const NAME_AT_MOST = 64;

const shortName = (name: string) => (name.length > NAME_AT_MOST ? `${name.slice(0, NAME_AT_MOST)}…` : name);

interface Rule {
  method: string;
  regex: RegExp;
  /** Literal path segments: `/participants/export.csv` beats `/participants/{id}`. */
  literals: number;
  keys: Set<string>;
}

/**
 * Query parameters are strict: one a route does not declare is a 400 naming
 * it, not silently ignored (`?name=x` on a list would otherwise return
 * everything). Each route's declared parameters come from its OpenAPI
 * definition, the same zod schema that validates them, so there is no second
 * list to keep in step.
 */
export class QueryRules {
  private rules?: Rule[];

  constructor(private readonly app: OpenAPIHono<never>) {}

  private build(): Rule[] {
    // Built on first use, once every router is mounted.
    this.rules ??= this.app.openAPIRegistry.definitions.flatMap((definition) => {
      if (definition.type !== "route") return [];
      const { method, path, request } = definition.route;
      const shape = (request?.query as { shape?: Record<string, unknown> } | undefined)?.shape ?? {};
      const segments = path.split("/");
      const source = segments.map((s) => (/^\{.+\}$/.test(s) ? "[^/]+" : s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))).join("/");
      return [
        {
          method: method.toUpperCase(),
          regex: new RegExp(`^${source}$`),
          literals: segments.filter((s) => !/^\{.+\}$/.test(s)).length,
          keys: new Set(Object.keys(shape)),
        },
      ];
    });
    return this.rules;
  }

  /**
   * Throws VALIDATION_ERROR naming the query parameters the route does not
   * take: the first few of them, each cut short, and how many more there are,
   * so a request with thousands of them gets an answer of a few hundred bytes.
   */
  check(method: string, path: string, keys: string[]): void {
    if (keys.length === 0) return;
    const wanted = method === "HEAD" ? "GET" : method;
    const rule = this.build()
      .filter((r) => r.method === wanted && r.regex.test(path))
      .sort((a, b) => b.literals - a.literals)[0];
    // Routes outside the document (the documentation itself) take what they take.
    if (!rule) return;
    const unknown = keys.filter((key) => !rule.keys.has(key));
    if (unknown.length === 0) return;
    const named = unknown.slice(0, NAMED_AT_MOST).map(shortName);
    const more = unknown.length - named.length;
    const details = named.map((field) => ({ field, issue: "is not a query parameter of this operation" }));
    if (more > 0) details.push({ field: "query", issue: `has ${more} more unknown parameter${more === 1 ? "" : "s"}` });
    const list = named.join(", ") + (more > 0 ? ` and ${more} more` : "");
    throw new ApiError("VALIDATION_ERROR", `unknown query parameter${unknown.length === 1 ? "" : "s"}: ${list}`, details);
  }
}
