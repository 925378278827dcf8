import pg from "pg";
import { createApp } from "../functions/app.ts";
import { loadConfig } from "../functions/config.ts";
import { Database } from "../functions/db/database.ts";
import { listen } from "../node/http-server.ts";
import { configureLogging } from "../node/logging.ts";
import { configuredPhotoStore, resolveDatabase } from "../node/runtime.ts";
import { offRewriter } from "./conventions-off.ts";
import type { SwitchReply, SwitchRequest } from "./server-protocol.ts";

/**
 * The API twice in one process, one app with a convention and one without
 * (BENCH_OFF_ENV: the settings that switch it off, as JSON), each with a pool
 * of its own; which of the two answers is switched over the IPC channel
 * between rounds. Two such processes, switched in turn (one on while the
 * other is off, then the other way round), measure a convention with each
 * process on both sides: two server processes with the same settings differ
 * by as much as a convention costs (bench/README.md), and the crossover
 * cancels that difference where a fixed pair of processes cannot.
 *
 * What the off app leaves out: its own settings (RATE_LIMIT_PER_MINUTE=0;
 * LOG_LEVEL=warning, applied to the process's log while it answers), or the
 * statements its pool sends rewritten (BENCH_WITHOUT, conventions-off.ts). Both
 * pools run the rewriter, so the on side pays for the rewriting too.
 */

const offEnv = JSON.parse(process.env.BENCH_OFF_ENV ?? "{}") as Record<string, string>;
const onConfig = loadConfig(process.env);
const offConfig = loadConfig({ ...process.env, ...offEnv });

const rewriteOn = offRewriter(undefined, true);
const rewriteOff = offRewriter(offEnv.BENCH_WITHOUT, true);
/** The off app's connections, whose statements are rewritten without the convention. */
const offClients = new WeakSet<object>();

type Query = (this: pg.Client, config: unknown, values?: unknown, callback?: unknown) => unknown;
const proto = pg.Client.prototype as unknown as { query: Query };
const original = proto.query;
proto.query = function (this: pg.Client, config: unknown, values?: unknown, callback?: unknown) {
  const rewrite = offClients.has(this) ? rewriteOff : rewriteOn;
  return original.call(this, rewrite ? rewrite(config) : config, values, callback);
};

await configureLogging(onConfig.LOG_LEVEL);
const database = await resolveDatabase(onConfig);
const pool = (config: typeof onConfig) =>
  new Database(database.url, { max: config.DB_POOL_SIZE, prepare: config.DB_PREPARED_STATEMENTS });
const onDb = pool(onConfig);
const offDb = pool(offConfig);
offDb.pool.on("connect", (client) => offClients.add(client));

const photoStore = configuredPhotoStore(onConfig);
const apps = {
  on: createApp({ db: onDb, config: onConfig, photoStore }),
  off: createApp({ db: offDb, config: offConfig, photoStore }),
};
let serving: keyof typeof apps = "on";
const http = await listen((request) => apps[serving].fetch(request), onConfig.PORT, undefined, {
  headersMs: onConfig.HTTP_HEADERS_TIMEOUT_MS,
  requestMs: onConfig.HTTP_REQUEST_TIMEOUT_MS,
  keepAliveMs: onConfig.HTTP_KEEP_ALIVE_TIMEOUT_MS,
});

process.on("message", async (message: SwitchRequest) => {
  if (message.type !== "switch") return;
  serving = message.serve;
  await configureLogging((serving === "on" ? onConfig : offConfig).LOG_LEVEL);
  process.send?.({ type: "switched", serving } satisfies SwitchReply);
});

async function stop() {
  await http.drain(2_000);
  await Promise.all([onDb.close(), offDb.close()]);
  process.exit(0);
}
process.on("SIGTERM", () => void stop());
// The bench that started this server is gone: nothing else would stop it.
process.on("disconnect", () => process.exit(0));
