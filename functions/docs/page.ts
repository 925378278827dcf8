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

/**
 * Kept out of the page so the Content-Security-Policy can forbid inline scripts.
 *
 * Swagger UI's own filter keeps the tags whose name holds what is typed; the
 * plugin here replaces it (its `fn.opsFilter`) with one over operations: each
 * word typed must be in the operation's method, path, summary, operationId or
 * tag, so "post room", "/me" or "medication" find what they name.
 *
 * Every operation answers about ten error statuses, all the one Error schema;
 * shown whole, each takes a screenful of example. CompactErrors shows an
 * error status on one line (its description and code) and the whole answer
 * at a click, so an expanded operation reads as its parameters, its success
 * and a list of what can go wrong.
 */
export const START_SCRIPT = `const OperationFilter = () => ({
  fn: {
    opsFilter: (taggedOps, phrase) => {
      const words = String(phrase).toLowerCase().split(/\\s+/).filter(Boolean);
      if (words.length === 0) return taggedOps;
      return taggedOps
        .map((tagged, tag) =>
          tagged.set(
            "operations",
            tagged.get("operations").filter((op) => {
              const text = [
                tag,
                op.get("method"),
                op.get("path"),
                op.getIn(["operation", "summary"]),
                op.getIn(["operation", "operationId"]),
              ].join(" ").toLowerCase();
              return words.every((word) => text.includes(word));
            }),
          ),
        )
        .filter((tagged) => tagged.get("operations").size > 0);
    },
  },
});

const CompactErrors = (system) => ({
  wrapComponents: {
    response: (Original) => (props) => {
      const h = system.React.createElement;
      const [whole, setWhole] = system.React.useState(false);
      if (whole || !(Number(props.code) >= 400)) return h(Original, props);
      const Markdown = props.getComponent("Markdown", true);
      const code = props.response.getIn(["content", "application/json", "example", "error", "code"]);
      return h(
        "tr",
        { className: "response compact-error" },
        h("td", { className: "response-col_status" }, props.code),
        h(
          "td",
          { className: "response-col_description", colSpan: props.specSelectors.isOAS3() ? 2 : 1 },
          h(Markdown, { source: props.response.get("description") }),
          h(
            "button",
            { type: "button", className: "btn btn-sm show-error", onClick: () => setWhole(true) },
            code ? "Example: " + code : "Example",
          ),
        ),
      );
    },
  },
});

window.ui = SwaggerUIBundle({
  url: "api/v1/openapi.json",
  dom_id: "#swagger-ui",
  plugins: [OperationFilter, CompactErrors],
  // An operation's address in the URL (#/participants/getParticipants): links to one, and the back button, work.
  deepLinking: true,
  defaultModelsExpandDepth: 0,
  // The filter box over the operations (see OperationFilter).
  filter: true,
  // The key entered under Authorize is kept in this browser's localStorage across reloads (Logout forgets it).
  persistAuthorization: true,
  // Every operation opens ready to send: no "Try it out" click first.
  tryItOutEnabled: true,
  displayRequestDuration: true,
  // No badge fetched from validator.swagger.io: the page loads nothing from elsewhere.
  validatorUrl: null,
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
