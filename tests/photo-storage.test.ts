import { mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../functions/app.ts";
import { loadConfig } from "../functions/config.ts";
import { type PhotoStore, PhotoStoreError } from "../functions/photos/store.ts";
import { PHOTO_BUCKET, PHOTO_BUCKET_SETTINGS, SupabasePhotoStore } from "../functions/photos/supabase-store.ts";
import { FilePhotoStore } from "../node/photo-files.ts";
import { validated } from "./support/contract.ts";
import { useTestDatabase } from "./support/database.ts";
import { newTenant, TEST_JWT_SECRET, type TestTenant } from "./support/fixtures.ts";
import { image } from "./support/images.ts";
import { useLogCapture } from "./support/logs.ts";
import { download, newInstance, newParticipant, photoApp, upload } from "./support/photos.ts";
import { run, TSX } from "./support/processes.ts";
import { startServerProcess } from "./support/server-process.ts";
import { type StorageStandIn, startStorageStandIn } from "./support/storage-stand-in.ts";

const t = useTestDatabase();
const logs = useLogCapture();

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
  storage = await startStorageStandIn({ buckets: { [PHOTO_BUCKET]: { ...PHOTO_BUCKET_SETTINGS } } });
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
    validated(
      createApp({
        db: t().db,
        config: loadConfig({
          AUTH_JWT_SECRET: TEST_JWT_SECRET,
          SUPABASE_URL: storage.url,
          SUPABASE_SERVICE_ROLE_KEY: storage.serviceKey,
          ...env,
        }),
      }),
    );

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
    const app = validated(createApp({ db: t().db, config: loadConfig({ AUTH_JWT_SECRET: TEST_JWT_SECRET }) }));
    const res = await upload(app, tenant.admin.key, participantId, await image("png"));
    expect(res.status).toBe(503);
    expect(res.body.error.message).toBe("photo storage is not configured");
  });
});

describe("what Storage's answers mean (the real server's ways, through the stand-in)", () => {
  let tenant: TestTenant;
  let instanceId: string;

  beforeAll(async () => {
    tenant = await newTenant(t().db);
    instanceId = await newInstance(t(), tenant.tenantId);
  });
  /** A participant whose row points at a stored photo, and an app on `store`. */
  async function withPhoto() {
    const good = new SupabasePhotoStore(storage.url, storage.serviceKey);
    const id = await newParticipant(t(), tenant.tenantId, instanceId);
    expect((await upload(photoApp(t().db, good), tenant.admin.key, id, await image("png"))).status).toBe(200);
    return id;
  }

  const misconfigured = () => ({
    "an anon key (its object GET is served as anonymous)": new SupabasePhotoStore(storage.url, storage.anonKey),
    "an invalid or expired key": new SupabasePhotoStore(storage.url, "not-a-valid-jwt"),
    "a wrong SUPABASE_URL": new SupabasePhotoStore(`${storage.url}/wrong`, storage.serviceKey),
  });

  it("answers 404 only for a missing object (NoSuchKey)", async () => {
    const id = await withPhoto();
    for (const key of [...storage.objects.keys()].filter((k) => k.includes(id))) storage.objects.delete(key);
    const res = await download(photoApp(t().db, new SupabasePhotoStore(storage.url, storage.serviceKey)), tenant.admin.key, id);
    expect(res.status).toBe(404);
  });

  it("answers 503, never 404, to a photo read with a bad key or URL, and logs the cause once with the request id", async () => {
    const id = await withPhoto();
    for (const [why, store] of Object.entries(misconfigured())) {
      logs.lines.length = 0;
      const res = await download(photoApp(t().db, store), tenant.admin.key, id);
      expect(res.status, why).toBe(503);
      const body = JSON.parse(res.bytes.toString());
      expect(body.error.code).toBe("SERVICE_UNAVAILABLE");
      const warnings = logs.events().filter((e) => e.request_id === body.error.request_id && e.level === "WARN");
      expect(warnings, why).toHaveLength(1);
      expect(JSON.stringify(warnings[0]), why).toMatch(/Supabase Storage/);
    }
  });

  it("answers 503 to a photo read when the bucket is gone", async () => {
    const id = await withPhoto();
    const settings = storage.buckets.get(PHOTO_BUCKET);
    storage.buckets.delete(PHOTO_BUCKET);
    try {
      const res = await download(photoApp(t().db, new SupabasePhotoStore(storage.url, storage.serviceKey)), tenant.admin.key, id);
      expect(res.status).toBe(503);
    } finally {
      storage.buckets.set(PHOTO_BUCKET, settings ?? {});
    }
  });

  it("treats a delete that removed nothing of an object still there as a failure, and a missing object as removed", async () => {
    const id = await withPhoto();
    const [stored] = [...storage.objects.keys()].filter((k) => k.includes(id));
    const photoKey = (stored as string).slice(PHOTO_BUCKET.length + 1);
    for (const [why, store] of Object.entries(misconfigured())) {
      await expect(store.delete(photoKey), why).rejects.toMatchObject({ kind: "misconfigured" });
    }
    expect(storage.objects.has(stored as string)).toBe(true);
    const good = new SupabasePhotoStore(storage.url, storage.serviceKey);
    await good.delete(photoKey);
    expect(storage.objects.has(stored as string)).toBe(false);
    await expect(good.delete(photoKey)).resolves.toBeUndefined();
  });

  it("keeps the new photo when the replaced one cannot be deleted, and logs what was left behind", async () => {
    const id = await withPhoto();
    const anonDeletes = new SupabasePhotoStore(storage.url, storage.serviceKey, {
      // Uploads and reads as the service; deletes as anon, which the server answers 200 [] and ignores.
      fetch: (url, init) =>
        fetch(
          url,
          init?.method === "DELETE"
            ? { ...init, headers: { ...(init.headers as Record<string, string>), Authorization: `Bearer ${storage.anonKey}` } }
            : init,
        ),
    });
    logs.lines.length = 0;
    const res = await upload(photoApp(t().db, anonDeletes), tenant.admin.key, id, await image("gif"));
    expect(res.status).toBe(200);
    expect([...storage.objects.keys()].filter((k) => k.includes(id))).toHaveLength(2);
    expect(logs.lines.some((line) => line.includes("clean-up failed"))).toBe(true);
  });

  it("classifies a server error as unavailable and a refusal as misconfigured", async () => {
    const good = new SupabasePhotoStore(storage.url, storage.serviceKey);
    storage.failNext(500);
    await expect(good.get(key(TENANT, "7"))).rejects.toMatchObject({ kind: "unavailable" });
    const down = new SupabasePhotoStore("http://127.0.0.1:9", storage.serviceKey);
    await expect(down.get(key(TENANT, "7"))).rejects.toMatchObject({ kind: "unavailable" });
    for (const store of Object.values(misconfigured())) {
      await expect(store.put(key(TENANT, "7"), Buffer.from("x"), "image/png")).rejects.toMatchObject({ kind: "misconfigured" });
    }
  });
});

describe("the bucket, provisioned by the service", () => {
  const camp = (env: Record<string, string>) => run(TSX, ["cli/main.ts", "storage", "init"], env);

  it("camp storage init creates the private bucket with the photo limits, corrects one that differs, and is idempotent", async () => {
    const fresh = await startStorageStandIn();
    try {
      const env = { SUPABASE_URL: fresh.url, SUPABASE_SERVICE_ROLE_KEY: fresh.serviceKey };
      const first = await camp(env);
      expect(first.code, first.stderr).toBe(0);
      expect(JSON.parse(first.stdout)).toEqual({ bucket: PHOTO_BUCKET, outcome: "created" });
      expect(fresh.buckets.get(PHOTO_BUCKET)).toMatchObject(PHOTO_BUCKET_SETTINGS);
      expect(JSON.parse((await camp(env)).stdout).outcome).toBe("ok");
      Object.assign(fresh.buckets.get(PHOTO_BUCKET) ?? {}, { public: true, file_size_limit: null });
      expect(JSON.parse((await camp(env)).stdout).outcome).toBe("updated");
      expect(fresh.buckets.get(PHOTO_BUCKET)).toMatchObject(PHOTO_BUCKET_SETTINGS);
    } finally {
      await fresh.close();
    }
  });

  it("camp storage init says what is wrong with an anon key, a bad key or a wrong URL, and exits non-zero", async () => {
    const fresh = await startStorageStandIn();
    try {
      for (const env of [
        { SUPABASE_URL: fresh.url, SUPABASE_SERVICE_ROLE_KEY: fresh.anonKey },
        { SUPABASE_URL: fresh.url, SUPABASE_SERVICE_ROLE_KEY: "not-a-key" },
        { SUPABASE_URL: `${fresh.url}/rest`, SUPABASE_SERVICE_ROLE_KEY: fresh.serviceKey },
      ]) {
        const res = await camp(env);
        expect(res.code).toBe(1);
        expect(res.stderr).toMatch(/^camp: .*(service-role key|Supabase Storage)/);
        expect(res.stderr).not.toContain(env.SUPABASE_SERVICE_ROLE_KEY);
      }
      expect(fresh.buckets.size).toBe(0);
    } finally {
      await fresh.close();
    }
  });

  it("is made by the server at start; a key Storage refuses stops the start with a clear message", {
    timeout: 120_000,
  }, async () => {
    const fresh = await startStorageStandIn();
    try {
      const env = { DATABASE_URL: t().url, PHOTO_STORAGE: "supabase", SUPABASE_URL: fresh.url };
      await expect(startServerProcess({ ...env, SUPABASE_SERVICE_ROLE_KEY: fresh.anonKey })).rejects.toThrow(
        /photo storage at SUPABASE_URL is not usable: .*service-role key/,
      );
      expect(fresh.buckets.size).toBe(0);
      const server = await startServerProcess({ ...env, SUPABASE_SERVICE_ROLE_KEY: fresh.serviceKey });
      try {
        expect(fresh.buckets.get(PHOTO_BUCKET)).toMatchObject(PHOTO_BUCKET_SETTINGS);
        expect(server.stderr()).toContain(`photo bucket ${PHOTO_BUCKET}: created`);
      } finally {
        await server.stop();
      }
    } finally {
      await fresh.close();
    }
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
