import { mkdtempSync, rmSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useTestDatabase } from "./support/database.ts";
import { newTenant } from "./support/fixtures.ts";
import { newInstance, newParticipant } from "./support/photos.ts";
import { type ServerProcess, startServerProcess } from "./support/server-process.ts";

/**
 * The Node server against clients that misbehave, as `npm start` runs it: one
 * that sends its headers a byte at a time (slowloris), one that never ends its
 * body, one that hangs up halfway through an upload. Short timeouts are set
 * through the environment so the test need not wait the defaults out.
 */

const t = useTestDatabase();
let server: ServerProcess;
let key: string;
let tenantId: string;
let dataDir = "";

beforeAll(async () => {
  const tenant = await newTenant(t().db);
  key = tenant.admin.key;
  tenantId = tenant.tenantId;
  dataDir = mkdtempSync(join(tmpdir(), "camp-timeouts-"));
  server = await startServerProcess({
    DATABASE_URL: t().url,
    DATA_DIR: dataDir,
    HTTP_HEADERS_TIMEOUT_MS: "1000",
    HTTP_REQUEST_TIMEOUT_MS: "2000",
    LOG_LEVEL: "info",
  });
});

afterAll(async () => {
  await server?.stop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

async function open(): Promise<{ socket: Socket; answer: Promise<string> }> {
  const socket = connect(server.port, "127.0.0.1");
  await new Promise<void>((done, fail) => {
    socket.once("connect", done);
    socket.once("error", fail);
  });
  let received = "";
  socket.on("data", (d) => {
    received += d;
  });
  socket.on("error", () => {});
  const answer = new Promise<string>((done) => socket.on("close", () => done(received)));
  return { socket, answer };
}

/** Writes `text` a byte every `everyMs` until the socket closes or the text runs out; true when it closed first. */
async function trickle(socket: Socket, text: string, everyMs: number): Promise<boolean> {
  for (const byte of text) {
    if (socket.destroyed || socket.closed) return true;
    socket.write(byte);
    await new Promise((r) => setTimeout(r, everyMs));
  }
  return socket.destroyed || socket.closed;
}

describe("slow clients", () => {
  it("closes a connection whose headers never finish arriving (slowloris), with 408", async () => {
    const { socket, answer } = await open();
    // 200 header lines a byte every 50 ms would take minutes; the server cuts it after its headers timeout.
    const headers = `GET /health HTTP/1.1\r\nHost: x\r\n${"X-Slow: a\r\n".repeat(200)}\r\n`;
    const cutShort = await trickle(socket, headers, 50);
    expect(cutShort).toBe(true);
    expect(await answer).toMatch(/^HTTP\/1\.1 408 /);
  });

  it("closes a connection whose body never ends (logged as the client's, not the database's)", async () => {
    const { socket, answer } = await open();
    socket.write(
      `POST /api/v1/instances HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"name":"`,
    );
    const cutShort = await trickle(socket, "a".repeat(10_000), 50);
    expect(cutShort).toBe(true);
    expect(await answer).toMatch(/^HTTP\/1\.1 408 /);
  });
});

describe("a client that hangs up", () => {
  it("is logged as a client hang-up, not as the database being unavailable", async () => {
    const participant = { id: await newParticipant(t(), tenantId, await newInstance(t(), tenantId)) };
    const { socket, answer } = await open();
    const boundary = "hangup";
    const head = `--${boundary}\r\nContent-Disposition: form-data; name="photo"; filename="p.jpg"\r\nContent-Type: image/jpeg\r\n\r\n`;
    socket.write(
      `POST /api/v1/photos/user/${participant.id} HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\n` +
        `Content-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: 1000000\r\n\r\n${head}`,
    );
    socket.write(Buffer.alloc(200_000, 0xff));
    await new Promise((r) => setTimeout(r, 300));
    socket.destroy();
    await answer;
    const deadline = Date.now() + 10_000;
    while (!/"client hung up".*photos/.test(server.stderr()) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    const lines = server
      .stderr()
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l));
    const hangUp = lines.find((l) => l.message === "client hung up" && l.route.startsWith("/api/v1/photos"));
    expect(hangUp, server.stderr()).toMatchObject({ level: "INFO", method: "POST", route: "/api/v1/photos/user/:userId" });
    expect(hangUp.stack).toBeUndefined();
    // Nothing in this file is a database outage: not the hang-up, not the cut slow body.
    expect(lines.filter((l) => l.message === "service unavailable")).toEqual([]);
    expect(lines.find((l) => l.message === "request" && l.request_id === hangUp.request_id)).toMatchObject({ status: 499 });
  });
});
