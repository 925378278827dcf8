import { describe, expect, it } from "vitest";
import { useTestDatabase } from "./support/database.ts";
import { call, newTenant, signToken, testApp } from "./support/fixtures.ts";
import { image } from "./support/images.ts";
import { useLogCapture } from "./support/logs.ts";
import { upload } from "./support/photos.ts";

/**
 * Logs a responder can trust: one JSON object per line whatever a client
 * sends, every line of a request carrying its id, the id answered in
 * X-Request-Id and in every error body, and no credential or personal data in
 * any line.
 */

const t = useTestDatabase();
const logs = useLogCapture();

describe("request ids", () => {
  it("answers every response with X-Request-Id, and every error body with the same id", async () => {
    const app = testApp(t().db);
    const { admin } = await newTenant(t().db);
    const cases = [
      await call(app, "GET", "/health"),
      await call(app, "GET", "/api/v1/instances", { key: admin.key }),
      await call(app, "GET", "/api/v1/instances"),
      await call(app, "GET", "/api/v1/no-such-thing", { key: admin.key }),
      await call(app, "PATCH", "/api/v1/api-keys/my-key", { key: admin.key }),
      await call(app, "POST", "/api/v1/instances", { key: admin.key, body: { name: "" } }),
    ];
    for (const res of cases) {
      const id = res.headers.get("x-request-id");
      expect(id).toMatch(/^[0-9a-f-]{36}$/);
      if (res.status >= 400) expect(res.body.error.request_id).toBe(id);
    }
    expect(new Set(cases.map((r) => r.headers.get("x-request-id"))).size).toBe(cases.length);
  });

  it("never takes a client's X-Request-Id as its own id; it logs a short safe one beside it as the client's", async () => {
    const app = testApp(t().db);
    const kept = await call(app, "GET", "/health", { headers: { "X-Request-Id": "trace-42.abc:7" } });
    const id = kept.headers.get("x-request-id");
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(logs.events().find((e) => e.request_id === id)).toMatchObject({ client_request_id: "trace-42.abc:7" });
    expect(logs.events().some((e) => e.request_id === "trace-42.abc:7")).toBe(false);
    for (const unsafe of ["has space", "a".repeat(65), '{"level":"ERROR"}', "<script>", ""]) {
      const res = await call(app, "GET", "/health", { headers: { "X-Request-Id": unsafe } });
      const ownId = res.headers.get("x-request-id");
      expect(ownId).toMatch(/^[0-9a-f-]{36}$/);
      expect(logs.events().find((e) => e.request_id === ownId)?.client_request_id).toBeUndefined();
    }
  });

  it("writes the request's id in its log line, which names the route's pattern, not the path sent", async () => {
    const app = testApp(t().db);
    const { admin } = await newTenant(t().db);
    const res = await call(app, "GET", "/api/v1/participants/00000000-0000-4000-8000-000000000000", {
      key: admin.key,
      headers: { "X-Request-Id": "find-me-1" },
    });
    expect(res.status).toBe(404);
    const line = logs.events().find((e) => e.request_id === res.headers.get("x-request-id"));
    expect(line).toMatchObject({
      message: "request",
      method: "GET",
      route: "/api/v1/participants/:id",
      status: 404,
      client_request_id: "find-me-1",
    });
  });
});

describe("log injection", () => {
  it("cannot forge a log line with encoded line breaks or JSON in the path, the query or the headers", async () => {
    const app = testApp(t().db);
    const { admin } = await newTenant(t().db);
    const forged = encodeURIComponent('\n{"level":"ERROR","message":"forged"}\r\n');
    const before = logs.lines.length;
    await call(app, "GET", `/api/v1/participants/${forged}?q=${forged}`, { key: admin.key });
    await call(app, "GET", `/api/v1/${forged}`, { key: admin.key });
    await call(app, "GET", "/api/v1/instances", { key: `camp_${"x".repeat(43)}`, headers: { "User-Agent": forged } });
    const written = logs.lines.slice(before);
    expect(written.length).toBeGreaterThanOrEqual(3);
    for (const line of written) {
      // One object per line, ending the line: nothing a client sent started another.
      expect(line.endsWith("\n")).toBe(true);
      expect(line.slice(0, -1)).not.toMatch(/[\r\n]/);
      const event = JSON.parse(line);
      expect(event.message).not.toBe("forged");
      expect(JSON.stringify(event)).not.toContain("forged");
    }
  });
});

describe("what the log never holds", () => {
  it("has no key, token, secret or participant's personal data in any line of a busy session", async () => {
    const app = testApp(t().db);
    const tenant = await newTenant(t().db);
    const staff = await tenant.addUser("staff");
    await t().admin("update users set auth_subject = $1 where id = $2", ["idp|logscan", staff.userId]);
    const token = await signToken({ sub: "idp|logscan" });
    const key = tenant.admin.key;
    const secrets = [key, staff.key as string, token, "Zoëlogscan", "Przybylskilogscan", "2011-02-03", "logscan-user-7"];

    const instance = await call(app, "POST", "/api/v1/instances", { key, body: { name: "Log camp" } });
    const participant = {
      user_id: "logscan-user-7",
      instance_id: instance.body.data.id,
      first_name: "Zoëlogscan",
      surname: "Przybylskilogscan",
      date_of_birth: "2011-02-03",
    };
    const created = await call(app, "POST", "/api/v1/participants", { key, body: participant });
    expect(created.status).toBe(201);
    const id = created.body.data.id;
    await call(app, "GET", "/api/v1/participants?q=Przybylskilogscan", { key });
    await call(app, "GET", `/api/v1/participants/${id}`, { token });
    await call(app, "PATCH", `/api/v1/participants/${id}`, { key, body: { surname: "Przybylskilogscan" } });
    await call(app, "POST", "/api/v1/participants", { key, body: participant });
    await call(app, "POST", "/api/v1/participants", { key, body: { ...participant, date_of_birth: "2011-02-30" } });
    await call(app, "GET", "/api/v1/participants/export.csv", { key });
    await upload(app, key, "logscan-user-7", await image("png"));
    await call(app, "GET", "/api/v1/api-keys/my-key", { token });
    await call(app, "GET", "/api/v1/instances", { key: `${key.slice(0, -2)}zz` });
    await call(app, "GET", "/api/v1/instances", { token: `${token}x` });
    const regenerated = await call(app, "POST", "/api/v1/api-keys/regenerate", { key: staff.key });
    secrets.push(regenerated.body.data.key);

    const text = logs.lines.join("");
    expect(logs.lines.length).toBeGreaterThan(10);
    for (const secret of secrets) expect(text, `the log holds ${secret.slice(0, 12)}…`).not.toContain(secret);
    expect(text).not.toMatch(/camp_[A-Za-z0-9_-]{20,}|eyJ[A-Za-z0-9_-]{10,}|password/i);
  });
});
