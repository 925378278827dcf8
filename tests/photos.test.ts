import { createHash } from "node:crypto";
import { fileTypeFromBuffer } from "file-type";
import sharp from "sharp";
import { beforeAll, describe, expect, it } from "vitest";
import { MAX_PHOTO_BYTES } from "../functions/photos/limits.ts";
import { MemoryPhotoStore } from "../functions/photos/memory-store.ts";
import { useTestDatabase } from "./support/database.ts";
import { call, newTenant, type TestTenant } from "./support/fixtures.ts";
import {
  acTL,
  type Format,
  gifOfFrames,
  image,
  jpegSegment,
  leaks,
  picture,
  pixels,
  pngClaiming,
  withJpegSegments,
} from "./support/images.ts";
import { download, newInstance, newParticipant, type PhotoApp, photoApp, upload } from "./support/photos.ts";

const t = useTestDatabase();

const ALLOWED = ["image/jpeg", "image/png", "image/gif", "image/webp"];
const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

/** A JPEG padded with comment segments to exactly `size` bytes (the comments are stripped on upload). */
async function jpegOfSize(size: number): Promise<Buffer> {
  const base = await image("jpeg");
  const segments: Buffer[] = [];
  let missing = size - base.length;
  while (missing > 0) {
    let length = Math.min(missing, 65_535 + 2);
    if (missing - length > 0 && missing - length < 4) length -= 4;
    segments.push(jpegSegment(0xfe, Buffer.alloc(length - 4, 0x41)));
    missing -= length;
  }
  const padded = withJpegSegments(base, ...segments);
  expect(padded.length).toBe(size);
  return padded;
}

let tenant: TestTenant;
let instanceId: string;

beforeAll(async () => {
  tenant = await newTenant(t().db);
  instanceId = await newInstance(t(), tenant.tenantId);
});

function setUp() {
  const store = new MemoryPhotoStore();
  return { store, app: photoApp(t().db, store) };
}

async function participantRow(id: string) {
  const { rows } = await t().admin(
    "select photo_link, photo_key, photo_content_type, photo_size, photo_sha256 from public.participants where id = $1",
    [id],
  );
  return rows[0];
}

describe("POST /api/v1/photos/user/{userId}", () => {
  it.each<[Format, string]>([
    ["jpeg", "image/jpeg"],
    ["png", "image/png"],
    ["gif", "image/gif"],
    ["webp", "image/webp"],
  ])("accepts a %s photo, stores it under the tenant and participant, and links the participant to it", async (format, mime) => {
    const { store, app } = setUp();
    const participantId = await newParticipant(t(), tenant.tenantId, instanceId);
    const photo = await image(format, { metadata: format !== "gif" });

    const res = await upload(app, tenant.admin.key, participantId, photo);

    expect(res.status).toBe(200);
    const link = `/api/v1/photos/user/${participantId}`;
    expect(res.body).toEqual({
      success: true,
      data: { participant_id: participantId, photo_link: link, content_type: mime, size: expect.any(Number) },
      meta: { max_bytes: 5_242_880, allowed_types: ALLOWED },
    });
    const keys = await store.list(`${tenant.tenantId}/${participantId}/`);
    expect(keys).toHaveLength(1);
    const stored = store.objects.get(keys[0] as string);
    expect(stored?.contentType).toBe(mime);
    expect(stored?.bytes.length).toBe(res.body.data.size);
    expect(keys[0]).toBe(
      `${tenant.tenantId}/${participantId}/${sha256(stored?.bytes as Uint8Array)}.${format === "jpeg" ? "jpg" : format}`,
    );
    expect(leaks(stored?.bytes as Uint8Array)).toEqual([]);
    expect(await pixels(stored?.bytes as Uint8Array)).toEqual(await pixels(photo));
    expect(await participantRow(participantId)).toMatchObject({ photo_link: link, photo_key: keys[0], photo_content_type: mime });
  });

  it("removes EXIF GPS from a JPEG and a WebP before they are stored, and what is stored still decodes", async () => {
    const { store, app } = setUp();
    for (const format of ["jpeg", "webp"] as const) {
      const participantId = await newParticipant(t(), tenant.tenantId, instanceId);
      const photo = await image(format, { metadata: true });
      expect(leaks(photo)).toContain("GPS");

      const res = await upload(app, tenant.admin.key, participantId, photo);

      expect(res.status).toBe(200);
      const [key] = await store.list(`${tenant.tenantId}/${participantId}/`);
      const stored = store.objects.get(key as string)?.bytes as Uint8Array;
      expect(leaks(stored)).toEqual([]);
      expect((await fileTypeFromBuffer(stored))?.mime).toBe(`image/${format}`);
      const metadata = await sharp(stored).metadata();
      expect(metadata.exif).toBeUndefined();
      expect(metadata.width).toBe(48);
    }
  });

  it("takes the type from the bytes, not from the declared type or the file name", async () => {
    const { app } = setUp();
    const participantId = await newParticipant(t(), tenant.tenantId, instanceId);
    const png = await image("png");

    const res = await upload(app, tenant.admin.key, participantId, [
      { name: "photo", data: png, filename: "holiday.jpg", type: "image/jpeg" },
    ]);

    expect(res.status).toBe(200);
    expect(res.body.data.content_type).toBe("image/png");
  });

  it("accepts a photo of exactly 5,242,880 bytes and refuses one byte more with 413", async () => {
    const { store, app } = setUp();
    const participantId = await newParticipant(t(), tenant.tenantId, instanceId);

    const atLimit = await upload(app, tenant.admin.key, participantId, await jpegOfSize(MAX_PHOTO_BYTES));
    expect(atLimit.status).toBe(200);

    const over = await upload(app, tenant.admin.key, participantId, await jpegOfSize(MAX_PHOTO_BYTES + 1));
    expect(over.status).toBe(413);
    expect(over.body.error).toMatchObject({
      code: "PAYLOAD_TOO_LARGE",
      details: [{ field: "photo", issue: `must be at most ${MAX_PHOTO_BYTES} bytes` }],
    });
    expect(await store.list(`${tenant.tenantId}/${participantId}/`)).toHaveLength(1);
  });

  it("refuses with 413 an image whose size or frames would exhaust a browser, storing nothing", async () => {
    const { store, app } = setUp();
    const participantId = await newParticipant(t(), tenant.tenantId, instanceId);
    // Frames that alternate black and red: libvips merges identical frames.
    const frames = (count: number) => {
      const red = Buffer.alloc(count * 3);
      for (let i = 0; i < count; i += 2) red[i * 3] = 255;
      return sharp(red, { raw: { width: 1, height: count, channels: 3, pageHeight: 1 } as never })
        .gif()
        .toBuffer();
    };
    const webpOf = async (gif: Promise<Buffer>) =>
      sharp(await gif, { animated: true })
        .webp({ lossless: true })
        .toBuffer();
    const cases: Array<[string, Buffer, RegExp]> = [
      ["a PNG claiming 30000 × 30000", pngClaiming(30_000, 30_000), /8000 pixels wide and high \(is 30000 × 30000 pixels\)/],
      ["a GIF of 200,000 frames", gifOfFrames(200_000), /at most 1000 frames \(has 200000\)/],
      ["a 1 × 1 GIF screen hiding a 9000 × 9000 frame", gifOfFrames(1, 1, 1, 9000, 9000), /is 9000 × 9000 pixels/],
      ["a JPEG 8001 pixels wide", await picture(8001, 2).jpeg().toBuffer(), /is 8001 × 2 pixels/],
      ["a 7000 × 7000 PNG (49 megapixels)", pngClaiming(7000, 7000), /at most 40000000 pixels \(has 49000000\)/],
      ["an animated WebP of 1001 frames", await webpOf(frames(1001)), /has 1001\)/],
      ["an APNG announcing 5000 frames", pngClaiming(16, 16, acTL(5000)), /has 5000\)/],
      ["a GIF of 1000 frames of 1000 × 1000", gifOfFrames(1000, 1000, 1000), /over all frames \(has 1000000000\)/],
    ];
    for (const [name, photo, issue] of cases) {
      expect(photo.length, name).toBeLessThan(MAX_PHOTO_BYTES);
      const res = await upload(app, tenant.admin.key, participantId, photo);
      expect(res.status, name).toBe(413);
      expect(res.body.error.code, name).toBe("PAYLOAD_TOO_LARGE");
      expect(res.body.error.details, name).toEqual([{ field: "photo", issue: expect.stringMatching(issue) }]);
    }
    expect(await store.list(`${tenant.tenantId}/${participantId}/`)).toEqual([]);
    expect((await participantRow(participantId))?.photo_key).toBeNull();

    const atLimit = await upload(app, tenant.admin.key, participantId, await picture(8000, 2).jpeg().toBuffer());
    expect(atLimit.status).toBe(200);
    const animated = await upload(app, tenant.admin.key, participantId, await frames(1000));
    expect(animated.status).toBe(200);
  });

  it("refuses a body announced as larger than the limit with 413 before reading it", async () => {
    const { app } = setUp();
    const participantId = await newParticipant(t(), tenant.tenantId, instanceId);
    let pulled = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled++;
        controller.enqueue(new Uint8Array(64 * 1024));
      },
    });
    const res = await app.request(
      new Request(`http://localhost/api/v1/photos/user/${participantId}`, {
        method: "POST",
        headers: {
          "X-API-Key": tenant.admin.key,
          "Content-Type": "multipart/form-data; boundary=x",
          "Content-Length": String(6 * 1024 * 1024),
        },
        body,
        duplex: "half",
      } as RequestInit),
    );

    expect(res.status).toBe(413);
    expect((await res.json()).error.code).toBe("PAYLOAD_TOO_LARGE");
    expect(pulled).toBeLessThanOrEqual(1);
  });

  it("counts the bytes of a body sent without Content-Length and stops at the limit with 413", async () => {
    const { app } = setUp();
    const participantId = await newParticipant(t(), tenant.tenantId, instanceId);
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent > 50 * 1024 * 1024) return controller.close(); // a bound for the test, never reached
        sent += 256 * 1024;
        controller.enqueue(new Uint8Array(256 * 1024));
      },
    });
    const res = await app.request(
      new Request(`http://localhost/api/v1/photos/user/${participantId}`, {
        method: "POST",
        headers: {
          "X-API-Key": tenant.admin.key,
          "Content-Type": "multipart/form-data; boundary=x",
          "Transfer-Encoding": "chunked",
        },
        body,
        duplex: "half",
      } as RequestInit),
    );

    expect(res.status).toBe(413);
    expect(sent).toBeLessThan(MAX_PHOTO_BYTES + 1024 * 1024);
  });

  it("refuses with 415 a text file named .png, whatever type it declares", async () => {
    const { store, app } = setUp();
    const participantId = await newParticipant(t(), tenant.tenantId, instanceId);

    for (const type of ["image/png", "text/plain", undefined]) {
      const res = await upload(app, tenant.admin.key, participantId, [
        { name: "photo", data: "hello, I am not a picture", filename: "photo.png", ...(type ? { type } : {}) },
      ]);
      expect(res.status).toBe(415);
      expect(res.body.error.code).toBe("UNSUPPORTED_MEDIA_TYPE");
    }
    expect(store.objects.size).toBe(0);
  });

  it("refuses with 415 other image types and a body that is not multipart", async () => {
    const { app } = setUp();
    const participantId = await newParticipant(t(), tenant.tenantId, instanceId);

    const tiff = await upload(app, tenant.admin.key, participantId, [
      {
        name: "photo",
        data: await sharp(await image("png"))
          .tiff()
          .toBuffer(),
        filename: "a.tiff",
        type: "image/tiff",
      },
    ]);
    expect(tiff.status).toBe(415);

    const raw = await image("png");
    const notMultipart = await call(app, "POST", `/api/v1/photos/user/${participantId}`, {
      key: tenant.admin.key,
      raw: new Uint8Array(raw),
      headers: { "Content-Type": "image/png", "Content-Length": String(raw.length) },
    });
    expect(notMultipart.status).toBe(415);
    expect(notMultipart.body.error.code).toBe("UNSUPPORTED_MEDIA_TYPE");
  });

  it("refuses with 415 a photo whose bytes start like a JPEG but whose structure is broken", async () => {
    const { store, app } = setUp();
    const participantId = await newParticipant(t(), tenant.tenantId, instanceId);
    const whole = await image("jpeg", { metadata: true });

    const res = await upload(app, tenant.admin.key, participantId, whole.subarray(0, whole.length / 2));

    expect(res.status).toBe(415);
    expect(res.body.error.message).toMatch(/not a valid JPEG/);
    expect(store.objects.size).toBe(0);
  });

  it("answers 400 when the photo field is missing, empty or sent twice, or the body is not valid multipart", async () => {
    const { app } = setUp();
    const participantId = await newParticipant(t(), tenant.tenantId, instanceId);
    const jpeg = await image("jpeg");

    const missing = await upload(app, tenant.admin.key, participantId, [{ name: "picture", data: jpeg, filename: "a.jpg" }]);
    expect(missing.status).toBe(400);
    expect(missing.body.error).toMatchObject({ code: "VALIDATION_ERROR", details: [{ field: "photo" }] });

    const empty = await upload(app, tenant.admin.key, participantId, [{ name: "photo", data: "", filename: "a.jpg" }]);
    expect(empty.status).toBe(400);

    const twice = await upload(app, tenant.admin.key, participantId, [
      { name: "photo", data: jpeg, filename: "a.jpg" },
      { name: "photo", data: jpeg, filename: "b.jpg" },
    ]);
    expect(twice.status).toBe(400);

    const garbage = "this is not multipart at all";
    const malformed = await call(app, "POST", `/api/v1/photos/user/${participantId}`, {
      key: tenant.admin.key,
      raw: garbage,
      headers: { "Content-Type": "multipart/form-data; boundary=abc", "Content-Length": String(garbage.length) },
    });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.code).toBe("VALIDATION_ERROR");
  });

  it("answers 401 without a credential", async () => {
    const { app } = setUp();
    const participantId = await newParticipant(t(), tenant.tenantId, instanceId);
    const res = await upload(app, "", participantId, await image("jpeg"));
    expect(res.status).toBe(401);
  });
});

describe("userId resolution", () => {
  it("accepts a participant's user_id when exactly one live participant of the tenant has it", async () => {
    const { app } = setUp();
    const participantId = await newParticipant(t(), tenant.tenantId, instanceId, "camper-007");

    const res = await upload(app, tenant.admin.key, "camper-007", await image("png"));

    expect(res.status).toBe(200);
    expect(res.body.data.participant_id).toBe(participantId);
    expect(res.body.data.photo_link).toBe(`/api/v1/photos/user/${participantId}`);
    expect((await download(app, tenant.admin.key, "camper-007")).status).toBe(200);
  });

  it("answers 409 when a user_id names participants of several instances, and ?instance_id= chooses", async () => {
    const { app } = setUp();
    const otherInstance = await newInstance(t(), tenant.tenantId);
    await newParticipant(t(), tenant.tenantId, instanceId, "twin");
    const second = await newParticipant(t(), tenant.tenantId, otherInstance, "twin");

    const ambiguous = await upload(app, tenant.admin.key, "twin", await image("png"));
    expect(ambiguous.status).toBe(409);
    expect(ambiguous.body.error.code).toBe("CONFLICT");

    const chosen = await upload(app, tenant.admin.key, "twin", await image("png"), { query: `?instance_id=${otherInstance}` });
    expect(chosen.status).toBe(200);
    expect(chosen.body.data.participant_id).toBe(second);

    const badFilter = await upload(app, tenant.admin.key, "twin", await image("png"), { query: "?instance_id=nope" });
    expect(badFilter.status).toBe(400);
  });

  it("answers 404 for an unknown id or user_id", async () => {
    const { app } = setUp();
    const photo = await image("png");
    expect((await upload(app, tenant.admin.key, "00000000-0000-4000-8000-000000000000", photo)).status).toBe(404);
    const res = await upload(app, tenant.admin.key, "nobody-by-that-name", photo);
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe("NOT_FOUND");
  });
});

describe("replacing a photo", () => {
  it("leaves exactly one object in the store: the new one", async () => {
    const { store, app } = setUp();
    const participantId = await newParticipant(t(), tenant.tenantId, instanceId);
    const first = await upload(app, tenant.admin.key, participantId, await image("jpeg"));
    expect(first.status).toBe(200);

    const second = await upload(app, tenant.admin.key, participantId, await image("webp"));

    expect(second.status).toBe(200);
    const keys = await store.list(`${tenant.tenantId}/${participantId}/`);
    expect(keys).toHaveLength(1);
    expect(keys[0]).toMatch(/\.webp$/);
    const got = await download(app, tenant.admin.key, participantId);
    expect(got.headers.get("content-type")).toBe("image/webp");
  });

  it("keeps the one object when the same photo is uploaded again", async () => {
    const { store, app } = setUp();
    const participantId = await newParticipant(t(), tenant.tenantId, instanceId);
    const photo = await image("png");
    await upload(app, tenant.admin.key, participantId, photo);

    const again = await upload(app, tenant.admin.key, participantId, photo);

    expect(again.status).toBe(200);
    expect(await store.list(`${tenant.tenantId}/${participantId}/`)).toHaveLength(1);
    expect((await download(app, tenant.admin.key, participantId)).status).toBe(200);
  });

  it("applies concurrent uploads for one participant one after the other and keeps only the last", async () => {
    const { store, app } = setUp();
    const participantId = await newParticipant(t(), tenant.tenantId, instanceId);
    const photos = await Promise.all(["jpeg", "png", "gif", "webp"].map((f) => image(f as Format)));

    const results = await Promise.all(photos.map((photo) => upload(app, tenant.admin.key, participantId, photo)));

    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    const keys = await store.list(`${tenant.tenantId}/${participantId}/`);
    expect(keys).toEqual([(await participantRow(participantId)).photo_key]);
  });
});

describe("GET /api/v1/photos/user/{userId}", () => {
  let app: PhotoApp;
  let participantId: string;
  let stored: { sha: string; bytes: Buffer };

  beforeAll(async () => {
    app = setUp().app;
    participantId = await newParticipant(t(), tenant.tenantId, instanceId, "served-camper");
    const res = await upload(app, tenant.admin.key, participantId, await image("jpeg", { metadata: true }));
    expect(res.status).toBe(200);
    const row = await participantRow(participantId);
    const got = await download(app, tenant.admin.key, participantId);
    stored = { sha: row.photo_sha256, bytes: got.bytes };
  });

  it("serves the stored photo with its type, length, a private cache policy and an ETag", async () => {
    const res = await download(app, tenant.admin.key, participantId);

    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/jpeg");
    expect(res.headers.get("content-length")).toBe(String(res.bytes.length));
    expect(res.headers.get("cache-control")).toBe("private");
    expect(res.headers.get("etag")).toBe(`"${stored.sha}"`);
    expect(sha256(res.bytes)).toBe(stored.sha);
    expect(leaks(res.bytes)).toEqual([]);
  });

  it("answers 304 with no body when If-None-Match holds the ETag", async () => {
    const res = await download(app, tenant.admin.key, participantId, { "If-None-Match": `W/"x", "${stored.sha}"` });

    expect(res.status).toBe(304);
    expect(res.bytes.length).toBe(0);
    expect(res.headers.get("etag")).toBe(`"${stored.sha}"`);
    expect((await download(app, tenant.admin.key, participantId, { "If-None-Match": '"other"' })).status).toBe(200);
  });

  it("answers 404 for a participant without a photo", async () => {
    const bare = await newParticipant(t(), tenant.tenantId, instanceId);
    const res = await call(app, "GET", `/api/v1/photos/user/${bare}`, { key: tenant.admin.key });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe("NOT_FOUND");
  });

  it("uses PUBLIC_URL for photo_link when it is set", async () => {
    const linked = photoApp(t().db, new MemoryPhotoStore(), { PUBLIC_URL: "https://camp.example/functions/v1/api/" });
    const id = await newParticipant(t(), tenant.tenantId, instanceId);
    const res = await upload(linked, tenant.admin.key, id, await image("gif"));
    expect(res.status).toBe(200);
    expect(res.body.data.photo_link).toBe(`https://camp.example/functions/v1/api/api/v1/photos/user/${id}`);
  });
});

describe("tenancy and deletion", () => {
  it("answers 404 to another tenant uploading to or reading a participant, and changes nothing", async () => {
    const { store, app } = setUp();
    const participantId = await newParticipant(t(), tenant.tenantId, instanceId, "shared-name");
    await upload(app, tenant.admin.key, participantId, await image("jpeg"));
    const before = await participantRow(participantId);
    const other = await newTenant(t().db);
    await newParticipant(t(), other.tenantId, await newInstance(t(), other.tenantId), "someone-else");

    expect((await upload(app, other.admin.key, participantId, await image("png"))).status).toBe(404);
    expect((await upload(app, other.admin.key, "shared-name", await image("png"))).status).toBe(404);
    expect((await download(app, other.admin.key, participantId)).status).toBe(404);
    expect((await download(app, other.admin.key, "shared-name")).status).toBe(404);

    expect(await participantRow(participantId)).toEqual(before);
    expect(await store.list(`${other.tenantId}/`)).toEqual([]);
    expect(await store.list(`${tenant.tenantId}/${participantId}/`)).toEqual([before.photo_key]);
  });

  it("makes a deleted participant's photo unreachable and refuses uploads to it", async () => {
    const { app } = setUp();
    const participantId = await newParticipant(t(), tenant.tenantId, instanceId, "leaver");
    await upload(app, tenant.admin.key, participantId, await image("jpeg"));
    expect((await download(app, tenant.admin.key, participantId)).status).toBe(200);

    await t().admin("update public.participants set deleted_at = now() where id = $1", [participantId]);

    expect((await download(app, tenant.admin.key, participantId)).status).toBe(404);
    expect((await download(app, tenant.admin.key, "leaver")).status).toBe(404);
    expect((await upload(app, tenant.admin.key, participantId, await image("png"))).status).toBe(404);
  });
});

describe("consistency between the store and the database", () => {
  it("removes the new object when the participant is deleted between storing it and recording it", async () => {
    const store = new MemoryPhotoStore();
    const app = photoApp(t().db, store);
    const participantId = await newParticipant(t(), tenant.tenantId, instanceId);
    await upload(app, tenant.admin.key, participantId, await image("jpeg"));
    const before = await participantRow(participantId);
    const put = store.put.bind(store);
    store.put = async (key, bytes, type) => {
      await put(key, bytes, type);
      await t().admin("update public.participants set deleted_at = now() where id = $1", [participantId]);
    };

    const res = await upload(app, tenant.admin.key, participantId, await image("png"));

    expect(res.status).toBe(404);
    expect(await store.list(`${tenant.tenantId}/${participantId}/`)).toEqual([before.photo_key]);
    expect(await participantRow(participantId)).toEqual(before);
  });

  it("removes the new object when the database refuses the update (archived instance: 409)", async () => {
    const store = new MemoryPhotoStore();
    const app = photoApp(t().db, store);
    const archived = await newInstance(t(), tenant.tenantId);
    const participantId = await newParticipant(t(), tenant.tenantId, archived);
    await upload(app, tenant.admin.key, participantId, await image("jpeg"));
    const before = await participantRow(participantId);
    await t().admin("update public.instances set status = 'archived' where id = $1", [archived]);

    const res = await upload(app, tenant.admin.key, participantId, await image("png"));

    expect(res.status).toBe(409);
    expect(await store.list(`${tenant.tenantId}/${participantId}/`)).toEqual([before.photo_key]);
    expect(await participantRow(participantId)).toEqual(before);
  });

  it("answers 503 and changes nothing when the store fails", async () => {
    const store = new MemoryPhotoStore();
    const app = photoApp(t().db, store);
    const participantId = await newParticipant(t(), tenant.tenantId, instanceId);
    const { PhotoStoreError } = await import("../functions/photos/store.ts");
    store.put = async () => {
      throw new PhotoStoreError("disk full");
    };

    const res = await upload(app, tenant.admin.key, participantId, await image("png"));

    expect(res.status).toBe(503);
    expect(res.body.error).toEqual({
      code: "SERVICE_UNAVAILABLE",
      message: "photo storage is unavailable",
      request_id: expect.any(String),
    });
    expect((await participantRow(participantId)).photo_key).toBeNull();
  });

  it("keeps the database from pointing a photo key outside the row's own tenant and participant folder", async () => {
    const participantId = await newParticipant(t(), tenant.tenantId, instanceId);
    const sha = "a".repeat(64);
    await expect(
      t().admin(
        `update public.participants set photo_key = $2, photo_content_type = 'image/png', photo_size = 10, photo_sha256 = $3
         where id = $1`,
        [participantId, `${tenant.tenantId}/00000000-0000-4000-8000-000000000000/${sha}.png`, sha],
      ),
    ).rejects.toThrow(/participants_photo_key_check/);
  });
});
