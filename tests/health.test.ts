import { describe, expect, it } from "vitest";
import { Database } from "../functions/db/database.ts";
import { useTestDatabase } from "./support/database.ts";
import { call, testApp } from "./support/fixtures.ts";

const t = useTestDatabase();

describe("GET /health", () => {
  it("reports the service and the database as up, without a credential", async () => {
    const res = await call(testApp(t().db), "GET", "/health");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, data: { status: "ok", database: "ok", version: expect.any(String) } });
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
