import { beforeAll, describe, expect, it } from "vitest";
import { type CampStructure, tenantWithCamp } from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { call, newTenant, type TestApp, type TestTenant, testApp } from "./support/fixtures.ts";

/** HTTP details clients rely on: Location, WWW-Authenticate, exposed headers, HEAD, /docs/. */

const t = useTestDatabase();
let app: TestApp;
let tenant: TestTenant;
let camp: CampStructure;

beforeAll(async () => {
  ({ app, tenant, camp } = await tenantWithCamp(t()));
});

/** Where a response's Location points, resolved as a client would against the request's URL. */
async function follow(requestUrl: string, location: string | null) {
  expect(location).toBeTruthy();
  const target = new URL(location as string, requestUrl);
  return app.request(target.pathname + target.search, { headers: { "X-API-Key": tenant.admin.key } });
}

describe("Location on every 201", () => {
  const creates = () => [
    { path: "/api/v1/instances", body: { name: "Summer" } },
    { path: "/api/v1/groups/supergroups", body: { name: "Located eagles", instance_id: camp.instanceId } },
    {
      path: "/api/v1/groups/subgroups",
      body: { name: "Located chicks", instance_id: camp.instanceId, parent_supergroup_id: camp.supergroupId },
    },
    { path: "/api/v1/blocks", body: { name: "Located west", instance_id: camp.instanceId } },
    { path: "/api/v1/rooms", body: { room_number: "L12", block_id: camp.blockId, instance_id: camp.instanceId } },
    {
      path: "/api/v1/participants",
      body: { user_id: "loc-1", instance_id: camp.instanceId, first_name: "Ada", surname: "Byron" },
    },
  ];

  it("points at the new record, which a GET there returns", async () => {
    for (const { path, body } of creates()) {
      const url = `http://camp.test${path}`;
      const res = await app.request(url, {
        method: "POST",
        headers: { "X-API-Key": tenant.admin.key, "Content-Type": "application/json" },
        body: JSON.stringify(body),
      });
      expect(res.status, path).toBe(201);
      const created = (await res.json()) as { data: { id: string } };
      const found = await follow(url, res.headers.get("location"));
      expect(found.status, path).toBe(200);
      expect(((await found.json()) as { data: { id: string } }).data.id).toBe(created.data.id);
    }
  });

  it("resolves under the Edge Function's prefix too, being relative", async () => {
    const res = await call(app, "POST", "/api/v1/instances", { key: tenant.admin.key, body: { name: "Edge" } });
    const location = res.headers.get("location") as string;
    expect(new URL(location, "https://ref.supabase.co/functions/v1/api/api/v1/instances").pathname).toBe(
      `/functions/v1/api/api/v1/instances/${res.body.data.id}`,
    );
  });

  it("is absolute under PUBLIC_URL", async () => {
    const public_ = testApp(t().db, { PUBLIC_URL: "https://camp.example/base/" });
    const res = await call(public_, "POST", "/api/v1/instances", { key: tenant.admin.key, body: { name: "Public" } });
    expect(res.headers.get("location")).toBe(`https://camp.example/base/api/v1/instances/${res.body.data.id}`);
  });

  it("points a bulk create and an import at the participants they joined, and a new key at its record", async () => {
    const bulkUrl = "http://camp.test/api/v1/participants/bulk";
    const bulk = await app.request(bulkUrl, {
      method: "POST",
      headers: { "X-API-Key": tenant.admin.key, "Content-Type": "application/json" },
      body: JSON.stringify({ participants: [{ user_id: "b-1", instance_id: camp.instanceId, first_name: "A", surname: "B" }] }),
    });
    expect(bulk.status).toBe(201);
    expect((await follow(bulkUrl, bulk.headers.get("location"))).status).toBe(200);

    const csv = new TextEncoder().encode("user_id,first_name,surname\ni-1,C,D\n");
    const importUrl = `http://camp.test/api/v1/participants/import?instance_id=${camp.instanceId}`;
    const imported = await app.request(importUrl, {
      method: "POST",
      headers: { "X-API-Key": tenant.admin.key, "Content-Type": "text/csv", "Content-Length": String(csv.length) },
      body: csv,
    });
    expect(imported.status).toBe(201);
    const listed = await follow(importUrl, imported.headers.get("location"));
    expect(((await listed.json()) as { data: Array<{ user_id: string }> }).data.map((p) => p.user_id)).toContain("i-1");

    const staff = await tenant.addUser("staff", { withKey: false });
    const keyUrl = "http://camp.test/api/v1/api-keys/generate";
    const issued = await app.request(keyUrl, {
      method: "POST",
      headers: { "X-API-Key": tenant.admin.key, "Content-Type": "application/json" },
      body: JSON.stringify({ email: staff.email }),
    });
    expect(issued.status).toBe(201);
    const record = await follow(keyUrl, issued.headers.get("location"));
    expect(record.status).toBe(200);
    const body = (await record.json()) as { data: Record<string, unknown> };
    expect(body.data).toMatchObject({ email: staff.email });
    expect(body.data).not.toHaveProperty("key");
  });
});

describe("GET /api/v1/api-keys/{id}", () => {
  it("shows admins any key of the tenant, others only their own, and nobody another tenant's", async () => {
    const staff = await tenant.addUser("staff");
    const other = await tenant.addUser("staff");
    const mine = await call(app, "GET", "/api/v1/api-keys/my-key", { key: staff.key });
    const theirs = await call(app, "GET", "/api/v1/api-keys/my-key", { key: other.key });
    expect((await call(app, "GET", `/api/v1/api-keys/${mine.body.data.id}`, { key: staff.key })).status).toBe(200);
    expect((await call(app, "GET", `/api/v1/api-keys/${theirs.body.data.id}`, { key: staff.key })).status).toBe(404);
    expect((await call(app, "GET", `/api/v1/api-keys/${theirs.body.data.id}`, { key: tenant.admin.key })).status).toBe(200);
    const stranger = await newTenant(t().db);
    expect((await call(app, "GET", `/api/v1/api-keys/${mine.body.data.id}`, { key: stranger.admin.key })).status).toBe(404);
    expect((await call(app, "GET", "/api/v1/api-keys/not-a-uuid", { key: tenant.admin.key })).status).toBe(404);
  });
});

describe("WWW-Authenticate on every 401", () => {
  it("names both credentials the API takes", async () => {
    for (const options of [{}, { key: "camp_wrong" }, { token: "not.a.jwt" }]) {
      const res = await call(app, "GET", "/api/v1/instances", options);
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toBe('ApiKey realm="camp", header="X-API-Key", Bearer realm="camp"');
    }
  });
});

describe("CORS", () => {
  it("exposes every header a browser client needs, and allows the ones it sends", async () => {
    const res = await app.request("/api/v1/instances", {
      headers: { Origin: "https://admin.example", "X-API-Key": tenant.admin.key },
    });
    const exposed = (res.headers.get("access-control-expose-headers") ?? "").toLowerCase().split(/,\s*/);
    for (const header of [
      "etag",
      "x-request-id",
      "ratelimit",
      "ratelimit-policy",
      "location",
      "idempotent-replayed",
      "retry-after",
    ]) {
      expect(exposed).toContain(header);
    }
    const preflight = await app.request("/api/v1/instances", {
      method: "OPTIONS",
      headers: {
        Origin: "https://admin.example",
        "Access-Control-Request-Method": "PATCH",
        "Access-Control-Request-Headers": "if-match, idempotency-key",
      },
    });
    const allowed = (preflight.headers.get("access-control-allow-headers") ?? "").toLowerCase();
    expect(allowed).toContain("if-match");
    expect(allowed).toContain("idempotency-key");
  });
});

describe("HEAD wherever GET is", () => {
  it("answers every GET route of the OpenAPI document with the GET's status and headers and no body", async () => {
    const document = (await call(app, "GET", "/api/v1/openapi.json")).body;
    const made = await call(app, "POST", "/api/v1/participants", {
      key: tenant.admin.key,
      body: { user_id: "head-1", instance_id: camp.instanceId, first_name: "H", surname: "D" },
    });
    const ids: Record<string, string> = {
      instances: camp.instanceId,
      supergroups: camp.supergroupId,
      subgroups: camp.subgroupId,
      blocks: camp.blockId,
      rooms: camp.roomId,
      participants: made.body.data.id,
      user: made.body.data.id,
      "api-keys": (await call(app, "GET", "/api/v1/api-keys/my-key", { key: tenant.admin.key })).body.data.id,
    };
    let checked = 0;
    for (const [path, item] of Object.entries(document.paths as Record<string, Record<string, unknown>>)) {
      if (!item.get) continue;
      const url = path.replace(
        /\{[^}]+\}/g,
        (_, offset: number) => ids[path.slice(0, offset).split("/").filter(Boolean).pop() ?? ""] ?? "x",
      );
      const query = url.includes("export.csv") ? `?instance_id=${camp.instanceId}` : "";
      const get = await app.request(url + query, { headers: { "X-API-Key": tenant.admin.key } });
      const head = await app.request(url + query, { method: "HEAD", headers: { "X-API-Key": tenant.admin.key } });
      expect(head.status, path).toBe(get.status);
      expect(head.headers.get("content-type"), path).toBe(get.headers.get("content-type"));
      expect(await head.text(), path).toBe("");
      checked++;
    }
    expect(checked).toBeGreaterThan(15);
  });
});

describe("/docs/", () => {
  it("with a trailing slash leads to the documentation", async () => {
    const res = await app.request("http://camp.test/docs/");
    expect(res.status).toBe(301);
    const page = await app.request(new URL(res.headers.get("location") as string, "http://camp.test/docs/").pathname);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/text\/html/);
  });
});

describe("strict query parameters", () => {
  it("refuses a parameter the operation does not take, naming it, on lists, reads and writes", async () => {
    const cases: Array<[string, string]> = [
      ["GET", "/api/v1/instances?name=x"],
      ["GET", `/api/v1/participants?instance_id=${camp.instanceId}&surname=Byron`],
      ["GET", `/api/v1/instances/${camp.instanceId}?expand=all`],
      ["GET", `/api/v1/participants/export.csv?instance_id=${camp.instanceId}&name=x`],
      ["DELETE", `/api/v1/rooms/${camp.roomId}?name=x`],
    ];
    for (const [method, path] of cases) {
      const res = await call(app, method, path, { key: tenant.admin.key });
      expect(res.status, path).toBe(400);
      expect(res.body.error.code).toBe("VALIDATION_ERROR");
      expect(
        res.body.error.details.map((d: { field: string }) => d.field),
        path,
      ).toEqual([path.includes("expand") ? "expand" : path.includes("surname") ? "surname" : "name"]);
    }
    const created = await call(app, "POST", "/api/v1/instances?dry=1", { key: tenant.admin.key, body: { name: "Strict" } });
    expect(created.status).toBe(400);
    expect(created.body.error.details).toEqual([{ field: "dry", issue: "is not a query parameter of this operation" }]);
  });

  it("names at most five unknown parameters and counts the rest, so the answer stays short", async () => {
    const query = Array.from({ length: 10_000 }, (_, i) => `p${i}${"x".repeat(100)}=1`).join("&");
    const res = await app.request(`/api/v1/instances?${query}`, { headers: { "X-API-Key": tenant.admin.key } });
    expect(res.status).toBe(400);
    const text = await res.text();
    expect(text.length).toBeLessThan(2_000);
    const { error } = JSON.parse(text);
    expect(error.code).toBe("VALIDATION_ERROR");
    expect(error.message).toMatch(/^unknown query parameters: p0x{62}…, .* and 9995 more$/);
    expect(error.details).toHaveLength(6);
    expect(error.details.at(-1)).toEqual({ field: "query", issue: "has 9995 more unknown parameters" });
  });

  it("takes every parameter the operation declares", async () => {
    const ok = await call(app, "GET", `/api/v1/rooms?instance_id=${camp.instanceId}&block_id=${camp.blockId}&limit=5&offset=0`, {
      key: tenant.admin.key,
    });
    expect(ok.status).toBe(200);
    const page = await call(app, "GET", `/api/v1/participants/export.csv?instance_id=${camp.instanceId}`, {
      key: tenant.admin.key,
    });
    expect(page.status).toBe(200);
  });
});
