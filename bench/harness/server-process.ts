import { type ChildProcess, fork } from "node:child_process";
import { closeSync, openSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type {
  CapturedStatement,
  FloorReply,
  FloorRequest,
  ServerReply,
  ServerRequest,
  SwitchReply,
  SwitchRequest,
  Template,
} from "./server-protocol.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

/**
 * A bench server in a child process, and the channel to it: the instrumented
 * API server (bench/harness/server.ts) or the Node floor (bench/peers/floor-server.ts).
 */
export class BenchServer {
  private constructor(
    private readonly child: ChildProcess,
    readonly url: string,
    /**
     * Its stderr (the request log at info): a file, as a production log is
     * written to a file or a collector that keeps up. A pipe to this process
     * would be read only when the load generator has time, and a full pipe
     * stalls the server's synchronous writes: the log would seem to cost what
     * the bench's own reading costs.
     */
    private readonly logFile: string,
  ) {}

  /** The end of what the server wrote to stderr, for an error message. */
  private get output(): string {
    try {
      return readFileSync(this.logFile, "utf8").slice(-4000);
    } catch {
      return "";
    }
  }

  /** `profileDir`: write a V8 CPU profile of the server there when it stops. */
  static async start(
    databaseUrl: string,
    poolSize: number,
    options: {
      /** A server script of the checkout (the instrumented API by default), or `node/server.ts` of `root`. */
      script?:
        | "bench/harness/server.ts"
        | "bench/conventions/switch-server.ts"
        | "bench/peers/floor-server.ts"
        | "bench/peers/hand-server.ts"
        | "bench/peers/postgraphile-server.ts"
        | "node/server.ts";
      profileDir?: string;
      /** Another checkout to run (bench --compare); this one by default. */
      root?: string;
      env?: Record<string, string>;
    } = {},
  ): Promise<BenchServer> {
    const port = await freePort();
    const root = options.root ?? ROOT;
    const script = options.script ?? "bench/harness/server.ts";
    const profile = options.profileDir ? ["--cpu-prof", "--cpu-prof-dir", options.profileDir] : [];
    const logFile = join(tmpdir(), `camp-bench-server-${port}-${process.pid}.log`);
    const log = openSync(logFile, "w");
    const child = fork(`${root}/${script}`, [], {
      cwd: root,
      execArgv: ["--import", "tsx", ...profile],
      // Limits counted as in production, but never reached: the load is one client per key.
      // No webhook worker: its look at the queue every second would be counted with the requests it measures.
      env: {
        RATE_LIMIT_PER_MINUTE: "1000000",
        WEBHOOK_WORKER: "false",
        ...process.env,
        ...options.env,
        DATABASE_URL: databaseUrl,
        // Its Postgres backends are told apart by this (bench/harness/cpu.ts).
        PGAPPNAME: appNameOf(port),
        PORT: String(port),
        DB_POOL_SIZE: String(poolSize),
      },
      stdio: ["ignore", "ignore", log, "ipc"],
    });
    closeSync(log);
    const server = new BenchServer(child, `http://127.0.0.1:${port}`, logFile);
    await server.waitUntilHealthy();
    return server;
  }

  private async waitUntilHealthy(): Promise<void> {
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      if (this.child.exitCode !== null) throw new Error(`the server exited:\n${this.output}`);
      try {
        if ((await fetch(`${this.url}/health`)).ok) return;
      } catch {
        // Not listening yet.
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(`the server did not answer /health within 60 s:\n${this.output}`);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** The application_name of its connections to Postgres. */
  get appName(): string {
    return appNameOf(Number(new URL(this.url).port));
  }

  private ask(request: ServerRequest): Promise<ServerReply>;
  private ask(request: FloorRequest): Promise<FloorReply>;
  private ask(request: SwitchRequest): Promise<SwitchReply>;
  private ask(request: ServerRequest | FloorRequest | SwitchRequest): Promise<ServerReply | FloorReply | SwitchReply> {
    return new Promise((resolve) => {
      this.child.once("message", (reply) => resolve(reply as ServerReply | FloorReply | SwitchReply));
      this.child.send(request);
    });
  }

  /** The floor only: the statements to replay for each request from now on, and the status to answer with. */
  async serve(templates: Template[], status: number): Promise<void> {
    await this.ask({ type: "serve", templates, status });
  }

  /** A switch server only (bench/conventions/switch-server.ts): answer with the app that has the convention, or the one without. */
  async switchTo(serve: "on" | "off"): Promise<void> {
    await this.ask({ type: "switch", serve });
  }

  /** pg round trips since the last call. */
  async takeQueryCount(): Promise<number> {
    const reply = await this.ask({ type: "count" });
    return reply.type === "count" ? reply.queries : 0;
  }

  /**
   * pg round trips since the last call, once the server has gone quiet (the
   * requests a load left in flight have finished).
   */
  async settleQueryCount(): Promise<number> {
    let total = 0;
    for (;;) {
      const recent = await this.takeQueryCount();
      total += recent;
      if (recent === 0) return total;
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  /** The statements of the one request `send` makes with the capture header. */
  async capture(send: () => Promise<void>): Promise<CapturedStatement[]> {
    await this.ask({ type: "capture", on: true });
    await send();
    const reply = await this.ask({ type: "capture", on: false });
    return reply.type === "capture" ? reply.statements : [];
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null) {
      const exited = new Promise((r) => this.child.once("exit", r));
      this.child.kill("SIGTERM");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))]);
      if (this.child.exitCode === null) this.child.kill("SIGKILL");
    }
    rmSync(this.logFile, { force: true });
  }
}

const appNameOf = (port: number) => `camp_bench_${port}`;
