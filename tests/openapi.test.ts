import { readdirSync, readFileSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { Database } from "../functions/db/database.ts";
import { DOC_ROUTES, GUIDES } from "../functions/docs/routes.ts";
import { readGuide } from "../node/guides.ts";
import { renderAssetsModule } from "../scripts/docs-assets.ts";
import { call, testApp } from "./support/fixtures.ts";

// The documentation needs no database; nothing listens here and nothing connects.
const db = new Database("postgresql://postgres@127.0.0.1:1/none");
afterAll(() => db.close());
const app = testApp(db);

const METHODS = ["get", "put", "post", "delete", "patch", "head", "options", "trace"];

/** `/participants/:id` as OpenAPI writes it: `/participants/{id}`. */
const openApiPath = (path: string) => path.replace(/:(\w+)/g, "{$1}");

function servedRoutes(): Set<string> {
  const docs = new Set(DOC_ROUTES.map((r) => `${r.method} ${r.path}`));
  return new Set(
    app.routes
      .filter((r) => r.method !== "ALL" && !docs.has(`${r.method} ${r.path}`))
      .map((r) => `${r.method} ${openApiPath(r.path)}`),
  );
}

function documentedRoutes(document: { paths: Record<string, Record<string, unknown>> }): Set<string> {
  return new Set(
    Object.entries(document.paths).flatMap(([path, item]) =>
      Object.keys(item)
        .filter((key) => METHODS.includes(key))
        .map((method) => `${method.toUpperCase()} ${path}`),
    ),
  );
}

describe("GET /api/v1/openapi.json", () => {
  it("serves an OpenAPI 3.1 document without a credential", async () => {
    const res = await call(app, "GET", "/api/v1/openapi.json");
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe("3.1.0");
    expect(res.body.info).toMatchObject({ title: expect.any(String), version: expect.any(String) });
    expect(Object.keys(res.body.components.securitySchemes).sort()).toEqual(["ApiKey", "Bearer"]);
  });

  it("documents every route the app serves, and no route it does not serve", async () => {
    const res = await call(app, "GET", "/api/v1/openapi.json");
    expect(res.status).toBe(200);
    const documented = documentedRoutes(res.body);
    const served = servedRoutes();
    expect([...served].filter((r) => !documented.has(r)).sort()).toEqual([]);
    expect([...documented].filter((r) => !served.has(r)).sort()).toEqual([]);
    expect(served.has("POST /api/v1/participants")).toBe(true);
  });

  it("declares both credentials on every operation under /api/v1", async () => {
    const res = await call(app, "GET", "/api/v1/openapi.json");
    expect(res.status).toBe(200);
    const missing = Object.entries(res.body.paths as Record<string, Record<string, { security?: unknown[] }>>)
      .filter(([path]) => path.startsWith("/api/v1/"))
      .flatMap(([path, item]) =>
        Object.entries(item)
          .filter(([method, op]) => METHODS.includes(method) && JSON.stringify(op.security) !== '[{"ApiKey":[]},{"Bearer":[]}]')
          .map(([method]) => `${method} ${path}`),
      );
    expect(missing).toEqual([]);
  });

  it("names its server relative to itself, so it is right on Node and under /functions/v1/api", async () => {
    const res = await call(app, "GET", "/api/v1/openapi.json");
    expect(res.status).toBe(200);
    const server = res.body.servers[0].url as string;
    expect(new URL(server, "http://h/api/v1/openapi.json").pathname).toBe("/");
    expect(new URL(server, "http://h/functions/v1/api/api/v1/openapi.json").pathname).toBe("/functions/v1/api/");
  });
});

describe("GET /docs", () => {
  it("serves the reference page, which loads nothing from other hosts", async () => {
    const res = await call(app, "GET", "/docs");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    expect(res.headers.get("content-security-policy")).toContain("default-src 'self'");
    expect(res.body).toContain('id="swagger-ui"');
    expect(res.body).not.toMatch(/(src|href)="(https?:)?\/\//);
  });

  it("serves the page's scripts and styles from the service itself", async () => {
    for (const [name, type] of [
      ["swagger-ui-bundle.js", "text/javascript"],
      ["swagger-ui.css", "text/css"],
      ["start.js", "text/javascript"],
    ]) {
      const res = await call(app, "GET", `/docs/assets/${name}`);
      expect(res.status, name).toBe(200);
      expect(res.headers.get("content-type"), name).toMatch(new RegExp(`^${type}`));
    }
  });

  it("sends the page with a trailing slash to the page (its assets are relative to /docs)", async () => {
    const res = await call(app, "GET", "/docs/");
    expect(res.status).toBe(301);
    expect(res.headers.get("location")).toBe("../docs");
  });

  it("answers 404 NOT_FOUND for an asset it does not have", async () => {
    const res = await call(app, "GET", "/docs/assets/missing.js");
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe("NOT_FOUND");
  });

  it("serves each guide the description links to, only those, and says where they are when it has none", async () => {
    const document = (await call(app, "GET", "/api/v1/openapi.json")).body;
    const linked = [...document.info.description.matchAll(/\]\(docs\/guides\/([a-z-]+\.md)\)/g)].map((m) => m[1]);
    expect(linked).toEqual(GUIDES.map((guide) => guide.file));
    // A guide added to docs/ is listed too (functions/docs/routes.ts GUIDES).
    const inDocs = readdirSync(new URL("../docs/", import.meta.url)).filter((name) => name.endsWith(".md"));
    expect([...linked].sort()).toEqual(inDocs.sort());
    const withGuides = testApp(db, {}, { readGuide });
    for (const file of linked) {
      const res = await call(withGuides, "GET", `/docs/guides/${file}`);
      expect(res.status, file).toBe(200);
      expect(res.headers.get("content-type")).toMatch(/^text\/markdown; charset=utf-8/);
      expect(res.body, file).toBe(readFileSync(new URL(`../docs/${file}`, import.meta.url), "utf8"));
    }
    // A name outside the list never reaches the file system.
    for (const name of ["..%2Fpackage.json", "STYLE.md", "api.md.bak"]) {
      expect((await call(withGuides, "GET", `/docs/guides/${name}`)).status, name).toBe(404);
    }
    // A runtime without docs/ (a deployed Edge Function) names the file in the repository.
    const res = await call(app, "GET", "/docs/guides/api.md");
    expect(res.status).toBe(404);
    expect(res.body.error.message).toContain("docs/api.md in the service's repository");
  });

  it("embeds the installed swagger-ui-dist (run npm run gen:docs-assets after upgrading it)", () => {
    const committed = readFileSync(new URL("../functions/docs/assets.generated.ts", import.meta.url), "utf8");
    expect(committed === renderAssetsModule()).toBe(true);
  });
});
