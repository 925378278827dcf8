import { join } from "node:path";
import { serve } from "@hono/node-server";
import { createApp } from "../functions/app.ts";
import { type Config, loadConfig } from "../functions/config.ts";
import { Database } from "../functions/db/database.ts";
import { supabasePhotoStore } from "../functions/photos/default-store.ts";
import type { PhotoStore } from "../functions/photos/store.ts";
import { createTenant } from "../functions/tenants/operator.ts";
import { FilePhotoStore } from "./photo-files.ts";
import { resolveDatabase, say } from "./runtime.ts";

const DEMO_ADMIN = "admin@demo.camp";

/** On the first start of the embedded default, a tenant to try the API with. */
async function createDemoTenantOnce(db: Database, port: number) {
  const [row] = await db.query<{ n: number }>("select count(*)::int as n from public.tenants");
  if (row && row.n > 0) return;
  const demo = await createTenant(db, "Demo camps", DEMO_ADMIN);
  say("");
  say(`Created a demo tenant with admin ${DEMO_ADMIN}. Its API key (shown only now):`);
  say(`  ${demo.api_key}`);
  say("Try it:");
  say(`  curl -s -H 'X-API-Key: ${demo.api_key}' http://localhost:${port}/api/v1/api-keys/my-key`);
  say("");
}

/** PHOTO_STORAGE: files under DATA_DIR/photos (the default) or Supabase Storage. */
function photoStore(config: Config): { store: PhotoStore; where: string } {
  if (config.PHOTO_STORAGE === "supabase") return { store: supabasePhotoStore(config), where: "Supabase Storage" };
  const store = new FilePhotoStore(join(config.DATA_DIR, "photos"));
  return { store, where: store.root };
}

export async function startServer(env: Record<string, string | undefined> = process.env) {
  const config = loadConfig(env);
  const photos = photoStore(config);
  const database = await resolveDatabase(config);
  const db = new Database(database.url, { max: config.DB_POOL_SIZE, prepare: config.DB_PREPARED_STATEMENTS });
  if (database.embedded) await createDemoTenantOnce(db, config.PORT);

  const app = createApp({ db, config, photoStore: photos.store });
  const server = serve({ fetch: app.fetch, port: config.PORT, hostname: "0.0.0.0" }, (info) =>
    say(
      `camp service listening on http://localhost:${info.port} ` +
        `(database: ${database.embedded ? "embedded" : "DATABASE_URL"}; photos: ${photos.where})`,
    ),
  );

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    say(`${signal}: stopping`);
    await new Promise<void>((done) => server.close(() => done()));
    await db.close();
    await database.stop();
    process.exit(0);
  };
  process.on("SIGINT", () => void stop("SIGINT"));
  process.on("SIGTERM", () => void stop("SIGTERM"));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  startServer().catch((error) => {
    say(`could not start: ${(error as Error).message}`);
    process.exit(1);
  });
}
