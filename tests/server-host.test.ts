import { connect } from "node:net";
import { describe, expect, it } from "vitest";
import { useTestDatabase } from "./support/database.ts";
import { startServerProcess } from "./support/server-process.ts";

/**
 * HOST: the Node server binds where it is told (this machine only by default)
 * and says the address it is bound to, not a name that may resolve elsewhere.
 */

const t = useTestDatabase();

/** Whether something accepts connections at host:port. */
function answers(host: string, port: number): Promise<boolean> {
  return new Promise((done) => {
    const socket = connect(port, host);
    socket.once("connect", () => {
      socket.destroy();
      done(true);
    });
    socket.once("error", () => done(false));
  });
}

describe("HOST", { timeout: 120_000 }, () => {
  it("binds to 127.0.0.1 by default and says so", async () => {
    const server = await startServerProcess({ DATABASE_URL: t().url, HOST: undefined }, { validate: false });
    try {
      expect(server.stderr()).toContain(`camp service listening on http://127.0.0.1:${server.port} `);
      expect(await answers("127.0.0.1", server.port)).toBe(true);
      // Another loopback address is another interface: not bound.
      expect(await answers("127.0.0.2", server.port)).toBe(false);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });

  it("binds to the address HOST names, and prints that address", async () => {
    const server = await startServerProcess(
      { DATABASE_URL: t().url, HOST: "127.0.0.2" },
      { validate: false, waitFor: /listening on/ },
    );
    try {
      expect(server.stderr()).toContain(`camp service listening on http://127.0.0.2:${server.port} `);
      expect(await answers("127.0.0.2", server.port)).toBe(true);
      expect(await answers("127.0.0.1", server.port)).toBe(false);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });

  it("says when it listens on every interface (HOST=0.0.0.0, as in a container), with the address to use here", async () => {
    const server = await startServerProcess({ DATABASE_URL: t().url, HOST: "0.0.0.0" }, { validate: false });
    try {
      expect(server.stderr()).toContain(
        `camp service listening on http://0.0.0.0:${server.port} (every interface; on this machine http://127.0.0.1:${server.port})`,
      );
      expect(await answers("127.0.0.1", server.port)).toBe(true);
      expect(await answers("127.0.0.2", server.port)).toBe(true);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });
});
