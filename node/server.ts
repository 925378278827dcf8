import { createApp } from "../functions/app.ts";
import { type Config, loadConfig } from "../functions/config.ts";
import { Database, logConnectionError } from "../functions/db/database.ts";
import { describeError, log } from "../functions/log.ts";
import { type PhotoStore, PhotoStoreError } from "../functions/photos/store.ts";
import { PHOTO_BUCKET, SupabasePhotoStore } from "../functions/photos/supabase-store.ts";
import { createDemoTenant } from "../functions/tenants/provisioning.ts";
import { readGuide } from "./guides.ts";
import { listen, reachedAt } from "./http-server.ts";
import { configureLogging } from "./logging.ts";
import type { FilePhotoStore } from "./photo-files.ts";
import { startReportingGuard } from "./reporting-guard.ts";
import { configuredPhotoStore, resolveDatabase, say } from "./runtime.ts";
import { lockDataDir } from "./server-lock.ts";
import { startWebhookWorker } from "./webhook-worker.ts";

const DEMO_ADMIN = "admin@demo.camp";

/**
 * On the first start of the embedded default, a tenant to try the API with.
 * Called once the server listens, so a start that fails (a port in use) has
 * not yet made a key it could not show again.
 */
async function createDemoTenantOnce(db: Database, url: string) {
  const [row] = await db.query<{ n: number }>("select count(*)::int as n from public.tenants");
  if (row && row.n > 0) return;
  const demo = await createDemoTenant(db, DEMO_ADMIN);
  say("");
  say(`Created a demo tenant with admin ${DEMO_ADMIN}. Its API key (shown only now):`);
  say(`  ${demo.api_key}`);
  say(`(Lost it? 'npm run camp -- keys issue ${DEMO_ADMIN} --replace' revokes it and prints a new one.)`);
  say("Try it:");
  say(`  curl -s -H 'X-API-Key: ${demo.api_key}' ${url}/api/v1/api-keys/my-key`);
  say("");
}

/**
 * PHOTO_STORAGE: files under DATA_DIR/photos (the default) or Supabase
 * Storage, whose bucket is checked and made if missing before the server
 * listens. A key or URL that Storage refuses stops the start with a message
 * saying so; a Storage that does not answer only warns, since everything but
 * photos works without it (/health says `storage: unavailable`).
 */
async function photoStore(config: Config): Promise<{ store: PhotoStore; where: string }> {
  const store = configuredPhotoStore(config);
  if (!(store instanceof SupabasePhotoStore)) return { store, where: (store as FilePhotoStore).root };
  try {
    const bucket = await store.ensureBucket();
    if (bucket !== "ok") say(`photo bucket ${PHOTO_BUCKET}: ${bucket}`);
  } catch (error) {
    if (!(error instanceof PhotoStoreError) || error.kind === "misconfigured") {
      throw new Error(`photo storage at SUPABASE_URL is not usable: ${(error as Error).message}`);
    }
    log.warn("photo storage did not answer at start; photo requests answer 503 until it does", describeError(error));
  }
  return { store, where: "Supabase Storage" };
}

/**
 * Starts the service: the database (embedded or DATABASE_URL, migrated), the
 * HTTP server, and the handlers that stop both cleanly on SIGTERM and SIGINT.
 * Every step that fails undoes the ones before it.
 */
export async function startServer(env: Record<string, string | undefined> = process.env) {
  const config = loadConfig(env);
  await configureLogging(config.LOG_LEVEL);
  const photos = await photoStore(config);
  const unlock = config.DATABASE_URL ? () => {} : lockDataDir(config.DATA_DIR);
  const undo: (() => Promise<void> | void)[] = [unlock];
  const undoAll = async () => {
    for (const step of undo.reverse()) await step();
  };

  try {
    // The embedded cluster out of reach of a terminal's Ctrl-C: the handlers below stop it after the drain.
    const database = await resolveDatabase(config, { ownProcessGroup: true });
    undo.push(() => database.stop());
    if (database.embedded && !database.owned) say("using the embedded Postgres already running under DATA_DIR");
    let stopping = false;
    const db = new Database(database.url, {
      max: config.DB_POOL_SIZE,
      prepare: config.DB_PREPARED_STATEMENTS,
      connectTimeoutMs: config.DB_CONNECT_TIMEOUT_MS,
      // A database stopped along with the server (a process manager that signals
      // every process of the service) ends the idle connections: expected, not a warning.
      onConnectionError: (error) => {
        if (!stopping) logConnectionError(error);
      },
    });
    undo.push(() => db.close());

    undo.push(startReportingGuard(db, config.REPORTING_GUARD_INTERVAL_MS));

    // Aborted when stopping begins: requests that wait (the event feed's `wait`) answer at once.
    const shutdown = new AbortController();
    let wakeWorker: (() => void) | undefined;
    const app = createApp({
      db,
      config,
      photoStore: photos.store,
      shutdown: shutdown.signal,
      readGuide,
      deliverNow: () => wakeWorker?.(),
    });
    const http = await listen(app.fetch, config.PORT, config.HOST, {
      headersMs: config.HTTP_HEADERS_TIMEOUT_MS,
      requestMs: config.HTTP_REQUEST_TIMEOUT_MS,
      keepAliveMs: config.HTTP_KEEP_ALIVE_TIMEOUT_MS,
    });
    // Stopped before the pool closes, after the requests have drained.
    if (config.WEBHOOK_WORKER) {
      const worker = startWebhookWorker(db, config, config.SHUTDOWN_TIMEOUT_MS);
      wakeWorker = worker.wake;
      undo.push(worker.stop);
    }
    const where = reachedAt(http.address, http.port);
    if (database.embedded) await createDemoTenantOnce(db, where.local);
    say(
      `camp service listening on ${where.bound} ` +
        `(database: ${database.embedded ? "embedded" : "DATABASE_URL"}; photos: ${photos.where})`,
    );

    const stop = async (signal: string) => {
      if (stopping) return;
      stopping = true;
      say(`${signal}: stopping; finishing the requests in flight (at most ${config.SHUTDOWN_TIMEOUT_MS} ms)`);
      shutdown.abort();
      const cut = await http.drain(config.SHUTDOWN_TIMEOUT_MS);
      if (cut > 0) say(`${cut} request(s) still running at the deadline were cut`);
      await undoAll();
      say("stopped");
      process.exit(0);
    };
    process.on("SIGINT", () => void stop("SIGINT"));
    process.on("SIGTERM", () => void stop("SIGTERM"));
    // A promise nobody awaited must not end a process that serves everyone else.
    process.on("unhandledRejection", (reason) => log.error("unhandled rejection", describeError(reason)));
  } catch (error) {
    await undoAll();
    throw error;
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  startServer().catch((error) => {
    say(`could not start: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  });
}
