import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryPhotoStore } from "../functions/photos/memory-store.ts";
import { type HttpServer, listen } from "../node/http-server.ts";
import { useTestDatabase } from "./support/database.ts";
import { call, newTenant, type TestTenant, testApp } from "./support/fixtures.ts";
import { image } from "./support/images.ts";
import { download, multipart, newInstance, newParticipant, photoApp, upload } from "./support/photos.ts";

/**
 * What an attacker could plant in links and headers that others then follow:
 * a photo_link built from a forged Host, a `javascript:` photo_link, a photo
 * or CSV that a browser sniffs into HTML, and body bytes left on a kept-alive
 * socket after a 413.
 */

const t = useTestDatabase();
let tenant: TestTenant;
let instanceId: string;

beforeAll(async () => {
  tenant = await newTenant(t().db);
  instanceId = await newInstance(t(), tenant.tenantId);
});

describe("photo_link built by the service", () => {
  it("never comes from the request's Host or forwarding headers", async () => {
    const app = photoApp(t().db);
    const id = await newParticipant(t(), tenant.tenantId, instanceId);
    const { body, contentType } = multipart([{ name: "photo", data: await image("png"), filename: "p.png", type: "image/png" }]);
    const res = await app.request(`http://evil.example/api/v1/photos/user/${id}`, {
      method: "POST",
      headers: {
        "X-API-Key": tenant.admin.key,
        "Content-Type": contentType,
        "Content-Length": String(body.length),
        Host: "evil.example",
        "X-Forwarded-Host": "evil.example",
        "X-Forwarded-Proto": "https",
        Forwarded: "host=evil.example;proto=https",
      },
      body: new Uint8Array(body),
    });
    expect(res.status).toBe(200);
    const link = ((await res.json()) as { data: { photo_link: string } }).data.photo_link;
    expect(link).toBe(`/api/v1/photos/user/${id}`);
    const stored = await t().admin("select photo_link from participants where id = $1", [id]);
    expect(stored.rows[0].photo_link).toBe(link);
  });

  it("is absolute only under the operator's PUBLIC_URL", async () => {
    const app = photoApp(t().db, new MemoryPhotoStore(), { PUBLIC_URL: "https://camp.example" });
    const id = await newParticipant(t(), tenant.tenantId, instanceId);
    const res = await upload(app, tenant.admin.key, id, await image("gif"));
    expect(res.body.data.photo_link).toBe(`https://camp.example/api/v1/photos/user/${id}`);
  });
});

describe("photo_link written by a client", () => {
  const app = () => testApp(t().db);
  const create = (photo_link: string) =>
    call(app(), "POST", "/api/v1/participants", {
      key: tenant.admin.key,
      body: { user_id: `p-${Math.random()}`, instance_id: instanceId, first_name: "Ada", surname: "Byron", photo_link },
    });

  it.each([
    "javascript:alert(1)",
    "JavaScript:alert(1)",
    " javascript:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "vbscript:msgbox(1)",
    "file:///etc/passwd",
    "//evil.example/a.jpg",
    "/api/v1/photos/user/../../evil",
    "/somewhere/else.jpg",
    "http://",
    "not a url",
  ])("refuses %j naming photo_link, on create, update, bulk and CSV import", async (value) => {
    const created = await create(value);
    expect(created.status).toBe(400);
    expect(JSON.stringify(created.body.error.details)).toContain("photo_link");

    const ok = await create("https://example.test/a.jpg");
    const patched = await call(app(), "PATCH", `/api/v1/participants/${ok.body.data.id}`, {
      key: tenant.admin.key,
      body: { photo_link: value },
    });
    expect(patched.status).toBe(400);

    const bulk = await call(app(), "POST", "/api/v1/participants/bulk", {
      key: tenant.admin.key,
      body: { participants: [{ user_id: "b1", instance_id: instanceId, first_name: "A", surname: "B", photo_link: value }] },
    });
    expect(bulk.status).toBe(400);

    const csv = new TextEncoder().encode(`user_id,first_name,surname,photo_link\nc1,A,B,"${value.replaceAll('"', '""')}"\n`);
    const imported = await call(app(), "POST", `/api/v1/participants/import?instance_id=${instanceId}&dry_run=true`, {
      key: tenant.admin.key,
      raw: csv,
      headers: { "Content-Type": "text/csv", "Content-Length": String(csv.length) },
    });
    expect(imported.status).toBe(400);
    expect(JSON.stringify(imported.body.error.details)).toContain("photo_link");
  });

  it.each(["https://example.test/a.jpg", "HTTP://example.test/a.jpg?x=1#y"])("accepts the http(s) URL %j", async (value) => {
    expect((await create(value)).status).toBe(201);
  });

  it("accepts the service's own photo path", async () => {
    const id = await newParticipant(t(), tenant.tenantId, instanceId);
    expect((await create(`/api/v1/photos/user/${id}`)).status).toBe(201);
  });
});

describe("headers that stop a browser from reading a file as something else", () => {
  it("serves a photo inline, with a file name made of the id only, and nosniff", async () => {
    const app = photoApp(t().db);
    const id = await newParticipant(t(), tenant.tenantId, instanceId, 'evil"; filename=x.html');
    await upload(app, tenant.admin.key, id, [
      { name: "photo", data: await image("webp"), filename: 'x.html"; evil=1', type: "text/html" },
    ]);
    const res = await download(app, tenant.admin.key, id);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/webp");
    expect(res.headers.get("content-disposition")).toBe(`inline; filename="photo-${id}.webp"`);
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
  });

  it("sends nosniff with the CSV export, with JSON answers and with errors", async () => {
    const app = testApp(t().db);
    const exported = await app.request(`/api/v1/participants/export.csv?instance_id=${instanceId}`, {
      headers: { "X-API-Key": tenant.admin.key },
    });
    expect(exported.status).toBe(200);
    expect(exported.headers.get("x-content-type-options")).toBe("nosniff");
    for (const path of ["/api/v1/instances", "/api/v1/nowhere", "/health"]) {
      const res = await app.request(path, { headers: { "X-API-Key": tenant.admin.key } });
      expect(res.headers.get("x-content-type-options"), path).toBe("nosniff");
    }
  });
});

describe("a 413 on a chunked body", () => {
  let server: HttpServer;
  const closers: (() => void)[] = [];

  beforeAll(async () => {
    server = await listen(testApp(t().db).fetch, 0, "127.0.0.1");
  });
  afterAll(async () => {
    for (const close of closers) close();
    await server.drain(1_000);
  });

  it("closes the connection instead of reading on (or leaving the rest for a next request)", async () => {
    const socket = connect(server.port, "127.0.0.1");
    closers.push(() => socket.destroy());
    let received = "";
    socket.on("data", (chunk) => {
      received += chunk.toString("latin1");
    });
    const closed = new Promise<void>((done) => socket.on("close", () => done()));
    socket.on("error", () => {});
    await new Promise<void>((done) => socket.on("connect", () => done()));
    socket.write(
      "POST /api/v1/instances HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n" +
        `X-API-Key: ${tenant.admin.key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`,
    );
    // 1.5 MB of chunks, over the 1 MB limit, and no last chunk: this body never ends.
    const chunk = `${(64 * 1024).toString(16)}\r\n${"x".repeat(64 * 1024)}\r\n`;
    for (let i = 0; i < 24 && !socket.destroyed; i++) {
      if (!socket.write(chunk)) await new Promise((r) => socket.once("drain", r));
    }
    await Promise.race([closed, new Promise((r) => setTimeout(r, 10_000))]);
    expect(received).toMatch(/^HTTP\/1\.1 413 /);
    expect(received.toLowerCase()).toContain("connection: close");
    expect(socket.destroyed || socket.readableEnded).toBe(true);
  });
});
