import { loadConfig } from "../functions/config.ts";
import { Database } from "../functions/db/database.ts";
import { configureLogging } from "../node/logging.ts";
import { resolveDatabase, say } from "../node/runtime.ts";
import { startWebhookWorker } from "../node/webhook-worker.ts";

/**
 * `camp worker`: one webhook worker alone, beside any number of servers and
 * other workers on the same database, until SIGTERM or SIGINT, which let the
 * deliveries in flight finish (SHUTDOWN_TIMEOUT_MS at most) and exit 0.
 */
export async function runWorker(): Promise<void> {
  const config = loadConfig(process.env);
  await configureLogging(config.LOG_LEVEL);
  const resolved = await resolveDatabase(config);
  const db = new Database(resolved.url, { max: config.WEBHOOK_WORKER_CONCURRENCY + 2, prepare: config.DB_PREPARED_STATEMENTS });
  const { stop } = startWebhookWorker(db, config, config.SHUTDOWN_TIMEOUT_MS);
  say(`webhook worker running (${config.WEBHOOK_WORKER_CONCURRENCY} at once); SIGTERM or Ctrl-C stops it`);
  let stopping = false;
  const end = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    say(`${signal}: stopping the webhook worker`);
    await stop();
    await db.close();
    await resolved.stop();
    say("stopped");
    process.exit(0);
  };
  process.on("SIGTERM", () => void end("SIGTERM"));
  process.on("SIGINT", () => void end("SIGINT"));
}
