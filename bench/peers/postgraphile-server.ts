import { createServer, type IncomingMessage } from "node:http";
import pg from "pg";
import { postgraphile } from "postgraphile";
import { TENANT_HEADER, USER_HEADER } from "./peer-protocol.ts";

/**
 * PostGraphile 4 (from npm) on the same database, role and RLS as the API:
 * `pgSettings` sets the API role and the tenant claims from the bench's
 * headers for each request (no credential is checked), and PostGraphile runs
 * its usual `begin`, settings, query, `commit`. Production-like options: no
 * GraphiQL, no query log, no schema watch; the options its docs recommend for
 * speed (dynamicJson, setofFunctionsContainNulls false).
 */

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.DB_POOL_SIZE || 10) });
pool.on("error", () => {});

const middleware = postgraphile(pool, "public", {
  graphiql: false,
  disableQueryLog: true,
  dynamicJson: true,
  setofFunctionsContainNulls: false,
  ignoreRBAC: false,
  watchPg: false,
  retryOnInitFail: false,
  pgSettings: (request: IncomingMessage) => ({
    role: "camp_api",
    "request.jwt.claims": JSON.stringify({
      role: "camp_api",
      tenant_id: request.headers[TENANT_HEADER],
      sub: request.headers[USER_HEADER],
      app_role: "admin",
    }),
  }),
});

const server = createServer((request, response) => {
  if (request.url === "/health") {
    response.writeHead(200).end();
    return;
  }
  middleware(request, response);
});

process.on("disconnect", () => process.exit(0));
server.listen(Number(process.env.PORT), "127.0.0.1");
