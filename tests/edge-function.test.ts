import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useTestDatabase } from "./support/database.ts";
import { DENO, DENO_CONFIG, DENO_DIR, ENTRY, type RunningFunction, startFunction } from "./support/deno.ts";
import { newTenant, signToken, TEST_JWT_SECRET, type TestTenant } from "./support/fixtures.ts";
import { ROOT, run } from "./support/processes.ts";
import { type StorageStandIn, startStorageStandIn } from "./support/storage-stand-in.ts";

/**
 * The code that ships to Supabase, run as Supabase runs it: the real entry
 * (supabase/functions/api/index.ts) under Deno, with npm packages as pinned in
 * its deno.json, against this file's database, with photos in Supabase Storage
 * (a local stand-in of its HTTP API). Requests carry the function's prefix as
 * the platform delivers them.
 */
const t = useTestDatabase();
let fn: RunningFunction;
let storage: StorageStandIn;
let tenant: TestTenant;

/** A 1×1 PNG. */
const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
  "base64",
);

interface Sent {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary response shapes
  body: any;
  headers: Headers;
}

async function send(
  method: string,
  path: string,
  options: { key?: string; token?: string; json?: unknown; raw?: BodyInit; headers?: Record<string, string> } = {},
): Promise<Sent> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key) headers["X-API-Key"] = options.key;
  if (options.token) headers.Authorization = `Bearer ${options.token}`;
  let body = options.raw;
  if (options.json !== undefined) {
    body = JSON.stringify(options.json);
    headers["Content-Type"] = "application/json";
  }
  const response = await fetch(`${fn.origin}${path}`, { method, headers, body });
  const type = response.headers.get("content-type") ?? "";
  const parsed = type.includes("json") ? await response.json() : Buffer.from(await response.arrayBuffer());
  return { status: response.status, body: parsed, headers: response.headers };
}

/** The function's routes as Supabase delivers them: under its name. */
const api = (path: string) => `/api/api/v1${path}`;

beforeAll(async () => {
  // No bucket: the function makes it at its first health check or upload.
  storage = await startStorageStandIn();
  fn = await startFunction({
    DATABASE_URL: t().url,
    AUTH_JWT_SECRET: TEST_JWT_SECRET,
    PHOTO_STORAGE: "supabase",
    SUPABASE_URL: storage.url,
    SUPABASE_SERVICE_ROLE_KEY: storage.serviceKey,
  });
  tenant = await newTenant(t().db);
}, 180_000);

afterAll(async () => {
  await fn?.stop();
  await storage?.close();
});

describe("the Edge Function entry", () => {
  it("type-checks under Deno with its deno.json", async () => {
    // A whole check every time: Deno's incremental one, after an edit to the
    // shared code, has reported TS2589 (excessively deep instantiation) where a
    // whole check of the same files passes.
    const cached = existsSync(DENO_DIR) ? readdirSync(DENO_DIR) : [];
    for (const entry of cached.filter((name) => name.startsWith("check_cache"))) {
      rmSync(join(DENO_DIR, entry), { force: true });
    }
    const result = await run(
      DENO,
      ["check", "--config", DENO_CONFIG, "--node-modules-dir=none", ENTRY],
      { DENO_DIR, NO_COLOR: "1" },
      300_000,
    );
    expect(result.code, result.stderr.slice(-3000)).toBe(0);
  }, 320_000);

  it("stays free of node: and Deno. in the shared code (the Edge Function imports it unchanged)", () => {
    const offenders = readdirSync(`${ROOT}functions`, { recursive: true, encoding: "utf8" })
      .filter((file) => file.endsWith(".ts") && !file.endsWith(".generated.ts"))
      .filter((file) => {
        // Comments may name either runtime; code may not.
        const code = readFileSync(`${ROOT}functions/${file}`, "utf8").replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, "");
        return /\bfrom\s+["']node:|import\(\s*["']node:|\bDeno\./.test(code);
      });
    expect(offenders).toEqual([]);
  });
});

/** Every bare specifier the shared code imports (`hono/cors`, `pg`, ...). */
function bareImports(): Set<string> {
  const found = new Set<string>();
  for (const file of readdirSync(`${ROOT}functions`, { recursive: true, encoding: "utf8" })) {
    if (!file.endsWith(".ts") || file.endsWith(".generated.ts")) continue;
    const text = readFileSync(`${ROOT}functions/${file}`, "utf8");
    const statics = text.matchAll(/^\s*(?:import|export)\b[^;]*?\sfrom\s*"([^".][^"]*)"/gm);
    const dynamics = text.matchAll(/\bimport\(\s*"([^".][^"]*)"\s*\)/g);
    for (const match of [...statics, ...dynamics]) found.add(match[1] as string);
  }
  return found;
}

describe("the Edge Function's deno.json", () => {
  const imports = (JSON.parse(readFileSync(`${ROOT}${DENO_CONFIG}`, "utf8")) as { imports: Record<string, string> }).imports;

  it("maps every package the shared code imports", () => {
    const unmapped = [...bareImports()].filter(
      (specifier) => !(specifier in imports) && !Object.keys(imports).some((k) => k.endsWith("/") && specifier.startsWith(k)),
    );
    expect(unmapped).toEqual([]);
  });

  it("pins each package at the version npm installed for the Node server", () => {
    const drift = Object.values(imports).flatMap((target) => {
      const [, name, version] = /^npm:\/?((?:@[^/@]+\/)?[^/@]+)@([^/]+)\/?$/.exec(target) ?? [];
      const installed = (JSON.parse(readFileSync(`${ROOT}node_modules/${name}/package.json`, "utf8")) as { version: string })
        .version;
      return installed === version ? [] : [`${name}: deno.json ${version}, node_modules ${installed}`];
    });
    expect(drift).toEqual([]);
  });
});

describe("the Edge Function under Deno", () => {
  it("answers /health under /api and under /functions/v1/api", async () => {
    for (const path of ["/api/health", "/functions/v1/api/health"]) {
      const res = await send("GET", path);
      expect(res.status, path).toBe(200);
      expect(res.body).toEqual({
        success: true,
        data: { status: "ok", database: "ok", storage: "ok", version: expect.any(String) },
      });
    }
  });

  it("creates and lists participants with an API key", async () => {
    const key = tenant.admin.key;
    const instance = await send("POST", api("/instances"), { key, json: { name: "Edge camp" } });
    expect(instance.status).toBe(201);
    const created = await send("POST", api("/participants"), {
      key,
      json: { user_id: "edge-1", instance_id: instance.body.data.id, first_name: "Ada", surname: "Lovelace" },
    });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({ user_id: "edge-1", full_name: "Ada Lovelace", status: "active" });

    const listed = await send("GET", api(`/participants?instance_id=${instance.body.data.id}`), { key });
    expect(listed.status).toBe(200);
    expect(listed.body.meta).toEqual({ total: 1, limit: 50, offset: 0, next: null });
    expect(listed.body.data[0]).toMatchObject({ id: created.body.data.id, full_name: "Ada Lovelace" });

    // The CSV export reads its pages row by row (pg's Query events) under Deno too.
    const csv = await send("GET", api(`/participants/export.csv?instance_id=${instance.body.data.id}`), { key });
    expect(csv.status).toBe(200);
    const [header, line, end] = csv.body
      .toString("utf8")
      .replace(/^\uFEFF/, "")
      .split("\r\n");
    expect(header).toMatch(/^id,instance_id,user_id,first_name,surname,full_name,/);
    expect(line).toMatch(new RegExp(`^${created.body.data.id},${instance.body.data.id},edge-1,Ada,Lovelace,Ada Lovelace,`));
    expect(end).toBe("");
  });

  it("issues a key to a Bearer-authenticated user, and the key works at once", async () => {
    const user = await tenant.addUser("staff", { withKey: false });
    const token = await signToken({ sub: `idp|${randomBytes(4).toString("hex")}`, email: user.email, email_verified: true });
    const issued = await send("POST", api("/api-keys/generate"), { token, json: { email: user.email } });
    expect(issued.status).toBe(201);
    expect(issued.body.data.key).toMatch(/^camp_/);

    const mine = await send("GET", api("/api-keys/my-key"), { key: issued.body.data.key });
    expect(mine.status).toBe(200);
    expect(mine.body.data).toMatchObject({ id: issued.body.data.id, email: user.email });
  });

  it("stores an uploaded photo in Supabase Storage and serves it back", async () => {
    const key = tenant.admin.key;
    const instance = await send("POST", api("/instances"), { key, json: { name: "Photo camp" } });
    const participant = await send("POST", api("/participants"), {
      key,
      json: { user_id: "edge-photo", instance_id: instance.body.data.id, first_name: "Grace", surname: "Hopper" },
    });
    expect(participant.status).toBe(201);
    const id = participant.body.data.id as string;

    const form = new FormData();
    form.append("photo", new Blob([PNG], { type: "image/png" }), "me.png");
    const uploaded = await send("POST", api(`/photos/user/${id}`), { key, raw: form });
    expect(uploaded.status).toBe(200);
    expect(uploaded.body.data).toMatchObject({ participant_id: id, content_type: "image/png" });
    expect([...storage.objects.keys()].some((k) => k.includes(`${tenant.tenantId}/${id}/`))).toBe(true);

    const read = await send("GET", api(`/photos/user/${id}`), { key });
    expect(read.status).toBe(200);
    expect(read.headers.get("content-type")).toMatch(/^image\/png/);
    expect(Buffer.isBuffer(read.body) && read.body.subarray(0, 8).equals(PNG.subarray(0, 8))).toBe(true);
  });

  it("answers errors in the envelope: unknown route, missing credential, malformed JSON", async () => {
    const unknown = await send("GET", api("/nowhere"), { key: tenant.admin.key });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ success: false, error: { code: "NOT_FOUND" } });

    const anonymous = await send("GET", api("/participants"));
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toMatchObject({ success: false, error: { code: "UNAUTHORIZED" } });

    const malformed = await send("POST", api("/participants"), {
      key: tenant.admin.key,
      raw: "{not json",
      headers: { "Content-Type": "application/json" },
    });
    expect(malformed.status).toBe(400);
    expect(malformed.body).toMatchObject({ success: false, error: { code: "VALIDATION_ERROR" } });
  });

  it("answers a path outside the mount with a 404 naming the mount and the path that would have matched", async () => {
    // The mistake a newcomer makes: /functions/v1/api is taken for the API's own /api.
    for (const [path, prefix] of [
      ["/api/v1/me", "/api"],
      ["/functions/v1/api/v1/me", "/functions/v1/api"],
    ] as const) {
      const res = await send("GET", path, { key: tenant.admin.key });
      expect(res.status, path).toBe(404);
      expect(res.body.error.code).toBe("NOT_FOUND");
      expect(res.body.error.message).toContain(`mounted at ${prefix}`);
      expect(res.body.error.message).toContain(`the path that would have matched is ${prefix}/api/v1/me`);
    }
    // That path does match.
    expect((await send("GET", "/api/api/v1/me", { key: tenant.admin.key })).status).toBe(200);
    // Nothing would have matched: the mount is named, no path suggested.
    const nowhere = await send("GET", "/api/nowhere");
    expect(nowhere.body.error.message).toContain("mounted at /api");
    expect(nowhere.body.error.message).not.toContain("would have matched");
  });

  it("serves the OpenAPI document and the reference page's assets", async () => {
    const document = await send("GET", api("/openapi.json"));
    expect(document.status).toBe(200);
    expect(document.body.paths["/api/v1/participants"]).toBeDefined();
    const script = await send("GET", "/api/docs/assets/swagger-ui-bundle.js");
    expect(script.status).toBe(200);
    expect(script.headers.get("content-type")).toMatch(/^text\/javascript/);
    // The guides the page links to, read from the checkout as `npm run serve:edge` runs it.
    const guide = await send("GET", "/api/docs/guides/api.md");
    expect(guide.status).toBe(200);
    expect(guide.headers.get("content-type")).toMatch(/^text\/markdown/);
  });

  it("leaves no connection inside a transaction once the requests are answered", async () => {
    for (let i = 0; i < 5; i++) await send("POST", api("/participants"), { key: tenant.admin.key, json: { user_id: "" } });
    const database = new URL(t().url).pathname.slice(1);
    const { rows } = await t().admin(
      "select count(*)::int as n from pg_stat_activity where datname = $1 and state like 'idle in transaction%'",
      [database],
    );
    expect(rows[0].n).toBe(0);
  });
});
