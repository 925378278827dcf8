/**
 * The reference page and its start-up script. Every URL is relative, so the
 * page works wherever the service is mounted: `/docs` on Node, and
 * `/functions/v1/api/docs` on Supabase, where the function's name comes first.
 */
export const DOCS_PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Camp Administration Service API</title>
  <link rel="stylesheet" href="docs/assets/swagger-ui.css">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="docs/assets/swagger-ui-bundle.js"></script>
  <script src="docs/assets/start.js"></script>
</body>
</html>
`;

/** Kept out of the page so the Content-Security-Policy can forbid inline scripts. */
export const START_SCRIPT = `window.ui = SwaggerUIBundle({
  url: "api/v1/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  defaultModelsExpandDepth: 0,
  // A box over the operations that keeps those whose tag matches what is typed.
  filter: true,
  // The key entered under Authorize is kept in this browser's localStorage across reloads (Logout forgets it).
  persistAuthorization: true,
  displayRequestDuration: true,
});
`;

/** Everything from the service itself: the page works offline and loads nothing from elsewhere. */
export const DOCS_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  // Swagger UI sets style attributes from script.
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
].join("; ");
