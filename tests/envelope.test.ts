import { beforeAll, describe, expect, it } from "vitest";
import { Database } from "../functions/db/database.ts";
import { useTestDatabase } from "./support/database.ts";
import { call, newTenant, type TestTenant, testApp } from "./support/fixtures.ts";
import { useLogCapture } from "./support/logs.ts";

const t = useTestDatabase();
const logs = useLogCapture();
let tenant: TestTenant;
beforeAll(async () => {
  tenant = await newTenant(t().db);
});

const GENERATE = "/api/v1/api-keys/generate";

describe("the error envelope", () => {
  it("answers 404 NOT_FOUND for an unknown route, with or without a credential", async () => {
    for (const key of [undefined, tenant.admin.key]) {
      const res = await call(testApp(t().db), "GET", "/api/v1/no-such-thing", { key });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({
        success: false,
        error: { code: "NOT_FOUND", message: expect.any(String), request_id: expect.any(String) },
      });
    }
  });

  // Before authentication, as functions/http/route-table.ts says (hono/method-not-allowed
  // would decide after the handlers, so without a credential this would be a 401).
  it("answers 405 METHOD_NOT_ALLOWED with Allow for a known path and the wrong method, with or without a credential", async () => {
    for (const key of [undefined, tenant.admin.key]) {
      const res = await call(testApp(t().db), "PATCH", "/api/v1/api-keys/my-key", { key });
      expect(res.status).toBe(405);
      expect(res.headers.get("allow")).toBe("GET");
      expect(res.body.success).toBe(false);
      expect(res.body.error.code).toBe("METHOD_NOT_ALLOWED");
    }
  });

  it("answers 400 VALIDATION_ERROR for malformed JSON", async () => {
    const res = await call(testApp(t().db), "POST", GENERATE, {
      key: tenant.admin.key,
      raw: '{"email": ',
      headers: { "Content-Type": "application/json" },
    });
    expect(res.status).toBe(400);
    expect(res.body.success).toBe(false);
    expect(res.body.error.code).toBe("VALIDATION_ERROR");
  });

  it("answers 413 PAYLOAD_TOO_LARGE for a JSON body over 1 MB, announced or streamed", async () => {
    const big = JSON.stringify({ email: "a@example.test", pad: "x".repeat(1_100_000) });
    const announced = await call(testApp(t().db), "POST", GENERATE, {
      key: tenant.admin.key,
      raw: big,
      headers: { "Content-Type": "application/json", "Content-Length": String(big.length) },
    });
    expect(announced.status).toBe(413);
    expect(announced.body.error.code).toBe("PAYLOAD_TOO_LARGE");

    // No Content-Length: the body is counted as it streams and cut off at the limit.
    const chunk = new TextEncoder().encode("x".repeat(64 * 1024));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ < 40) controller.enqueue(chunk);
        else controller.close();
      },
    });
    const app = testApp(t().db);
    const response = await app.request(GENERATE, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-API-Key": tenant.admin.key, "Transfer-Encoding": "chunked" },
      body: stream,
      // @ts-expect-error Node's fetch needs duplex for a streamed request body.
      duplex: "half",
    });
    expect(response.status).toBe(413);
    expect(sent).toBeLessThan(40);
  });

  it("answers 415 UNSUPPORTED_MEDIA_TYPE for a JSON endpoint called with another content type", async () => {
    const res = await call(testApp(t().db), "POST", GENERATE, {
      key: tenant.admin.key,
      raw: "email=a@example.test",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
    });
    expect(res.status).toBe(415);
    expect(res.body.error.code).toBe("UNSUPPORTED_MEDIA_TYPE");
  });

  it("answers 503 SERVICE_UNAVAILABLE when the database is unreachable", async () => {
    const down = new Database("postgresql://postgres@127.0.0.1:1/none");
    try {
      const res = await call(testApp(down), "GET", "/api/v1/api-keys/my-key", { key: tenant.admin.key });
      expect(res.status).toBe(503);
      expect(res.body.error.code).toBe("SERVICE_UNAVAILABLE");
    } finally {
      await down.close();
    }
  });

  it("allows any origin without credentials by default, and only CORS_ORIGINS when set", async () => {
    const open = await testApp(t().db).request("/health", { headers: { Origin: "https://admin.example" } });
    expect(open.headers.get("access-control-allow-origin")).toBe("*");
    expect(open.headers.get("access-control-allow-credentials")).toBeNull();
    const narrowed = testApp(t().db, { CORS_ORIGINS: "https://admin.example" });
    const allowed = await narrowed.request("/health", { headers: { Origin: "https://admin.example" } });
    expect(allowed.headers.get("access-control-allow-origin")).toBe("https://admin.example");
    const refused = await narrowed.request("/health", { headers: { Origin: "https://evil.example" } });
    expect(refused.headers.get("access-control-allow-origin")).toBeNull();
    const preflight = await narrowed.request("/api/v1/api-keys/my-key", {
      method: "OPTIONS",
      headers: { Origin: "https://admin.example", "Access-Control-Request-Method": "GET" },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-headers")).toMatch(/X-API-Key/i);
  });
});

// Last in this file: it breaks the file's own database on purpose.
describe("an unexpected failure", () => {
  it("answers 500 INTERNAL_ERROR with a generic message: no SQL, no stack, no internal names", async () => {
    await t().admin("alter function private.authenticate_api_key(bytea) rename to authenticate_api_key_gone");
    try {
      const res = await call(testApp(t().db), "GET", "/api/v1/api-keys/my-key", { key: tenant.admin.key });
      expect(res.status).toBe(500);
      expect(res.body).toEqual({
        success: false,
        error: { code: "INTERNAL_ERROR", message: "internal error", request_id: expect.any(String) },
      });
      expect(JSON.stringify(res.body)).not.toMatch(/authenticate|select|private|\.ts|at /);
      expect(res.headers.get("x-request-id")).toBe(res.body.error.request_id);
      // The cause is logged server-side, with the id the client was given.
      const logged = logs.events().find((e) => e.message === "request failed");
      expect(logged).toMatchObject({ level: "ERROR", request_id: res.body.error.request_id, error: "postgres", code: "42883" });
    } finally {
      await t().admin("alter function private.authenticate_api_key_gone(bytea) rename to authenticate_api_key");
    }
  });
});
