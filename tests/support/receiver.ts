import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** One request a receiver got. */
export interface Received {
  headers: Record<string, string>;
  body: string;
  at: number;
}

/** What the receiver does with its n-th request (0-based): answer with a status, or act up. */
export type Behaviour = (n: number, request: Received, res: ServerResponse) => void | Promise<void>;

export const answer =
  (status: number, body = "ok"): Behaviour =>
  (_n, _req, res) => {
    res.writeHead(status, { "content-type": "text/plain" }).end(body);
  };

/** A real HTTP receiver on 127.0.0.1, recording what it gets. */
export interface Receiver {
  url: string;
  received: Received[];
  /** Resolves once it has `count` requests. */
  waitFor(count: number, timeoutMs?: number): Promise<Received[]>;
  behave(behaviour: Behaviour): void;
  close(): Promise<void>;
}

export async function startReceiver(behaviour: Behaviour = answer(200)): Promise<Receiver> {
  const received: Received[] = [];
  let current = behaviour;
  const sockets = new Set<import("node:net").Socket>();
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const got: Received = {
      headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)])),
      body: Buffer.concat(chunks).toString("utf8"),
      at: Date.now(),
    };
    const n = received.length;
    received.push(got);
    try {
      await current(n, got, res);
    } catch {
      res.destroy();
    }
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    behave(next) {
      current = next;
    },
    async waitFor(count, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      while (received.length < count) {
        if (Date.now() > deadline) throw new Error(`the receiver got ${received.length} requests, not ${count}`);
        await new Promise((r) => setTimeout(r, 20));
      }
      return received;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((done) => server.close(() => done()));
    },
  };
}
