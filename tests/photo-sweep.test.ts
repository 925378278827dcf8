import { mkdir, mkdtemp, readdir, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { beforeAll, describe, expect, it } from "vitest";
import { MemoryPhotoStore } from "../functions/photos/memory-store.ts";
import { PhotoStoreError } from "../functions/photos/store.ts";
import { sweepPhotos } from "../functions/photos/sweep.ts";
import { FilePhotoStore } from "../node/photo-files.ts";
import { useTestDatabase } from "./support/database.ts";
import { newTenant, type TestTenant } from "./support/fixtures.ts";
import { image } from "./support/images.ts";
import { newInstance, newParticipant, photoApp, upload } from "./support/photos.ts";
import { run, TSX } from "./support/processes.ts";

/**
 * `camp photos sweep`: what no live participant points at goes, what one does
 * (or is about to) stays, including an upload that commits while the sweep runs.
 */

const t = useTestDatabase();
let tenant: TestTenant;
let instanceId: string;

beforeAll(async () => {
  tenant = await newTenant(t().db);
  instanceId = await newInstance(t(), tenant.tenantId);
});

/** A memory store whose deletes fail, as a Storage that answers `200 []` to them would. */
class UndeletableStore extends MemoryPhotoStore {
  override async delete(): Promise<void> {
    throw new PhotoStoreError("delete refused", { kind: "misconfigured" });
  }
}

async function photoKeyOf(participantId: string): Promise<string> {
  return (await t().admin("select photo_key from participants where id = $1", [participantId])).rows[0].photo_key;
}

describe("camp photos sweep", () => {
  it("deletes a replaced photo whose delete failed, keeps current ones, and a dry run deletes nothing", async () => {
    const store = new UndeletableStore();
    const app = photoApp(t().db, store);
    const id = await newParticipant(t(), tenant.tenantId, instanceId);
    await upload(app, tenant.admin.key, id, await image("png"));
    const first = await photoKeyOf(id);
    await upload(app, tenant.admin.key, id, await image("gif"));
    const second = await photoKeyOf(id);
    expect(store.objects.has(first)).toBe(true);

    const clean = new MemoryPhotoStore();
    for (const [key, value] of store.objects) clean.objects.set(key, value);
    const dry = await sweepPhotos(t().db, clean, { dryRun: true, olderThanDays: 30 });
    expect(dry).toMatchObject({ dry_run: true, deleted: 0 });
    expect(dry.orphaned).toContain(first);
    expect(dry.orphaned).not.toContain(second);
    expect(clean.objects.has(first)).toBe(true);

    const real = await sweepPhotos(t().db, clean, { olderThanDays: 30 });
    expect(real.deleted).toBeGreaterThanOrEqual(1);
    expect(clean.objects.has(first)).toBe(false);
    expect(clean.objects.has(second)).toBe(true);
  });

  it("removes a file store's temporary file that a crashed write left (a copy of a photo under no key), not one being written", async () => {
    const root = await mkdtemp(join(tmpdir(), "camp-sweep-tmp-"));
    try {
      const store = new FilePhotoStore(root);
      const folder = join(root, tenant.tenantId, "00000000-0000-4000-8000-000000000001");
      await mkdir(folder, { recursive: true });
      const crashed = join(folder, `${"a".repeat(64)}.png.1a2b3c.tmp`);
      const writing = join(folder, `${"b".repeat(64)}.png.4d5e6f.tmp`);
      await writeFile(crashed, await image("png"));
      await writeFile(writing, await image("png"));
      const twoHoursAgo = new Date(Date.now() - 2 * 3_600_000);
      await utimes(crashed, twoHoursAgo, twoHoursAgo);

      const dry = await sweepPhotos(t().db, store, { dryRun: true, olderThanDays: 30 });
      expect(dry.abandoned).toEqual([crashed.slice(root.length + 1)]);
      expect((await readdir(folder)).length).toBe(2);
      const real = await sweepPhotos(t().db, store, { olderThanDays: 30 });
      expect(real.abandoned).toEqual([crashed.slice(root.length + 1)]);
      expect(await readdir(folder)).toEqual([writing.slice(folder.length + 1)]);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it("deletes the photos of participants deleted longer ago than the retention, and keeps the others", async () => {
    const store = new MemoryPhotoStore();
    const app = photoApp(t().db, store);
    const [live, recent, old] = [
      await newParticipant(t(), tenant.tenantId, instanceId),
      await newParticipant(t(), tenant.tenantId, instanceId),
      await newParticipant(t(), tenant.tenantId, instanceId),
    ] as [string, string, string];
    for (const id of [live, recent, old]) await upload(app, tenant.admin.key, id, await image("webp"));
    await t().admin("update participants set deleted_at = now() - interval '5 days' where id = $1", [recent]);
    await t().admin("update participants set deleted_at = now() - interval '31 days' where id = $1", [old]);

    const report = await sweepPhotos(t().db, store, { olderThanDays: 30 });
    expect(report.expired).toEqual([await photoKeyOf(old)]);
    expect(store.objects.has(await photoKeyOf(old))).toBe(false);
    expect(store.objects.has(await photoKeyOf(recent))).toBe(true);
    expect(store.objects.has(await photoKeyOf(live))).toBe(true);

    await sweepPhotos(t().db, store, { olderThanDays: 3 });
    expect(store.objects.has(await photoKeyOf(recent))).toBe(false);
    expect(store.objects.has(await photoKeyOf(live))).toBe(true);
  });

  it.each([
    ["", {}],
    [" (sent with an Idempotency-Key, so the request is one transaction)", { "Idempotency-Key": "sweep-race" }],
  ])(
    "keeps the object of an upload that is stored but not yet committed%s, and that upload then commits a working photo",
    async (_, headers) => {
      const store = new MemoryPhotoStore();
      const app = photoApp(t().db, store);
      const id = await newParticipant(t(), tenant.tenantId, instanceId);

      // Hold the participant's row: the upload stores its object, then waits to point the row at it.
      const holder = new pg.Client({ connectionString: t().url });
      await holder.connect();
      try {
        await holder.query("begin");
        await holder.query("select from participants where id = $1 for update", [id]);
        const uploading = upload(app, tenant.admin.key, id, await image("jpeg"), { headers });
        for (let i = 0; i < 200 && store.objects.size === 0; i++) await new Promise((r) => setTimeout(r, 25));
        const [pending] = [...store.objects.keys()].filter((k) => k.includes(id));
        expect(pending).toBeDefined();

        const report = await sweepPhotos(t().db, store, { olderThanDays: 30 });
        expect(report.orphaned).not.toContain(pending);
        expect(store.objects.has(pending as string)).toBe(true);

        await holder.query("commit");
        expect((await uploading).status).toBe(200);
        expect(await photoKeyOf(id)).toBe(pending);
        await sweepPhotos(t().db, store, { olderThanDays: 30 });
        expect(store.objects.has(pending as string)).toBe(true);
      } finally {
        await holder.end();
      }
    },
  );

  it("never deletes an object a committed row points at, with uploads and sweeps running side by side", async () => {
    const store = new MemoryPhotoStore();
    const app = photoApp(t().db, store);
    const ids = await Promise.all(Array.from({ length: 6 }, () => newParticipant(t(), tenant.tenantId, instanceId)));
    const photos = await Promise.all((["png", "gif", "webp", "jpeg"] as const).map((f) => image(f)));
    let uploading = true;
    const sweeping = (async () => {
      while (uploading) await sweepPhotos(t().db, store, { olderThanDays: 30 });
    })();
    await Promise.all(
      ids.map(async (id, n) => {
        for (let round = 0; round < 4; round++) {
          const res = await upload(app, tenant.admin.key, id, photos[(n + round) % photos.length] as Buffer);
          expect(res.status).toBe(200);
        }
      }),
    );
    uploading = false;
    await sweeping;
    for (const id of ids) expect(store.objects.has(await photoKeyOf(id)), id).toBe(true);
  });

  it("runs from the CLI over the configured store, with a JSON report on stdout", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "camp-sweep-"));
    try {
      const store = new FilePhotoStore(join(dataDir, "photos"));
      const app = photoApp(t().db, store);
      const id = await newParticipant(t(), tenant.tenantId, instanceId);
      await upload(app, tenant.admin.key, id, await image("png"));
      const stray = `${tenant.tenantId}/${id}/${"e".repeat(64)}.png`;
      await store.put(stray, await image("png"), "image/png");

      const env = { DATABASE_URL: t().url, DATA_DIR: dataDir, PHOTO_STORAGE: "file" };
      const dry = await run(TSX, ["cli/main.ts", "photos", "sweep", "--dry-run"], env);
      expect(dry.code, dry.stderr).toBe(0);
      expect(JSON.parse(dry.stdout)).toMatchObject({ dry_run: true, orphaned: expect.arrayContaining([stray]), deleted: 0 });
      expect(await store.list("")).toContain(stray);

      const real = await run(TSX, ["cli/main.ts", "photos", "sweep", "--older-than", "30d"], env);
      expect(real.code, real.stderr).toBe(0);
      expect(JSON.parse(real.stdout).deleted).toBeGreaterThanOrEqual(1);
      expect(await store.list("")).not.toContain(stray);
      expect(await store.list("")).toContain(await photoKeyOf(id));
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
