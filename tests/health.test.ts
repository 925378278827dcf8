import { describe, expect, it } from "vitest";
import { createApp } from "../functions/app.ts";
import { loadConfig } from "../functions/config.ts";
import { Database } from "../functions/db/database.ts";
import { MemoryPhotoStore } from "../functions/photos/memory-store.ts";
import type { PhotoStore } from "../functions/photos/store.ts";
import { PHOTO_BUCKET, PHOTO_BUCKET_SETTINGS, SupabasePhotoStore } from "../functions/photos/supabase-store.ts";
import { validated } from "./support/contract.ts";
import { useTestDatabase } from "./support/database.ts";
import { call, testApp } from "./support/fixtures.ts";
import { startStorageStandIn } from "./support/storage-stand-in.ts";

const t = useTestDatabase();

describe("GET /health", () => {
  it("reports the service and the database as up, without a credential", async () => {
    const app = validated(createApp({ db: t().db, config: loadConfig({}), photoStore: new MemoryPhotoStore() }));
    const res = await call(app, "GET", "/health");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      data: { status: "ok", database: "ok", storage: "ok", version: expect.any(String) },
    });
  });

  it("tells photo storage that works from storage that is down or refuses the service, and stays 200", async () => {
    const storage = await startStorageStandIn({ buckets: { [PHOTO_BUCKET]: { ...PHOTO_BUCKET_SETTINGS } } });
    const stateWith = async (store: PhotoStore) =>
      (await call(validated(createApp({ db: t().db, config: loadConfig({}), photoStore: store })), "GET", "/health")).body.data
        .storage;
    try {
      expect(await stateWith(new SupabasePhotoStore(storage.url, storage.serviceKey))).toBe("ok");
      expect(await stateWith(new SupabasePhotoStore(storage.url, storage.anonKey))).toBe("misconfigured");
      expect(await stateWith(new SupabasePhotoStore(storage.url, "expired-or-invalid"))).toBe("misconfigured");
      expect(await stateWith(new SupabasePhotoStore(`${storage.url}/not-the-gateway`, storage.serviceKey))).toBe("misconfigured");
      // A missing bucket is made at the first check, when the key may (the Edge Function's start-up).
      storage.buckets.delete(PHOTO_BUCKET);
      expect(await stateWith(new SupabasePhotoStore(storage.url, storage.anonKey))).toBe("misconfigured");
      expect(await stateWith(new SupabasePhotoStore(storage.url, storage.serviceKey))).toBe("ok");
      expect(storage.buckets.get(PHOTO_BUCKET)).toMatchObject(PHOTO_BUCKET_SETTINGS);
      storage.failNext(503);
      expect(await stateWith(new SupabasePhotoStore(storage.url, storage.serviceKey))).toBe("unavailable");
    } finally {
      await storage.close();
    }
    const res = await call(
      validated(
        createApp({ db: t().db, config: loadConfig({}), photoStore: new SupabasePhotoStore(storage.url, storage.serviceKey) }),
      ),
      "GET",
      "/health",
    );
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ database: "ok", storage: "unavailable" });
    // With no store configured at all (no SUPABASE_URL on the Edge Function), photos cannot work.
    expect((await call(testApp(t().db), "GET", "/health")).body.data.storage).toBe("misconfigured");
  });

  it("answers 503 SERVICE_UNAVAILABLE when the database does not answer", async () => {
    // Nothing listens on port 1: every connection attempt fails at once.
    const down = new Database("postgresql://postgres@127.0.0.1:1/none");
    try {
      const res = await call(testApp(down), "GET", "/health");
      expect(res.status).toBe(503);
      expect(res.body.success).toBe(false);
      expect(res.body.error.code).toBe("SERVICE_UNAVAILABLE");
    } finally {
      await down.close();
    }
  });
});
