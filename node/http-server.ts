import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { Server as NetServer, type Socket } from "node:net";
import { createAdaptorServer } from "@hono/node-server";
import { serviceUnavailable } from "../functions/errors.ts";
import { errorBody } from "../functions/http/envelope.ts";

export interface HttpServer {
  port: number;
  /** The address it is bound to, as the system reports it (`127.0.0.1`, `0.0.0.0`, `::`). */
  address: string;
  /**
   * Stops taking connections and lets the requests in flight finish, for at
   * most `deadlineMs`; then cuts what is left. Resolves with how many were cut.
   */
  drain(deadlineMs: number): Promise<number>;
}

/** A request that arrives on a kept-alive connection while the server drains. */
function drainingResponse(): Response {
  const error = serviceUnavailable("the server is shutting down; retry on a new connection");
  return new Response(JSON.stringify(errorBody(error)), {
    status: 503,
    headers: { "Content-Type": "application/json", Connection: "close", ...error.headers },
  });
}

/**
 * An answer given before the request's body was read to its end (a 413 on a
 * chunked body, a 401 before an upload) closes the connection: the bytes
 * still coming are not a next request, and reading them all first would let a
 * client hold the socket with a body that never ends.
 */
function closeIfBodyUnread(response: Response, incoming: { complete: boolean; socket: Socket }): Response {
  if (incoming.complete) return response;
  lingerOnClose(incoming.socket);
  const headers = new Headers(response.headers);
  headers.set("Connection", "close");
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
}

/** How long a connection closed on an unread body keeps reading (and discarding) what still comes. */
const LINGER_MS = 2_000;

/**
 * A lingering close, as nginx and Apache do. Closing a socket while the client
 * is still sending makes the kernel answer with a reset, which can reach the
 * client before it has read the answer: it then sees a broken pipe instead of
 * the 413. So the server sends its FIN, reads and discards what still comes
 * until the client stops (its FIN) or LINGER_MS pass, and only then closes.
 * Node's HTTP server ends a `Connection: close` answer with destroySoon().
 */
function lingerOnClose(socket: Socket): void {
  socket.destroySoon = function lingering(this: Socket) {
    if (this.writable) this.end();
    if (this.readableEnded) return void this.destroy();
    const timer = setTimeout(() => this.destroy(), LINGER_MS);
    timer.unref();
    this.once("end", () => this.destroy());
    this.once("close", () => clearTimeout(timer));
    this.resume();
  };
}

/** How long a client may take (config.ts HTTP_*_TIMEOUT_MS). */
export interface HttpTimeouts {
  headersMs: number;
  requestMs: number;
  keepAliveMs: number;
}

/**
 * The Node HTTP server around the app's fetch, bound before anything else is
 * created, so a port in use fails the start cleanly. It counts the requests in
 * flight (a response counts until its last byte is sent, so a streamed export
 * is not cut) so that a shutdown can wait for them.
 *
 * A client that sends its headers a byte at a time (slowloris) or never ends
 * its body holds a socket and memory: Node's defaults give it 60 s for the
 * headers and 300 s for the request, checked only every 30 s. Here the
 * headers get `headersMs` (answered 408 and closed), the whole request
 * `requestMs`, both checked every second. Answers are not limited: a streamed
 * export or a waiting event feed takes what it takes once the request is in.
 */
export async function listen(
  fetch: (request: Request) => Response | Promise<Response>,
  port: number,
  hostname = "0.0.0.0",
  /** Node's own defaults when omitted (tests of other things). */
  timeouts?: HttpTimeouts,
): Promise<HttpServer> {
  let draining = false;
  const inFlight = new Set<ServerResponse>();
  const server = createAdaptorServer({
    fetch: async (request: Request, env: { incoming: { complete: boolean; socket: Socket } }) =>
      draining ? drainingResponse() : closeIfBodyUnread(await fetch(request), env.incoming),
    serverOptions: timeouts && {
      headersTimeout: timeouts.headersMs,
      // Node refuses a request timeout shorter than the headers timeout.
      requestTimeout: Math.max(timeouts.requestMs, timeouts.headersMs),
      keepAliveTimeout: timeouts.keepAliveMs,
      connectionsCheckingInterval: 1_000,
    },
  }) as Server;

  server.on("request", (_request: IncomingMessage, response: ServerResponse) => {
    inFlight.add(response);
    response.on("close", () => inFlight.delete(response));
  });

  await new Promise<void>((done, fail) => {
    const onError = (error: NodeJS.ErrnoException) => {
      fail(
        error.code === "EADDRINUSE"
          ? new Error(`port ${port} is already in use; stop what runs there or set PORT to another port`)
          : error,
      );
    };
    server.once("error", onError);
    server.listen(port, hostname, () => {
      server.off("error", onError);
      done();
    });
  });
  const address = server.address();
  const boundPort = typeof address === "object" && address ? address.port : port;

  return {
    port: boundPort,
    address: typeof address === "object" && address ? address.address : hostname,
    async drain(deadlineMs) {
      draining = true;
      // Stop listening, but keep the open connections: a request that comes on
      // one of them now gets a 503 with Connection: close (see drainingResponse)
      // rather than a reset. http.Server's own close() would drop the idle ones.
      const closed = new Promise<void>((done) => NetServer.prototype.close.call(server, () => done()));
      const deadline = Date.now() + deadlineMs;
      // Settled when nothing has run for one whole pause: a request pipelined
      // behind one that just finished is picked up a moment after it.
      for (let quiet = 0; quiet < 2 && Date.now() < deadline; ) {
        await new Promise((r) => setTimeout(r, 25));
        quiet = inFlight.size === 0 ? quiet + 1 : 0;
      }
      const cut = inFlight.size;
      server.closeAllConnections();
      await closed;
      return cut;
    },
  };
}

/**
 * Where a server bound to `address` is reached: its URL, and a URL for a
 * person on this machine (the loopback address when it listens on every
 * interface). Said as it is: `localhost` may resolve to an address it does not
 * listen on.
 */
export function reachedAt(address: string, port: number): { bound: string; local: string } {
  const everywhere = address === "0.0.0.0" || address === "::";
  const host = address.includes(":") ? `[${address}]` : address;
  const local = everywhere ? `http://127.0.0.1:${port}` : `http://${host}:${port}`;
  return { bound: everywhere ? `http://${host}:${port} (every interface; on this machine ${local})` : local, local };
}
