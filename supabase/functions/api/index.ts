// The Supabase Edge Function: the same app as the Node server (functions/app.ts),
// served by Deno under the function's name. Everything it imports from the
// repository is reached by relative imports inside the project root, which is
// what `supabase functions deploy` uploads (see the README, "Deploy to Supabase").
import { configure, getConsoleSink, getJsonLinesFormatter } from "@logtape/logtape";
import { createApp } from "../../../functions/app.ts";
import { loadConfig } from "../../../functions/config.ts";
import { Database } from "../../../functions/db/database.ts";
import { type FunctionMount, splitFunctionPrefix } from "../../../functions/http/function-prefix.ts";
import { drainHandler } from "../../../functions/webhooks/drain.ts";
import { deliveryLimits } from "../../../functions/webhooks/transport.ts";
import { WebhookWorker, workerOptions } from "../../../functions/webhooks/worker.ts";
import { denoTransport } from "./webhook-transport.ts";

const FUNCTION_NAME = "api";
/** How long the drain after a ping may run: one delivery's timeout and its recording. */
const PING_DRAIN_MS = 15_000;

const env = Deno.env.toObject();
// Supabase gives every function SUPABASE_DB_URL (a direct connection). A
// DATABASE_URL secret wins over it, e.g. the transaction-mode pooler's URL; it
// also points the entry at any Postgres (tests, benchmarks).
const config = loadConfig({
  ...env,
  DATABASE_URL: env.DATABASE_URL || env.SUPABASE_DB_URL,
  // An isolate serves few requests at once; a small pool spares the database.
  DB_POOL_SIZE: env.DB_POOL_SIZE || "3",
});
if (!config.DATABASE_URL) throw new Error("set SUPABASE_DB_URL or DATABASE_URL");

// One JSON object per line on the console, which Supabase keeps as the function's log.
await configure({
  sinks: { console: getConsoleSink({ formatter: getJsonLinesFormatter({ message: "rendered", properties: "flatten" }) }) },
  loggers: [
    { category: ["camp"], lowestLevel: config.LOG_LEVEL, sinks: ["console"] },
    { category: ["logtape", "meta"], lowestLevel: "warning", sinks: ["console"] },
  ],
});

const db = new Database(config.DATABASE_URL, { max: config.DB_POOL_SIZE, prepare: config.DB_PREPARED_STATEMENTS });
// The webhook queue's worker: drained on a schedule (below), and at once after a ping.
const worker = new WebhookWorker(db, denoTransport(), workerOptions({ concurrency: 4, limits: deliveryLimits(config) }));
const edgeRuntime = (globalThis as { EdgeRuntime?: { waitUntil(work: Promise<unknown>): void } }).EdgeRuntime;
const deliverNow = () => {
  const work = worker.drain(PING_DRAIN_MS).catch(() => {
    // Left to the scheduled drain: the ping stays queued.
  });
  // On Supabase the isolate is kept alive until the drain ends.
  edgeRuntime?.waitUntil(work);
};
// The guides /docs links to: read from the checkout under `npm run serve:edge`; a deployed function carries no
// docs/, and the link answers 404 naming the repository's folder.
const readGuide = (file: string) => Deno.readTextFile(new URL(`../../../docs/${file}`, import.meta.url)).catch(() => undefined);
const app = createApp({ db, config, deliverNow, readGuide });

// The runtime ends an idle isolate with this event; the pool's connections go with it.
addEventListener("beforeunload", () => {
  void db.close();
});

// The webhook queue, drained on a schedule (pg_cron + pg_net call POST
// /webhooks/drain; docs/supabase.md) by the same worker code the Node server
// runs, with Deno's own address-checked connection.
const drain = drainHandler(worker, config.WEBHOOK_DRAIN_SECRET);

const handler = (request: Request) => {
  const { request: stripped, prefix } = splitFunctionPrefix(request, FUNCTION_NAME);
  if (new URL(stripped.url).pathname === "/webhooks/drain") return drain(stripped);
  // The mount goes with the request, so a 404 can name it (functions/http/function-prefix.ts).
  const mount: FunctionMount = { functionName: FUNCTION_NAME, functionPrefix: prefix };
  return app.fetch(stripped, mount);
};

// On Supabase the edge runtime owns the socket; elsewhere (tests, benchmarks,
// `npm run serve:edge`) Deno listens on PORT and HOST, and stops as the Node
// server does on SIGTERM and SIGINT: the requests in flight finish (at most
// SHUTDOWN_TIMEOUT_MS), the pool closes, the process exits 0.
if ("EdgeRuntime" in globalThis) Deno.serve(handler);
else {
  const server = Deno.serve({ port: config.PORT, hostname: config.HOST }, handler);
  let stopping = false;
  const stop = async (signal: Deno.Signal) => {
    if (stopping) return;
    stopping = true;
    console.error(`${signal}: stopping; finishing the requests in flight (at most ${config.SHUTDOWN_TIMEOUT_MS} ms)`);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const deadline = new Promise<void>((done) => {
      timer = setTimeout(done, config.SHUTDOWN_TIMEOUT_MS);
    });
    await Promise.race([server.shutdown(), deadline]);
    clearTimeout(timer);
    await db.close();
    console.error("stopped");
    Deno.exit(0);
  };
  for (const signal of ["SIGTERM", "SIGINT"] as const) Deno.addSignalListener(signal, () => void stop(signal));
}
