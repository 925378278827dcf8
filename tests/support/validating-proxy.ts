import { createServer, request as forward, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { contractOf, isJson, record } from "./contract.ts";

/** Bodies larger than this are passed on unchecked (a CSV export, a photo): their type is still checked. */
const MAX_CHECKED_BODY = 8 * 1024 * 1024;

/** Headers of one hop, which a proxy does not pass on. */
const HOP_BY_HOP = new Set(["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te", "trailer"]);

export interface ValidatingProxy {
  url: string;
  close(): Promise<void>;
}

function toHeaders(raw: IncomingHttpHeaders): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(raw)) {
    if (value === undefined || HOP_BY_HOP.has(name)) continue;
    for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
  }
  return headers;
}

/**
 * A validating proxy in front of a server started as a process: requests pass
 * through unchanged and answers come back unchanged, as they stream, while
 * each answer is checked against the server's own OpenAPI document
 * (contract.ts). A connection the server drops is dropped here too, so a
 * client sees what it would see without the proxy.
 */
export async function validatingProxy(target: { host: string; port: number }): Promise<ValidatingProxy> {
  const documentText = await (await fetch(`http://${target.host}:${target.port}/api/v1/openapi.json`)).text();
  const contract = contractOf(documentText);

  const server = createServer((incoming, outgoing) => {
    const headers = { ...incoming.headers };
    for (const name of HOP_BY_HOP) delete headers[name];
    const upstream = forward(
      { host: target.host, port: target.port, method: incoming.method, path: incoming.url, headers },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.rawHeaders);
        const json = isJson(answer.headers["content-type"] ?? null);
        const chunks: Buffer[] = [];
        let size = 0;
        answer.on("data", (chunk: Buffer) => {
          size += chunk.length;
          if (json && size <= MAX_CHECKED_BODY) chunks.push(chunk);
        });
        answer.on("end", () => {
          record(contract, {
            method: incoming.method ?? "GET",
            path: new URL(incoming.url ?? "/", "http://proxy").pathname,
            status: answer.statusCode ?? 0,
            headers: toHeaders(answer.headers),
            body: json && size <= MAX_CHECKED_BODY ? Buffer.concat(chunks).toString("utf8") : undefined,
            size,
          });
        });
        answer.on("error", () => outgoing.destroy());
        answer.pipe(outgoing);
      },
    );
    upstream.on("error", () => outgoing.destroy());
    incoming.on("error", () => upstream.destroy());
    // A client that goes away takes its request to the server with it.
    outgoing.on("close", () => {
      if (!outgoing.writableFinished) upstream.destroy();
    });
    incoming.pipe(upstream);
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}
