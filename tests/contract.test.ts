import { createRoute, z } from "@hono/zod-openapi";
import { afterAll, describe, expect, it } from "vitest";
import { Database } from "../functions/db/database.ts";
import { clientReady } from "../functions/docs/client-ready.ts";
import { dataOf, json, newRouter, registerContract } from "../functions/http/openapi.ts";
import { operation } from "../functions/http/operation.ts";
import { takeViolations, validated } from "./support/contract.ts";
import { call, testApp } from "./support/fixtures.ts";

/**
 * The response validation every HTTP test runs under (tests/support/contract.ts)
 * catches what it is there to catch: an answer with a status, a header or a
 * body the document does not declare. A small app declared like the service's
 * routes answers wrongly on purpose; the violations are taken here, so they
 * do not fail this file's tests through contract-setup.ts.
 */

function misbehaving() {
  const router = newRouter();
  const Thing = z.object({ id: z.string(), size: z.number().int() }).openapi("Thing");
  const get = createRoute(
    operation({
      method: "get",
      path: "/api/v1/things/{id}",
      summary: "Get a thing",
      description: "A thing that answers wrongly on purpose",
      tags: ["things"],
      etag: true,
      request: { params: z.object({ id: z.string() }) },
      responses: { 200: json(dataOf(Thing), "The thing") },
    }),
  );
  // Typed loosely: answering what the route does not declare is the point.
  router.openapi(get, ((c: never) => answer(c)) as never);
  // biome-ignore lint/suspicious/noExplicitAny: see above
  function answer(c: any) {
    const id = c.req.valid("param").id;
    if (id !== "no-request-id") c.header("X-Request-Id", "r1");
    const error = { success: false, error: { code: "CONFLICT", message: "no", request_id: "r1" } };
    if (id === "teapot") return c.json(error, 418);
    if (id === "wrong-code") return c.json(error, 404);
    if (id === "debug") c.header("X-Debug", "1");
    if (id !== "no-etag") c.header("ETag", '"1"');
    if (id === "bad-body") return c.json({ success: true, data: { id, size: "large" } }, 200);
    return c.json({ success: true as const, data: { id, size: 1 } }, 200);
  }
  // A route the document does not have.
  router.get("/api/v1/undeclared", (c) => c.json({ success: true }));
  registerContract(router);
  router.get("/api/v1/openapi.json", (c) =>
    c.json(clientReady(router.getOpenAPI31Document({ openapi: "3.1.0", info: { title: "t", version: "1" } }))),
  );
  return validated(router);
}

describe("the response validation of the HTTP tests", () => {
  const app = misbehaving();
  const get = async (id: string) => {
    takeViolations();
    const res = await app.request(`/api/v1/things/${id}`);
    return { status: res.status, violations: takeViolations() };
  };

  it("lets a declared answer through", async () => {
    expect(await get("ok")).toEqual({ status: 200, violations: [] });
  });

  it("fails an answer with a status the operation does not declare", async () => {
    const { violations } = await get("teapot");
    expect(violations).toEqual([expect.stringMatching(/GET \/api\/v1\/things\/teapot → 418: status 418 is not declared/)]);
  });

  it("fails an answer with a header the operation does not declare", async () => {
    const { violations } = await get("debug");
    expect(violations).toEqual([expect.stringMatching(/header x-debug is not declared/)]);
  });

  it("fails an answer without a header the document says is always sent", async () => {
    const { violations } = await get("no-etag");
    expect(violations).toEqual([expect.stringMatching(/required header ETag is missing/)]);
  });

  it("fails an answer without a header declared once for every answer", async () => {
    const { violations } = await get("no-request-id");
    expect(violations).toEqual([expect.stringMatching(/required header X-Request-Id is missing/)]);
  });

  it("fails a body that does not match the answer's schema", async () => {
    const { violations } = await get("bad-body");
    expect(violations).toEqual([expect.stringMatching(/body\/data\/size must be integer/)]);
  });

  it("fails an error whose code belongs to another status", async () => {
    const { violations } = await get("wrong-code");
    expect(violations).toEqual([expect.stringMatching(/error code CONFLICT belongs to status 409/)]);
  });

  it("fails an answer to a path the document does not have, unless it is a 404", async () => {
    takeViolations();
    await app.request("/api/v1/undeclared");
    expect(takeViolations()).toEqual([expect.stringMatching(/no operation is declared for this method and path/)]);
  });
});

describe("the OpenAPI document of the service", () => {
  // The document needs no database; nothing listens here and nothing connects.
  const db = new Database("postgresql://postgres@127.0.0.1:1/none");
  afterAll(() => db.close());
  const app = testApp(db);
  const METHODS = ["get", "put", "post", "delete", "patch"];
  // biome-ignore lint/suspicious/noExplicitAny: the document is plain JSON here
  const operations = async (): Promise<Array<{ method: string; path: string; op: any }>> => {
    const document = (await call(app, "GET", "/api/v1/openapi.json")).body;
    return Object.entries(document.paths).flatMap(([path, item]) =>
      Object.entries(item as object)
        .filter(([method]) => METHODS.includes(method))
        .map(([method, op]) => ({ method, path, op })),
    );
  };

  it("declares 403 and the body statuses on every write, 401 and 429 on every authenticated operation", async () => {
    const missing: string[] = [];
    for (const { method, path, op } of await operations()) {
      const statuses = Object.keys(op.responses);
      const want = ["400", "500", "503"];
      if (op.security.length > 0) want.push("401", "429");
      if (method !== "get") want.push("413", "415");
      if (method !== "get" && op.security.length > 0) want.push("403");
      if (method === "post" && op.security.length > 0) want.push("409");
      for (const status of want) if (!statuses.includes(status)) missing.push(`${method} ${path} ${status}`);
    }
    expect(missing).toEqual([]);
  });

  it("reads Idempotency-Key on every authenticated POST and If-Match wherever it answers 412", async () => {
    const missing: string[] = [];
    for (const { method, path, op } of await operations()) {
      const parameters = JSON.stringify(op.parameters ?? []);
      if (method === "post" && op.security.length > 0 && !parameters.includes("IdempotencyKey")) missing.push(`${path} key`);
      if (op.responses["412"] && !parameters.includes("IfMatch")) missing.push(`${method} ${path} If-Match`);
      if (op.responses["304"] && !parameters.includes("IfNoneMatch")) missing.push(`${method} ${path} If-None-Match`);
    }
    expect(missing).toEqual([]);
  });

  it("declares on a 304 the validators and caching headers only, never a download's Content-Disposition", async () => {
    const document = (await call(app, "GET", "/api/v1/openapi.json")).body;
    const allowed = new Set([
      "ETag",
      "Cache-Control",
      "Expires",
      "Vary",
      "Content-Location",
      "X-Request-Id",
      "RateLimit",
      "RateLimit-Policy",
    ]);
    const extra: string[] = [];
    let seen = 0;
    for (const { method, path, op } of await operations()) {
      const answer = op.responses["304"];
      if (!answer) continue;
      seen++;
      const resolved = answer.$ref ? document.components.responses[answer.$ref.split("/").pop()] : answer;
      for (const name of Object.keys(resolved.headers ?? {})) if (!allowed.has(name)) extra.push(`${method} ${path} ${name}`);
    }
    expect(seen).toBeGreaterThan(5);
    expect(extra).toEqual([]);
  });

  it("gives every operation a summary and a tag that the document describes", async () => {
    const document = (await call(app, "GET", "/api/v1/openapi.json")).body;
    const described = new Set(
      document.tags.filter((t: { description?: string }) => t.description).map((t: { name: string }) => t.name),
    );
    const lacking = (await operations())
      .filter(({ op }) => !op.summary || op.tags?.length !== 1 || !described.has(op.tags[0]))
      .map(({ method, path }) => `${method} ${path}`);
    expect(lacking).toEqual([]);
    // "Create a instance": the article before a vowel sound.
    const summaries = (await operations()).map(({ op }) => op.summary as string);
    expect(summaries.filter((summary) => /\ba [aeio]/i.test(summary))).toEqual([]);
  });

  it("shows each error status's own code in its example", async () => {
    const document = (await call(app, "GET", "/api/v1/openapi.json")).body;
    for (const [name, response] of Object.entries(document.components.responses) as Array<[string, { content: object }]>) {
      const example = (response.content as Record<string, { example: { error: { code: string } } }>)["application/json"]?.example;
      expect(example?.error.code.replace(/_/g, "").toLowerCase(), name).toBe(name.toLowerCase());
    }
  });
});
