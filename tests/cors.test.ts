import { Hono } from "hono";
import { cors as honoCors } from "hono/cors";
import { describe, expect, it } from "vitest";
import { type CorsOptions, cors } from "../functions/http/cors.ts";

/**
 * functions/http/cors.ts sets the headers hono/cors sets, only later (after
 * the route made its response; see the module). This holds it to the
 * library: the same requests through both, answered with the same CORS
 * headers, for any origin and for a list of origins.
 */

const OPTIONS: CorsOptions = {
  allowHeaders: ["Content-Type", "X-API-Key", "Idempotency-Key"],
  allowMethods: ["GET", "HEAD", "POST", "PATCH", "DELETE", "OPTIONS"],
  exposeHeaders: ["ETag", "X-Request-Id", "RateLimit"],
  maxAgeSeconds: 600,
};

function pair(origins?: string[]) {
  const ours = new Hono().use("*", cors({ ...OPTIONS, origins }));
  const library = new Hono().use(
    "*",
    honoCors({
      origin: origins ?? "*",
      allowHeaders: OPTIONS.allowHeaders,
      allowMethods: OPTIONS.allowMethods,
      exposeHeaders: OPTIONS.exposeHeaders,
      maxAge: OPTIONS.maxAgeSeconds,
    }),
  );
  for (const app of [ours, library]) {
    app.get("/thing", (c) => c.json({ ok: true }));
    app.post("/thing", (c) => c.json({ made: true }, 201));
  }
  return { ours, library };
}

/** What a browser reads of an answer; the exposed headers only matter where an origin is allowed. */
async function seen(res: Response) {
  const allowOrigin = res.headers.get("access-control-allow-origin");
  return {
    status: res.status,
    body: await res.text(),
    allowOrigin,
    allowMethods: res.headers.get("access-control-allow-methods"),
    allowHeaders: res.headers.get("access-control-allow-headers"),
    maxAge: res.headers.get("access-control-max-age"),
    credentials: res.headers.get("access-control-allow-credentials"),
    expose: allowOrigin && res.status !== 204 ? res.headers.get("access-control-expose-headers") : null,
    vary: (res.headers.get("vary") ?? "")
      .split(",")
      .map((v) => v.trim().toLowerCase())
      .filter(Boolean)
      .sort(),
  };
}

const REQUESTS: Array<[string, RequestInit]> = [
  ["a GET without Origin", { method: "GET" }],
  ["a GET from the allowed origin", { method: "GET", headers: { Origin: "https://admin.example" } }],
  ["a GET from another origin", { method: "GET", headers: { Origin: "https://evil.example" } }],
  [
    "a POST from the allowed origin",
    { method: "POST", headers: { Origin: "https://admin.example", "Content-Type": "application/json" }, body: "{}" },
  ],
  [
    "a preflight from the allowed origin",
    {
      method: "OPTIONS",
      headers: {
        Origin: "https://admin.example",
        "Access-Control-Request-Method": "PATCH",
        "Access-Control-Request-Headers": "x-api-key, idempotency-key",
      },
    },
  ],
  [
    "a preflight from another origin",
    { method: "OPTIONS", headers: { Origin: "https://evil.example", "Access-Control-Request-Method": "DELETE" } },
  ],
  ["a preflight without Origin", { method: "OPTIONS" }],
];

describe.each([
  ["any origin", undefined],
  ["a list of origins", ["https://admin.example", "https://other.example"]],
])("CORS for %s, as hono/cors answers", (_, origins) => {
  it.each(REQUESTS)("%s", async (_name, init) => {
    const { ours, library } = pair(origins);
    const expected = await seen(await library.request("/thing", init));
    expect(await seen(await ours.request("/thing", init))).toEqual(expected);
  });
});
