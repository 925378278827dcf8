import { createServer } from "node:http";
import pg from "pg";
import { decodeVars, FLOOR_VARS_HEADER, type FloorReply, type FloorRequest, type Template } from "../harness/server-protocol.ts";
import { replayOnce } from "./raw.ts";

/**
 * The Node floor: a bare node:http server on a pg pool that answers each
 * request by replaying the statements the API sent for one (bench/peers/raw.ts),
 * with the request's values, and writes the values of the rows they returned
 * as text. No framework, routing, validation, authentication code or JSON
 * encoding: less than any real Node API does for the same request. So API/floor
 * is what our code costs, floor/raw what Node's HTTP and a second process
 * cost, and the floor's p99 is as low as the API's could go on this machine
 * with these statements. Driven over IPC by bench/harness/server-process.ts.
 */

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.DB_POOL_SIZE) });
pool.on("error", () => {});
let templates: Template[] = [];
let status = 200;

/** The rows' values as they came from pg, one row a line: the least work that puts the result on the wire. */
const asText = (rows: unknown[]) =>
  rows
    .map((row) =>
      Object.values(row as Record<string, unknown>)
        .map(String)
        .join("\t"),
    )
    .join("\n");

const server = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on("data", (chunk: Buffer) => chunks.push(chunk));
  request.on("end", async () => {
    if (request.url === "/health") {
      response.writeHead(200).end();
      return;
    }
    try {
      // A body is read and parsed, as any API must; its values come in the header.
      if (chunks.length > 0) JSON.parse(Buffer.concat(chunks).toString("utf8"));
      const rows = await replayOnce(pool, templates, decodeVars(String(request.headers[FLOOR_VARS_HEADER])));
      response.writeHead(status, { "content-type": "text/plain" }).end(asText(rows));
    } catch (error) {
      response.writeHead(500, { "content-type": "text/plain" }).end((error as Error).message);
    }
  });
});

process.on("message", (message: FloorRequest) => {
  templates = message.templates;
  status = message.status;
  process.send?.({ type: "serving" } satisfies FloorReply);
});

// The bench that started this server is gone: nothing else would stop it.
process.on("disconnect", () => process.exit(0));

server.listen(Number(process.env.PORT), "127.0.0.1");
