import type { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../app-env.ts";
import { ApiError, notFound } from "../errors.ts";
import { KEY_ORIGIN } from "../http/openapi.ts";
import { VERSION } from "../version.ts";
import { clientReady } from "./client-ready.ts";
import { DOCS_CSP, DOCS_PAGE, START_SCRIPT } from "./page.ts";

// A template literal: the deploy bundler reads quoted strings after `export` as import paths.
export const OPENAPI_PATH = `/api/v1/openapi.json`;
export const DOCS_PATH = "/docs";

/** The routes that serve the documentation itself; the document describes every other route. */
export const DOC_ROUTES = [
  { method: "GET", path: OPENAPI_PATH },
  { method: "GET", path: DOCS_PATH },
  { method: "GET", path: `${DOCS_PATH}/` },
  { method: "GET", path: `${DOCS_PATH}/assets/:name` },
  { method: "GET", path: `${DOCS_PATH}/guides/:name` },
];

/** Reads one of docs/ by file name (one of GUIDES); undefined when this deployment does not carry the file. */
export type GuideReader = (file: string) => Promise<string | undefined>;

const CONTENT_TYPES: Record<string, string> = {
  js: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
  txt: "text/plain; charset=utf-8",
};

/**
 * The guides in the repository's docs/, which the description links to. The
 * runtime's entry reads them from the checkout (node/server.ts, and
 * supabase/functions/api/index.ts under `npm run serve:edge`); a deployed
 * function carries no docs/, so there the link answers 404 naming the
 * repository's folder.
 */
export const GUIDES: Array<{ file: string; title: string }> = [
  { file: "api.md", title: "The API in detail: the data model, conventions, every resource" },
  { file: "security.md", title: "Security: credentials, roles, scopes, need-to-know records" },
  { file: "events.md", title: "Events and webhooks" },
  { file: "photos.md", title: "Photos" },
  { file: "reporting.md", title: "Reporting views (SQL)" },
  { file: "operations.md", title: "Running the service" },
  { file: "supabase.md", title: "On Supabase" },
  { file: "architecture.md", title: "How it is built" },
];

const DESCRIPTION = [
  "Multi-tenant administration of camps (instances), their groups, blocks, rooms and participants.",
  "Authenticate with `X-API-Key: <key>` or `Authorization: Bearer <jwt>`; every call sees only the caller's tenant.",
  `**Where a key comes from.** ${KEY_ORIGIN} Enter it under **Authorize** (ApiKey): this page keeps it across reloads until **Logout**.`,
  "Success: `{success: true, data, meta?}`; errors: `{success: false, error: {code, message, details?, request_id}}`.",
  [
    "**Headers on every answer**, listed here once rather than under each status:",
    "`X-Request-Id` (the server's id of the request, also in `error.request_id` and the log);",
    'and, on every answer to a credential but a 401 when rate limits are on, `RateLimit` (`"default";r=<left>;t=<seconds to reset>`)',
    'and `RateLimit-Policy` (`"default";q=<requests>;w=<window seconds>`).',
    "Each status lists only its own: `ETag`, `Location`, `Idempotent-Replayed`, `Retry-After`, `WWW-Authenticate`, `Cache-Control`, `Content-Disposition`.",
  ].join(" "),
  [
    "**Guides** (the repository's `docs/`, served here as text):",
    ...GUIDES.map(({ file, title }) => `[${file}](docs/guides/${file}) — ${title}`),
  ].join("\n- "),
].join("\n\n");

/**
 * GET /api/v1/openapi.json (the OpenAPI 3.1 document, built from the same zod
 * schemas that validate requests) and GET /docs (Swagger UI, served from this
 * service: no CDN). Public: mount before the authentication middleware, whose
 * chain the handlers here end.
 */
export function mountDocs(app: OpenAPIHono<AppEnv>, readGuide?: GuideReader): void {
  let document: unknown;

  app.get(OPENAPI_PATH, (c) => {
    // Built on first request, once every router is mounted.
    const publicUrl = c.get("config").PUBLIC_URL?.replace(/\/+$/, "");
    document ??= clientReady(
      app.getOpenAPI31Document({
        openapi: "3.1.0",
        info: {
          title: "Camp Administration Service API",
          version: VERSION,
          description: DESCRIPTION,
          // Whoever runs this service answers for it; the document has no other owner to name.
          contact: { name: "The operator of this service", ...(publicUrl ? { url: publicUrl } : {}) },
          // identifier: an OpenAPI 3.1 field that the 3.0 types of the generator lack.
          license: { name: "Proprietary", identifier: "LicenseRef-Proprietary" } as { name: string },
        },
        servers: [
          // The operator's address, for generated clients; else relative to this document, which names the
          // right base on Node and under /functions/v1/api alike.
          ...(publicUrl ? [{ url: publicUrl, description: "This service" }] : []),
          { url: "../..", description: "This server (relative to the document)" },
        ],
      }),
    );
    return c.json(document);
  });

  app.get(DOCS_PATH, (c) => {
    c.header("Content-Security-Policy", DOCS_CSP);
    return c.html(DOCS_PAGE);
  });

  // The page loads its assets relative to /docs; with a trailing slash they would miss.
  app.get(`${DOCS_PATH}/`, (c) => c.redirect("../docs", 301));

  app.get(`${DOCS_PATH}/assets/:name`, async (c) => {
    const name = c.req.param("name");
    // Loaded on first use: the 2 MB of Swagger UI stays out of the cold start.
    const text = name === "start.js" ? START_SCRIPT : (await import("./assets.generated.ts")).ASSETS[name];
    if (text === undefined) throw notFound("asset");
    c.header("Content-Type", CONTENT_TYPES[name.split(".").pop() ?? ""] ?? "application/octet-stream");
    c.header("Cache-Control", "public, max-age=3600");
    return c.body(text);
  });

  app.get(`${DOCS_PATH}/guides/:name`, async (c) => {
    const name = c.req.param("name");
    // Only the listed files: the name never reaches a path unchecked.
    if (!GUIDES.some((guide) => guide.file === name)) throw notFound("guide");
    const text = await readGuide?.(name);
    if (text === undefined) {
      throw new ApiError("NOT_FOUND", `this deployment does not carry the guides: read docs/${name} in the service's repository`);
    }
    // Markdown as text: readable in a browser as it is, and what a Markdown viewer or editor wants.
    c.header("Content-Type", "text/markdown; charset=utf-8");
    c.header("Cache-Control", "no-cache");
    return c.body(text);
  });
}
