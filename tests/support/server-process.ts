import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { ROOT } from "./processes.ts";
import { validatingProxy } from "./validating-proxy.ts";

export async function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.on("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => done(typeof address === "object" && address ? address.port : 0));
    });
  });
}

export interface ServerProcess {
  child: ChildProcess;
  /** The server's own port (raw sockets reach it here, unchecked). */
  port: number;
  /**
   * Where clients reach it: through a validating proxy that holds every
   * answer to the OpenAPI document (validating-proxy.ts), unless the server
   * was started with `validate: false` or serves no document (it then is
   * `directUrl`).
   */
  url: string;
  /** The server itself, without the proxy. */
  directUrl: string;
  /** Everything the server wrote on stderr so far. */
  stderr(): string;
  /** Resolves with the exit code once the process has ended. */
  exited: Promise<number | null>;
  /** Sends the signal and waits for the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * The server as `npm start` runs it (`node --import tsx node/server.ts`, one
 * process: signals sent to the child reach the server itself) on a free port,
 * with `env` over this process's environment, in this checkout or another
 * (`checkout`); resolves once it listens.
 */
export async function startServerProcess(
  env: Record<string, string | undefined>,
  options: { timeoutMs?: number; waitFor?: RegExp; checkout?: string; validate?: boolean } = {},
): Promise<ServerProcess> {
  const port = env.PORT ? Number(env.PORT) : await freePort();
  const checkout = options.checkout ?? ROOT;
  const child = spawn(process.execPath, ["--import", "tsx", "node/server.ts"], {
    cwd: checkout,
    // Rate limits off unless the test sets them: load tests send far more than a client would.
    env: { ...process.env, RATE_LIMIT_PER_MINUTE: "0", ...env, PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (d) => {
    stderr += d;
  });
  child.stdout?.resume();
  const exited = new Promise<number | null>((done) => child.on("exit", (code) => done(code)));
  const waitFor = options.waitFor ?? /listening on/;
  const deadline = Date.now() + (options.timeoutMs ?? 90_000);
  while (!waitFor.test(stderr)) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`server did not start:\n${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  const directUrl = `http://127.0.0.1:${port}`;
  const proxy = options.validate === false ? undefined : await validatingProxy({ host: "127.0.0.1", port });
  // The proxy goes with the server, however it ends.
  void exited.then(() => proxy?.close());
  return {
    child,
    port,
    url: proxy?.url ?? directUrl,
    directUrl,
    stderr: () => stderr,
    exited,
    async stop(signal = "SIGINT") {
      if (child.exitCode === null) child.kill(signal);
      const code = await exited;
      await proxy?.close();
      return code;
    },
  };
}
