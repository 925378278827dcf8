import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../functions/app.ts";
import { loadConfig } from "../functions/config.ts";
import { validated } from "./support/contract.ts";
import { useTestDatabase } from "./support/database.ts";
import { call, newTenant, TEST_JWT_SECRET, type TestApp, type TestTenant, testApp } from "./support/fixtures.ts";
import { type Receiver, startReceiver } from "./support/receiver.ts";
import { addEndpoint, testWorker, workUntil } from "./support/webhooks.ts";

/** POST /webhook-endpoints/{id}/ping: a developer's first signed event, without waiting for a real change. */

const t = useTestDatabase();
let app: TestApp;
let tenant: TestTenant;
let hook: Receiver;
const base = "/api/v1/webhook-endpoints";

beforeAll(async () => {
  tenant = await newTenant(t().db);
  app = testApp(t().db, { WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true" });
  hook = await startReceiver();
});
afterAll(() => hook.close());

describe("POST /webhook-endpoints/{id}/ping", () => {
  it("sends a signed webhook.ping, listed in the endpoint's deliveries like any other", async () => {
    const key = tenant.admin.key;
    // The endpoint takes one type only: a ping is sent whatever it subscribes to.
    const endpoint = await addEndpoint(app, key, { url: hook.url, types: ["room.updated"] });
    const pinged = await call(app, "POST", `${base}/${endpoint.id}/ping`, { key });
    expect(pinged.status).toBe(202);
    expect(pinged.body.data).toMatchObject({
      event_type: "webhook.ping",
      resource_id: endpoint.id,
      status: "pending",
      attempts: [],
    });

    await workUntil(testWorker(t().db), () => hook.received.length >= 1);
    const got = hook.received[0] as Receiver["received"][number];
    const verified = new Webhook(endpoint.secret).verify(got.body, got.headers) as Record<string, unknown>;
    expect(verified).toMatchObject({
      id: pinged.body.data.event_id,
      type: "webhook.ping",
      data: { webhook_endpoint_id: endpoint.id },
    });
    expect(got.headers["webhook-id"]).toBe(pinged.body.data.event_id);

    const deliveries = await call(app, "GET", `${base}/${endpoint.id}/deliveries`, { key });
    expect(deliveries.status).toBe(200);
    expect(deliveries.body.data).toHaveLength(1);
    expect(deliveries.body.data[0]).toMatchObject({ id: pinged.body.data.id, event_type: "webhook.ping", status: "delivered" });
    expect(deliveries.body.data[0].attempts[0]).toMatchObject({ status_code: 200, error: null });

    // Each ping is its own event: a receiver that de-duplicates by webhook-id takes the second too.
    const second = await call(app, "POST", `${base}/${endpoint.id}/ping`, { key });
    expect(second.status).toBe(202);
    expect(second.body.data.event_id).not.toBe(pinged.body.data.event_id);
    // A ping is no change of the tenant's data: the event feed does not carry it.
    const feed = await call(app, "GET", "/api/v1/events", { key });
    expect(JSON.stringify(feed.body)).not.toContain("webhook.ping");
  });

  it("is sent at once by the server's own worker, without waiting for its idle pause", async () => {
    const receiver = await startReceiver();
    // A worker that would otherwise look at the queue only once a minute.
    const worker = testWorker(t().db, { idleMs: 60_000 });
    const quick = validated(
      createApp({
        db: t().db,
        config: loadConfig({
          AUTH_JWT_SECRET: TEST_JWT_SECRET,
          RATE_LIMIT_PER_MINUTE: "0",
          WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true",
        }),
        deliverNow: () => worker.wake(),
      }),
    );
    const own = await newTenant(t().db);
    const endpoint = await addEndpoint(quick, own.admin.key, { url: receiver.url });
    worker.start();
    try {
      // Let the worker reach its first idle pause.
      await new Promise((r) => setTimeout(r, 500));
      const pinged = await call(quick, "POST", `${base}/${endpoint.id}/ping`, { key: own.admin.key });
      expect(pinged.status).toBe(202);
      const [got] = await receiver.waitFor(1, 10_000);
      expect(JSON.parse(got?.body ?? "{}").type).toBe("webhook.ping");
    } finally {
      await worker.stop(5_000);
      await receiver.close();
    }
  });

  it("is for the tenant's admins: staff 403, another tenant's endpoint 404, a disabled endpoint 409", async () => {
    const key = tenant.admin.key;
    const endpoint = await addEndpoint(app, key, { url: hook.url });
    const staff = await tenant.addUser("staff");
    expect((await call(app, "POST", `${base}/${endpoint.id}/ping`, { key: staff.key })).status).toBe(403);
    const other = await newTenant(t().db);
    const theirs = await call(app, "POST", `${base}/${endpoint.id}/ping`, { key: other.admin.key });
    expect(theirs.status).toBe(404);
    expect(theirs.body.error.code).toBe("NOT_FOUND");
    expect((await call(app, "POST", `${base}/00000000-0000-4000-8000-000000000000/ping`, { key })).status).toBe(404);

    await call(app, "PATCH", `${base}/${endpoint.id}`, { key, body: { enabled: false } });
    const disabled = await call(app, "POST", `${base}/${endpoint.id}/ping`, { key });
    expect(disabled.status).toBe(409);
    expect(disabled.body.error.message).toContain("disabled");
    // Nothing was queued by the refused pings.
    const queued = await t().admin("select count(*)::int as n from webhook_deliveries where endpoint_id = $1", [endpoint.id]);
    expect(queued.rows[0].n).toBe(0);
  });
});
