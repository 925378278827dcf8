import { mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../functions/app.ts";
import { loadConfig } from "../functions/config.ts";
import { type PhotoStore, PhotoStoreError } from "../functions/photos/store.ts";
import { PHOTO_BUCKET, SupabasePhotoStore } from "../functions/photos/supabase-store.ts";
import { FilePhotoStore } from "../node/photo-files.ts";
import { useTestDatabase } from "./support/database.ts";
import { newTenant, TEST_JWT_SECRET, type TestTenant } from "./support/fixtures.ts";
import { image } from "./support/images.ts";
import { download, newInstance, newParticipant, photoApp, upload } from "./support/photos.ts";
import { type StorageStandIn, startStorageStandIn } from "./support/storage-stand-in.ts";

const t = useTestDatabase();

const TENANT = "11111111-1111-4111-8111-111111111111";
const OTHER_TENANT = "22222222-2222-4222-8222-222222222222";
const PARTICIPANT = "33333333-3333-4333-8333-333333333333";
const key = (tenant: string, hash: string, ext = "png") => `${tenant}/${PARTICIPANT}/${hash.repeat(64)}.${ext}`;

async function readAll(stream: ReadableStream<Uint8Array> | undefined): Promise<Buffer | undefined> {
  if (!stream) return undefined;
  return Buffer.from(await new Response(stream).arrayBuffer());
}

/** What every adapter must do; run against each. */
function behavesLikeAPhotoStore(name: string, make: () => PhotoStore) {
  describe(`${name}: the PhotoStore contract`, () => {
    it("stores, serves, lists and removes objects by key", async () => {
      const store = make();
      const bytes = await image("png");
      await store.put(key(TENANT, "a"), bytes, "image/png");
      await store.put(key(TENANT, "b", "jpg"), await image("jpeg"), "image/jpeg");
      await store.put(key(OTHER_TENANT, "c"), bytes, "image/png");

      expect(await readAll(await store.get(key(TENANT, "a")))).toEqual(bytes);
      expect(await store.list(`${TENANT}/`)).toEqual([key(TENANT, "a"), key(TENANT, "b", "jpg")]);
      expect(await store.list(`${OTHER_TENANT}/${PARTICIPANT}/`)).toEqual([key(OTHER_TENANT, "c")]);

      await store.delete(key(TENANT, "a"));
      expect(await store.get(key(TENANT, "a"))).toBeUndefined();
      expect(await store.list(`${TENANT}/`)).toEqual([key(TENANT, "b", "jpg")]);
    });

    it("replaces an object written again under the same key", async () => {
      const store = make();
      await store.put(key(TENANT, "d"), Buffer.from("first"), "image/png");
      await store.put(key(TENANT, "d"), Buffer.from("second"), "image/png");
      expect((await readAll(await store.get(key(TENANT, "d"))))?.toString()).toBe("second");
    });

    it("answers undefined for a missing object and takes removing one calmly", async () => {
      const store = make();
      expect(await store.get(key(TENANT, "e"))).toBeUndefined();
      await expect(store.delete(key(TENANT, "e"))).resolves.toBeUndefined();
    });

    it("refuses keys that are not photo keys, so none can leave its folder", async () => {
      const store = make();
      for (const bad of ["../etc/passwd", `${TENANT}/../${OTHER_TENANT}/x.png`, `${TENANT}/${PARTICIPANT}/x.exe`, ""]) {
        await expect(store.put(bad, Buffer.from("x"), "image/png")).rejects.toThrow(PhotoStoreError);
        await expect(store.get(bad)).rejects.toThrow(PhotoStoreError);
      }
    });
  });
}

let fileRoot: string;
let storage: StorageStandIn;

beforeAll(async () => {
  fileRoot = await mkdtemp(join(tmpdir(), "camp-photos-"));
  storage = await startStorageStandIn({
    buckets: {
      [PHOTO_BUCKET]: { fileSizeLimit: 5_242_880, allowedMimeTypes: ["image/jpeg", "image/png", "image/gif", "image/webp"] },
    },
  });
});

afterAll(async () => {
  await rm(fileRoot, { recursive: true, force: true });
  await storage.close();
});

let fileStores = 0;
behavesLikeAPhotoStore("local files", () => new FilePhotoStore(join(fileRoot, `store-${++fileStores}`)));
behavesLikeAPhotoStore("Supabase Storage (stand-in)", () => {
  storage.objects.clear();
  return new SupabasePhotoStore(storage.url, storage.serviceKey);
});

describe("local file store", () => {
  it("writes each object whole through a temporary file, private to the service, and leaves no temporary file", async () => {
    const root = join(fileRoot, "atomic");
    const store = new FilePhotoStore(root);
    const bytes = await image("webp");
    await Promise.all(Array.from({ length: 5 }, () => store.put(key(TENANT, "f", "webp"), bytes, "image/webp")));

    const folder = join(root, TENANT, PARTICIPANT);
    expect(await readdir(folder)).toEqual([`${"f".repeat(64)}.webp`]);
    expect(await readFile(join(folder, `${"f".repeat(64)}.webp`))).toEqual(bytes);
    expect((await stat(join(folder, `${"f".repeat(64)}.webp`))).mode & 0o777).toBe(0o600);
  });

  it("keeps one file per participant through the API when a photo is replaced", async () => {
    const tenant = await newTenant(t().db);
    const participantId = await newParticipant(t(), tenant.tenantId, await newInstance(t(), tenant.tenantId));
    const root = join(fileRoot, "api");
    const app = photoApp(t().db, new FilePhotoStore(root));

    expect((await upload(app, tenant.admin.key, participantId, await image("jpeg"))).status).toBe(200);
    expect((await upload(app, tenant.admin.key, participantId, await image("gif"))).status).toBe(200);

    const files = await readdir(join(root, tenant.tenantId, participantId));
    expect(files).toHaveLength(1);
    expect(files[0]).toMatch(/^[0-9a-f]{64}\.gif$/);
    const got = await download(app, tenant.admin.key, participantId);
    expect(got.status).toBe(200);
    expect(got.bytes).toEqual(await readFile(join(root, tenant.tenantId, participantId, files[0] as string)));
  });
});

describe("Supabase Storage adapter (against the local stand-in)", () => {
  let tenant: TestTenant;
  let participantId: string;
  const supabaseApp = (env: Record<string, string> = {}) =>
    createApp({
      db: t().db,
      config: loadConfig({
        AUTH_JWT_SECRET: TEST_JWT_SECRET,
        SUPABASE_URL: storage.url,
        SUPABASE_SERVICE_ROLE_KEY: storage.serviceKey,
        ...env,
      }),
    });

  beforeAll(async () => {
    tenant = await newTenant(t().db);
    participantId = await newParticipant(t(), tenant.tenantId, await newInstance(t(), tenant.tenantId));
  });

  it("is what the app uses when Supabase's URL and key are configured, and keeps one object per participant", async () => {
    const app = supabaseApp();

    expect((await upload(app, tenant.admin.key, participantId, await image("jpeg", { metadata: true }))).status).toBe(200);
    const replaced = await upload(app, tenant.admin.key, participantId, await image("png"));
    expect(replaced.status).toBe(200);

    const keys = [...storage.objects.keys()].filter((k) => k.startsWith(`${PHOTO_BUCKET}/${tenant.tenantId}/`));
    expect(keys).toHaveLength(1);
    expect(keys[0]).toMatch(new RegExp(`^${PHOTO_BUCKET}/${tenant.tenantId}/${participantId}/[0-9a-f]{64}\\.png$`));
    expect(storage.objects.get(keys[0] as string)?.contentType).toBe("image/png");
    const got = await download(app, tenant.admin.key, participantId);
    expect(got.status).toBe(200);
    expect(got.headers.get("content-type")).toBe("image/png");
    expect(got.bytes).toEqual(storage.objects.get(keys[0] as string)?.bytes);
  });

  it("sends the service-role key on every call", async () => {
    const before = storage.requests.length;
    const store = new SupabasePhotoStore(storage.url, "wrong-key");
    await expect(store.put(key(TENANT, "9"), Buffer.from("x"), "image/png")).rejects.toThrow(PhotoStoreError);
    await expect(store.get(key(TENANT, "9"))).rejects.toThrow(PhotoStoreError);
    expect(storage.requests.length).toBe(before + 2);
  });

  it("reports a failing Storage as 503 and records nothing", async () => {
    const app = supabaseApp();
    const other = await newParticipant(t(), tenant.tenantId, await newInstance(t(), tenant.tenantId));
    storage.failNext(500);

    const res = await upload(app, tenant.admin.key, other, await image("png"));

    expect(res.status).toBe(503);
    expect(res.body.error.code).toBe("SERVICE_UNAVAILABLE");
    const { rows } = await t().admin("select photo_key from public.participants where id = $1", [other]);
    expect(rows[0].photo_key).toBeNull();
  });

  it("answers 503 for photos when no store is configured at all", async () => {
    const app = createApp({ db: t().db, config: loadConfig({ AUTH_JWT_SECRET: TEST_JWT_SECRET }) });
    const res = await upload(app, tenant.admin.key, participantId, await image("png"));
    expect(res.status).toBe(503);
    expect(res.body.error.message).toBe("photo storage is not configured");
  });
});

describe("the storage migration", () => {
  const migration = () => readFile(new URL("../sql/migrations/20260101004100_photo_storage.sql", import.meta.url), "utf8");

  it("does nothing on a database without Supabase Storage", async () => {
    const { rows } = await t().admin("select to_regclass('storage.buckets') as buckets");
    expect(rows[0].buckets).toBeNull();
    await expect(t().admin(await migration())).resolves.toBeDefined();
  });

  it("creates the private bucket and lets a user read only their own tenant's photos, writing none", async () => {
    // The parts of Supabase's storage schema the migration touches, as Supabase defines them.
    await t().admin(`
      create schema storage;
      create table storage.buckets (
        id text primary key, name text not null, public boolean default false,
        file_size_limit bigint, allowed_mime_types text[]
      );
      create table storage.objects (
        id uuid primary key default gen_random_uuid(), bucket_id text references storage.buckets (id), name text
      );
      alter table storage.objects enable row level security;
      create function storage.foldername(name text) returns text[] language plpgsql immutable as $$
      declare _parts text[];
      begin
        select string_to_array(name, '/') into _parts;
        return _parts[1:array_length(_parts, 1) - 1];
      end
      $$;
      grant usage on schema storage to authenticated;
      grant select, insert on storage.objects to authenticated;
    `);

    await t().admin(await migration());
    await t().admin(await migration()); // applying it twice changes nothing

    const { rows: buckets } = await t().admin("select * from storage.buckets");
    expect(buckets).toEqual([
      {
        id: "participant-photos",
        name: "participant-photos",
        public: false,
        file_size_limit: 5_242_880,
        allowed_mime_types: ["image/jpeg", "image/png", "image/gif", "image/webp"],
      },
    ]);
    await t().admin(
      `insert into storage.objects (bucket_id, name) values
         ('participant-photos', $1), ('participant-photos', $2)`,
      [key(TENANT, "a"), key(OTHER_TENANT, "b")],
    );

    const client = await t().db.pool.connect();
    try {
      await client.query("begin");
      await client.query("set local role authenticated");
      await client.query("select set_config('request.jwt.claims', $1, true)", [
        JSON.stringify({ role: "authenticated", tenant_id: TENANT }),
      ]);
      const { rows } = await client.query("select name from storage.objects");
      expect(rows.map((r) => r.name)).toEqual([key(TENANT, "a")]);
      await expect(
        client.query("insert into storage.objects (bucket_id, name) values ('participant-photos', $1)", [key(TENANT, "c")]),
      ).rejects.toThrow(/row-level security/);
    } finally {
      await client.query("rollback");
      client.release();
    }
  });
});
