import { type ChildProcess, spawn } from "node:child_process";
import { ROOT } from "./processes.ts";

/** Deno from the npm package `deno`; its cache lives in node_modules, so packages are fetched once per install. */
export const DENO = `${ROOT}node_modules/.bin/deno`;
export const DENO_DIR = `${ROOT}node_modules/.cache/deno`;
export const ENTRY = "supabase/functions/api/index.ts";
export const DENO_CONFIG = "supabase/functions/api/deno.json";

/**
 * What the Supabase edge runtime grants a function, as Deno flags. npm
 * packages come from the npm registry as pinned in deno.json (no node_modules),
 * as they do on Supabase.
 */
export const RUN_FLAGS = ["--allow-net", "--allow-env", "--allow-read", "--node-modules-dir=none", "--no-prompt"];

export function denoEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { ...process.env, DENO_DIR, NO_COLOR: "1", DENO_NO_UPDATE_CHECK: "1", ...extra };
}

export interface RunningFunction {
  /** http://127.0.0.1:<port> */
  origin: string;
  output(): string;
  stop(): Promise<void>;
}

/**
 * Starts the Edge Function entry under Deno (from `cwd`, which holds the entry
 * and its deno.json at their repository paths) and resolves once it listens.
 * The port is chosen by the system and read from Deno's "Listening on" line.
 */
export function startFunction(env: Record<string, string>, options: { cwd?: string; timeoutMs?: number } = {}) {
  const cwd = options.cwd ?? ROOT;
  const child: ChildProcess = spawn(DENO, ["run", ...RUN_FLAGS, "--config", DENO_CONFIG, ENTRY], {
    cwd,
    env: denoEnv({ PORT: "0", HOST: "127.0.0.1", ...env }),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const stop = () =>
    new Promise<void>((done) => {
      if (child.exitCode !== null || child.signalCode !== null) return done();
      child.once("exit", () => done());
      child.kill("SIGTERM");
    });

  return new Promise<RunningFunction>((resolve, reject) => {
    const timer = setTimeout(() => {
      void stop();
      reject(new Error(`the Edge Function did not start in time:\n${output.slice(-3000)}`));
    }, options.timeoutMs ?? 120_000);
    const onData = (chunk: Buffer) => {
      output += chunk;
      const match = /Listening on https?:\/\/[^:]+:(\d+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve({ origin: `http://127.0.0.1:${match[1]}`, output: () => output, stop });
      }
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`the Edge Function exited with ${code}:\n${output.slice(-3000)}`));
    });
  });
}
