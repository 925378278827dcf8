import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CampStructure, tenantWithCamp } from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { call, newTenant, type TestApp, type TestTenant, testApp } from "./support/fixtures.ts";
import { type Receiver, startReceiver } from "./support/receiver.ts";
import { addEndpoint, testWorker, workUntil } from "./support/webhooks.ts";

/** Webhook endpoints as admins manage them: the secret shown once, rotation, staff, other tenants, the audit trail. */

const t = useTestDatabase();
let app: TestApp;
let strict: TestApp;
let tenant: TestTenant;
let camp: CampStructure;
let hook: Receiver;
const base = "/api/v1/webhook-endpoints";

beforeAll(async () => {
  ({ tenant, camp } = await tenantWithCamp(t()));
  app = testApp(t().db, { WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true" });
  strict = testApp(t().db);
  hook = await startReceiver();
});
afterAll(() => hook.close());

describe("webhook endpoints", () => {
  it("answers the secret once, at create; reads, lists and updates never show it", async () => {
    const key = tenant.admin.key;
    const created = await call(app, "POST", base, {
      key,
      body: { url: hook.url, types: ["participant.created", "room.updated"], description: "Sync to the office" },
    });
    expect(created.status).toBe(201);
    expect(created.headers.get("location")).toContain(created.body.data.id);
    expect(created.body.data).toMatchObject({
      url: hook.url,
      types: ["participant.created", "room.updated"],
      description: "Sync to the office",
      enabled: true,
      disabled_reason: null,
      failing_since: null,
    });
    const { id, secret } = created.body.data;
    expect(secret).toMatch(/^whsec_/);

    const read = await call(app, "GET", `${base}/${id}`, { key });
    expect(read.status).toBe(200);
    const listed = await call(app, "GET", base, { key });
    const changed = await call(app, "PATCH", `${base}/${id}`, { key, body: { types: null, enabled: false } });
    expect(changed.status).toBe(200);
    expect(changed.body.data).toMatchObject({ types: null, enabled: false });
    const put = await call(app, "PUT", `${base}/${id}`, { key, body: { description: null, enabled: true } });
    expect(put.body.data).toMatchObject({ description: null, enabled: true, types: null });
    for (const answer of [read, listed, changed, put]) expect(JSON.stringify(answer.body)).not.toContain(secret.slice(6));
    expect(listed.body.meta).toMatchObject({ total: 1, limit: 100, offset: 0 });

    // Nowhere in the audit trail either, while every change is there.
    const audit = await call(app, "GET", `/api/v1/audit-events?resource_type=webhook_endpoint&resource_id=${id}`, { key });
    expect(audit.body.data.map((e: { action: string }) => e.action)).toEqual(["update", "update", "create"]);
    expect(JSON.stringify(audit.body)).not.toContain(secret.slice(6));

    expect((await call(app, "DELETE", `${base}/${id}`, { key })).status).toBe(200);
    expect((await call(app, "GET", `${base}/${id}`, { key })).status).toBe(404);
    expect((await call(app, "DELETE", `${base}/${id}`, { key })).status).toBe(404);
    const secrets = await t().admin("select count(*)::int as n from private.webhook_secrets where endpoint_id = $1", [id]);
    expect(secrets.rows[0].n).toBe(0);
  });

  it("rotates the secret: for the grace period a delivery is signed with both, so either verifies it", async () => {
    const key = tenant.admin.key;
    const endpoint = await addEndpoint(app, key, { url: hook.url, types: ["participant.created"] });
    const rotated = await call(app, "POST", `${base}/${endpoint.id}/rotate-secret`, { key, body: { grace_period_hours: 2 } });
    expect(rotated.status).toBe(200);
    const fresh = rotated.body.data.secret as string;
    expect(fresh).not.toBe(endpoint.secret);
    expect(rotated.body.data.secret_rotated_at).not.toBeNull();
    const expires = new Date(rotated.body.data.previous_secret_expires_at).getTime();
    expect(expires - Date.now()).toBeGreaterThan(1.9 * 3_600_000);
    expect(expires - Date.now()).toBeLessThan(2.1 * 3_600_000);

    const before = hook.received.length;
    const created = await call(app, "POST", "/api/v1/participants", {
      key,
      body: { user_id: "rotated", instance_id: camp.instanceId, first_name: "R", surname: "S" },
    });
    expect(created.status).toBe(201);
    await workUntil(testWorker(t().db), () => hook.received.length > before);
    const got = hook.received.at(-1) as Receiver["received"][number];
    expect(got.headers["webhook-signature"]?.split(" ")).toHaveLength(2);
    expect(() => new Webhook(fresh).verify(got.body, got.headers)).not.toThrow();
    expect(() => new Webhook(endpoint.secret).verify(got.body, got.headers)).not.toThrow();

    // Without a grace period the old secret stops at once.
    const again = await call(app, "POST", `${base}/${endpoint.id}/rotate-secret`, { key, body: { grace_period_hours: 0 } });
    expect(again.body.data.previous_secret_expires_at).toBeNull();
    const live = await t().admin(
      "select count(*)::int as n from private.webhook_secrets where endpoint_id = $1 and (expires_at is null or expires_at > now())",
      [endpoint.id],
    );
    expect(live.rows[0].n).toBe(1);
    const audit = await call(app, "GET", `/api/v1/audit-events?resource_type=webhook_endpoint&resource_id=${endpoint.id}`, {
      key,
    });
    expect(audit.body.data.filter((e: { changes: object }) => "secret_rotated_at" in e.changes)).toHaveLength(2);
  });

  it("is for admins only: staff get 403 on every route, also at the SQL level", async () => {
    const staff = await tenant.addUser("staff");
    const endpoint = await addEndpoint(app, tenant.admin.key, { url: hook.url });
    const id = endpoint.id;
    const routes: Array<[string, string, unknown?]> = [
      ["GET", base],
      ["POST", base, { url: hook.url }],
      ["GET", `${base}/${id}`],
      ["PATCH", `${base}/${id}`, { enabled: false }],
      ["PUT", `${base}/${id}`, { enabled: false }],
      ["DELETE", `${base}/${id}`],
      ["POST", `${base}/${id}/rotate-secret`, {}],
      ["GET", `${base}/${id}/deliveries`],
    ];
    for (const [method, path, body] of routes) {
      const answer = await call(app, method, path, { key: staff.key, body });
      expect(answer.status, `${method} ${path}`).toBe(403);
    }
    // A staff transaction reads no endpoint and cannot add one, whatever a route does.
    const client = await t().db.pool.connect();
    try {
      await client.query("begin; set local role camp_api");
      await client.query("select set_config('request.jwt.claims', $1, true)", [
        JSON.stringify({ tenant_id: tenant.tenantId, sub: staff.userId, app_role: "staff" }),
      ]);
      expect((await client.query("select count(*)::int as n from public.webhook_endpoints")).rows[0].n).toBe(0);
      await expect(client.query("insert into public.webhook_endpoints (url) values ('https://example.org/x')")).rejects.toThrow(
        /row-level security/,
      );
    } finally {
      await client.query("rollback");
      client.release();
    }
  });

  it("shows another tenant's endpoints to no one: 404 on every route", async () => {
    const other = await newTenant(t().db);
    const endpoint = await addEndpoint(app, tenant.admin.key, { url: hook.url });
    const id = endpoint.id;
    for (const [method, path, body] of [
      ["GET", `${base}/${id}`],
      ["PATCH", `${base}/${id}`, { enabled: false }],
      ["DELETE", `${base}/${id}`],
      ["POST", `${base}/${id}/rotate-secret`, {}],
      ["GET", `${base}/${id}/deliveries`],
    ] as Array<[string, string, unknown?]>) {
      expect((await call(app, method, path, { key: other.admin.key, body })).status, `${method} ${path}`).toBe(404);
    }
    const theirs = await call(app, "GET", base, { key: other.admin.key });
    expect(theirs.body.data).toEqual([]);
    expect((await call(app, "GET", `${base}/${id}`, { key: tenant.admin.key })).body.data.enabled).toBe(true);
  });

  it("refuses URLs that are not public https, naming the field", async () => {
    const key = tenant.admin.key;
    const refused = [
      "http://example.org/hook",
      "https://127.0.0.1/hook",
      "https://[::1]/hook",
      "https://[::ffff:127.0.0.1]/hook",
      "https://169.254.169.254/latest/meta-data",
      "https://10.1.2.3/hook",
      "https://192.168.0.10/hook",
      "https://100.64.0.1/hook",
      "https://[fd00:ec2::254]/hook",
      "https://localhost/hook",
      "https://intranet/hook",
      "https://user:pass@example.org/hook",
      "ftp://example.org/hook",
      "not a url",
    ];
    for (const url of refused) {
      const answer = await call(strict, "POST", base, { key, body: { url } });
      expect(answer.status, url).toBe(400);
      expect(answer.body.error.details, url).toMatchObject([{ field: "url" }]);
    }
    // A refusal for the scheme or the address names the development setting; others have nothing to do with it.
    for (const url of ["http://example.org/hook", "ftp://example.org/hook", "https://127.0.0.1/hook", "https://localhost/hook"]) {
      const answer = await call(strict, "POST", base, { key, body: { url } });
      expect(answer.body.error.details[0].issue, url).toContain("WEBHOOK_ALLOW_PRIVATE_NETWORKS=true");
    }
    for (const url of ["https://user:pass@example.org/hook", "not a url"]) {
      const answer = await call(strict, "POST", base, { key, body: { url } });
      expect(answer.body.error.details[0].issue, url).not.toContain("WEBHOOK_ALLOW_PRIVATE_NETWORKS");
    }
    const bad = await call(strict, "POST", base, { key, body: { url: "https://example.org/x", types: ["participant.hugged"] } });
    expect(bad.status).toBe(400);
    const ok = await call(strict, "POST", base, { key, body: { url: "https://hooks.example.org/camp?token=abc" } });
    expect(ok.status).toBe(201);
    const patch = await call(strict, "PATCH", `${base}/${ok.body.data.id}`, { key, body: { url: "https://10.0.0.1/" } });
    expect(patch.status).toBe(400);
  });

  it("refuses at registration the other spellings of an internal host, refused before only at delivery", async () => {
    const key = tenant.admin.key;
    const refused = [
      // IPv4-compatible IPv6 (deprecated ::a.b.c.d) carrying loopback and private addresses.
      "https://[::127.0.0.1]/",
      "https://[::7f00:1]/",
      "https://[::10.0.0.1]/",
      "https://[0:0:0:0:0:0:127.0.0.1]/",
      // IPv4-mapped, written in its other forms.
      "https://[::ffff:7f00:1]/",
      "https://[0:0:0:0:0:ffff:127.0.0.1]/",
      // Names with a trailing dot (the fully qualified form of the same name).
      "https://localhost./",
      "https://localhost../",
      "https://localhost%2e/",
      "https://foo.localhost./",
      "https://intranet./",
      // Decimal, octal, hexadecimal and short IPv4 forms, and their trailing dots.
      "https://2130706433/",
      "https://0177.0.0.1/",
      "https://0x7f.1/",
      "https://127.1/",
      "https://127.0.0.1./",
      "https://0/",
      // Special-use and private-use names.
      "https://printer.local/",
      "https://db.internal/",
      "https://router.home.arpa/",
      "https://box.localdomain/",
      // IPv6 outside global unicast (2000::/3), and ranges that embed an IPv4 address.
      "https://[4000::1]/",
      "https://[2001::7f00:1]/",
      "https://[fec0::1]/",
      "https://[100::1]/",
      "https://[::ffff:0:7f00:1]/",
      "https://[64:ff9b:1::7f00:1]/",
    ];
    for (const url of refused) {
      const answer = await call(strict, "POST", base, { key, body: { url } });
      expect(answer.status, url).toBe(400);
      expect(answer.body.error.details, url).toMatchObject([{ field: "url" }]);
    }
    for (const url of ["https://hooks.example.org./camp", "https://[2606:4700:4700::1111]/hook", "https://93.184.216.34/hook"]) {
      const answer = await call(strict, "POST", base, { key, body: { url } });
      expect(answer.status, url).toBe(201);
    }
  });
});
