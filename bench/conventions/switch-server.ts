import pg from "pg";
import { createApp } from "../../functions/app.ts";
import { loadConfig } from "../../functions/config.ts";
import { Database } from "../../functions/db/database.ts";
import { listen } from "../../node/http-server.ts";
import { configureLogging } from "../../node/logging.ts";
import { configuredPhotoStore, resolveDatabase } from "../../node/runtime.ts";
import type { SwitchReply, SwitchRequest } from "../harness/server-protocol.ts";
import { offRewriter } from "./conventions-off.ts";

/**
 * The API twice in one process, one app with a convention and one without
 * (BENCH_OFF_ENV: the settings that switch it off, as JSON); which of the two
 * answers is switched over the IPC channel between rounds. Both apps share
 * one pool, so the same Postgres backends serve either side: with a pool per
 * app, one of two identical apps ran a few per cent slower than the other for
 * a whole contest (bench/results/history.md, "one pool").
 *
 * What the off app leaves out: its own settings (RATE_LIMIT_PER_MINUTE=0;
 * LOG_LEVEL=warning, applied to the process's log while it answers), or the
 * statements sent while it answers, rewritten (BENCH_WITHOUT,
 * conventions-off.ts) and prepared under names of their own. Statements are
 * rewritten whichever app answers, so the on side pays for the rewriting too.
 */

const offEnv = JSON.parse(process.env.BENCH_OFF_ENV ?? "{}") as Record<string, string>;
const onConfig = loadConfig(process.env);
const offConfig = loadConfig({ ...process.env, ...offEnv });

const rewriteOn = offRewriter(undefined, true);
const rewriteOff = offRewriter(offEnv.BENCH_WITHOUT, true);
/** Which app answers; read by the pool's statements too, which the bench switches only between rounds. */
let serving: "on" | "off" = "on";

/** A named statement of the off side, prepared apart from the on side's text of the same name. */
const offName = (config: unknown) => {
  const named = config as { name?: unknown };
  if (!offEnv.BENCH_WITHOUT || typeof named?.name !== "string") return config;
  if (config instanceof pg.Query) {
    named.name = `${named.name}~off`;
    return config;
  }
  return { ...(config as object), name: `${named.name}~off` };
};

type Query = (this: pg.Client, config: unknown, values?: unknown, callback?: unknown) => unknown;
const proto = pg.Client.prototype as unknown as { query: Query };
const original = proto.query;
proto.query = function (this: pg.Client, config: unknown, values?: unknown, callback?: unknown) {
  const rewritten = serving === "off" ? offName(rewriteOff?.(config) ?? config) : (rewriteOn?.(config) ?? config);
  return original.call(this, rewritten, values, callback);
};

await configureLogging(onConfig.LOG_LEVEL);
const database = await resolveDatabase(onConfig);
const db = new Database(database.url, { max: onConfig.DB_POOL_SIZE, prepare: onConfig.DB_PREPARED_STATEMENTS });

const photoStore = configuredPhotoStore(onConfig);
const apps = {
  on: createApp({ db, config: onConfig, photoStore }),
  off: createApp({ db, config: offConfig, photoStore }),
};
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
  await db.close();
  process.exit(0);
}
process.on("SIGTERM", () => void stop());
// The bench that started this server is gone: nothing else would stop it.
process.on("disconnect", () => process.exit(0));
