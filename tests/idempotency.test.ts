import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addCampStructure, type CampStructure, tenantWithCamp } from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { call, newTenant, type TestApp, type TestTenant } from "./support/fixtures.ts";
import { image } from "./support/images.ts";
import { multipart, newParticipant, photoApp } from "./support/photos.ts";
import { type ServerProcess, startServerProcess } from "./support/server-process.ts";

/** Idempotency-Key on POST: one write per key, the same answer to every retry. */

const t = useTestDatabase();
let app: TestApp;
let tenant: TestTenant;
let camp: CampStructure;

beforeAll(async () => {
  ({ app, tenant, camp } = await tenantWithCamp(t()));
});

const count = async (table: string, where: string, values: unknown[]) =>
  (await t().admin(`select count(*)::int as n from public.${table} where ${where}`, values)).rows[0].n as number;

const post = (path: string, body: unknown, key: string, credential = tenant.admin.key as string) =>
  call(app, "POST", path, { key: credential, body, headers: { "Idempotency-Key": key } });

describe("Idempotency-Key", () => {
  it("replays the first answer to a retry with the same body, with Idempotent-Replayed, writing nothing", async () => {
    const body = { user_id: "idem-1", instance_id: camp.instanceId, first_name: "Ada", surname: "Byron" };
    const first = await post("/api/v1/participants", body, "create-ada");
    expect(first.status).toBe(201);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    const retry = await post("/api/v1/participants", body, "create-ada");
    expect(retry.status).toBe(201);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    expect(retry.body).toEqual(first.body);
    expect(retry.headers.get("location")).toBe(first.headers.get("location"));
    expect(retry.headers.get("etag")).toBe(first.headers.get("etag"));
    expect(await count("participants", "user_id = $1", ["idem-1"])).toBe(1);
  });

  it("refuses the same key with a different body or path with 409, writing nothing", async () => {
    await post("/api/v1/instances", { name: "Once" }, "instance-once");
    const other = await post("/api/v1/instances", { name: "Twice" }, "instance-once");
    expect(other.status).toBe(409);
    expect(other.body.error.message).toMatch(/different request/);
    const elsewhere = await post("/api/v1/blocks", { name: "B", instance_id: camp.instanceId }, "instance-once");
    expect(elsewhere.status).toBe(409);
    expect(await count("instances", "name = $1", ["Twice"])).toBe(0);
  });

  it("scopes keys to the calling user and tenant", async () => {
    const staff = (await tenant.addUser("staff")).key as string;
    const stranger = await newTenant(t().db);
    const strangerCamp = await addCampStructure(t(), stranger.tenantId, "S");
    expect((await post("/api/v1/instances", { name: "Mine" }, "shared-key")).status).toBe(201);
    expect(
      (await post("/api/v1/instances", { name: "Staff's" }, "shared-key", staff)).headers.get("idempotent-replayed"),
    ).toBeNull();
    const theirs = await post("/api/v1/instances", { name: "Mine" }, "shared-key", stranger.admin.key);
    expect(theirs.status).toBe(201);
    expect(theirs.headers.get("idempotent-replayed")).toBeNull();
    expect(strangerCamp.instanceId).toBeTruthy();
  });

  it("does not store an error: a retry after a 400 runs again", async () => {
    const bad = await post("/api/v1/instances", { name: "" }, "fix-me");
    expect(bad.status).toBe(400);
    const again = await post("/api/v1/instances", { name: "" }, "fix-me");
    expect(again.status).toBe(400);
    expect(again.headers.get("idempotent-replayed")).toBeNull();
  });

  it("answers 409 to a retry while the first request is still in progress", async () => {
    const id = await newParticipant(t(), tenant.tenantId, camp.instanceId);
    // Hold the participant's row so the first upload waits inside its transaction.
    const holder = await t().db.pool.connect();
    try {
      await holder.query("begin");
      await holder.query("select from participants where id = $1 for update", [id]);
      const photos = photoApp(t().db);
      // One body, sent again byte for byte as a client's retry would.
      const { body, contentType } = multipart([
        { name: "photo", data: await image("png"), filename: "p.png", type: "image/png" },
      ]);
      const send = () =>
        call(photos, "POST", `/api/v1/photos/user/${id}`, {
          key: tenant.admin.key,
          raw: new Uint8Array(body),
          headers: { "Content-Type": contentType, "Content-Length": String(body.length), "Idempotency-Key": "photo-1" },
        });
      const first = send();
      await new Promise((r) => setTimeout(r, 300));
      const second = await send();
      expect(second.status).toBe(409);
      expect(second.body.error.message).toMatch(/still in progress/);
      await holder.query("commit");
      const firstDone = await first;
      expect(firstDone.status, JSON.stringify(firstDone.body)).toBe(200);
      const third = await send();
      expect(third.status).toBe(200);
      expect(third.headers.get("idempotent-replayed")).toBe("true");
    } finally {
      holder.release();
    }
  });

  it("refuses a malformed key naming the header", async () => {
    for (const bad of ["", "x".repeat(256), "with space", "é"]) {
      const res = await call(app, "POST", "/api/v1/instances", {
        key: tenant.admin.key,
        body: { name: "K" },
        headers: { "Idempotency-Key": bad },
      });
      expect(res.status, JSON.stringify(bad)).toBe(400);
      expect(JSON.stringify(res.body.error.details)).toContain("Idempotency-Key");
    }
  });

  it("prunes expired keys, and an expired key may be used again", async () => {
    await post("/api/v1/instances", { name: "Old" }, "old-key");
    await t().admin("update public.idempotency_keys set expires_at = now() - interval '1 second' where key = 'old-key'");
    const reused = await post("/api/v1/instances", { name: "New" }, "old-key");
    expect(reused.status).toBe(201);
    expect(reused.headers.get("idempotent-replayed")).toBeNull();
    await t().admin("update public.idempotency_keys set expires_at = now() - interval '1 second' where key = 'old-key'");
    await post("/api/v1/instances", { name: "Other" }, "another-key");
    expect(await count("idempotency_keys", "key = $1", ["old-key"])).toBe(0);
  });
});

describe("a client whose connection dropped after the commit", () => {
  let server: ServerProcess;
  beforeAll(async () => {
    server = await startServerProcess({ DATABASE_URL: t().url });
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  });

  it("retries without creating a duplicate", async () => {
    const body = JSON.stringify({ user_id: "dropped-1", instance_id: camp.instanceId, first_name: "Al", surname: "Turing" });
    // Send the request and close the socket without reading the answer.
    await new Promise<void>((done, fail) => {
      const socket = connect(server.port, "127.0.0.1", () => {
        socket.end(
          "POST /api/v1/participants HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" +
            `X-API-Key: ${tenant.admin.key}\r\nIdempotency-Key: dropped-1\r\nContent-Type: application/json\r\n` +
            `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
        );
        socket.destroy();
        done();
      });
      socket.on("error", fail);
    });
    for (let i = 0; i < 100 && (await count("participants", "user_id = $1", ["dropped-1"])) === 0; i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(await count("participants", "user_id = $1", ["dropped-1"])).toBe(1);

    const retry = await fetch(`${server.url}/api/v1/participants`, {
      method: "POST",
      headers: { "X-API-Key": tenant.admin.key, "Idempotency-Key": "dropped-1", "Content-Type": "application/json" },
      body,
    });
    expect(retry.status).toBe(201);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    expect(await count("participants", "user_id = $1", ["dropped-1"])).toBe(1);
  });
});
