import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type CampStructure, tenantWithCamp } from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { call, newTenant, type TestApp, type TestTenant, testApp } from "./support/fixtures.ts";
import { answer, type Receiver, startReceiver } from "./support/receiver.ts";
import { addEndpoint, testWorker, workUntil } from "./support/webhooks.ts";

/**
 * Webhook delivery end to end: writes through the API, the worker the server
 * runs (in process here), and real HTTP receivers on 127.0.0.1
 * (WEBHOOK_ALLOW_PRIVATE_NETWORKS=true).
 */

const t = useTestDatabase();
let app: TestApp;
let tenant: TestTenant;
let camp: CampStructure;
const receivers: Receiver[] = [];

beforeAll(() => {
  app = testApp(t().db, { WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true" });
});

// A tenant per test: a new endpoint starts at the feed's "now", which another open
// transaction can hold back, so in a shared tenant an earlier test's event could reach it.
beforeEach(async () => {
  ({ tenant, camp } = await tenantWithCamp(t()));
});
afterAll(async () => {
  for (const r of receivers) await r.close();
});

async function receiver(...args: Parameters<typeof startReceiver>) {
  const r = await startReceiver(...args);
  receivers.push(r);
  return r;
}

async function createParticipant(userId: string, key = tenant.admin.key, instanceId = camp.instanceId) {
  const created = await call(app, "POST", "/api/v1/participants", {
    key,
    body: { user_id: userId, instance_id: instanceId, first_name: "Ada", surname: "Lovelace" },
  });
  expect(created.status).toBe(201);
  return created.body.data.id as string;
}

const deliveriesOf = async (endpointId: string, key = tenant.admin.key) =>
  (await call(app, "GET", `/api/v1/webhook-endpoints/${endpointId}/deliveries`, { key })).body.data;

describe("webhook delivery", { timeout: 90_000 }, () => {
  it("delivers a create, signed so that the standardwebhooks verifier accepts it, with the event's id and no personal data", async () => {
    const hook = await receiver();
    const endpoint = await addEndpoint(app, tenant.admin.key, { url: hook.url, types: ["participant.created"] });
    expect(endpoint.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const id = await createParticipant("hook-1");
    const worker = testWorker(t().db);
    await workUntil(worker, () => hook.received.length >= 1);

    const got = hook.received[0] as (typeof hook.received)[number];
    const verified = new Webhook(endpoint.secret).verify(got.body, got.headers) as Record<string, unknown>;
    expect(verified).toMatchObject({ type: "participant.created", data: { participant_id: id } });
    expect(got.headers["webhook-id"]).toBe(verified.id);
    expect(got.headers["content-type"]).toBe("application/json");
    expect(got.body).not.toMatch(/Ada|Lovelace|hook-1/);
    // Another secret does not verify it.
    expect(() => new Webhook(`whsec_${Buffer.alloc(32, 1).toString("base64")}`).verify(got.body, got.headers)).toThrow();

    // The feed names the same event.
    const feed = await call(app, "GET", "/api/v1/events?types=participant.created&limit=1000", { key: tenant.admin.key });
    expect(feed.body.data.find((e: { id: string }) => e.id === verified.id)).toEqual(verified);

    const [delivery] = await deliveriesOf(endpoint.id);
    expect(delivery).toMatchObject({ status: "delivered", event_type: "participant.created", resource_id: id, tries: 1 });
    expect(delivery.attempts).toHaveLength(1);
    expect(delivery.attempts[0]).toMatchObject({ status_code: 200, error: null, response: "ok" });
    expect(delivery.attempts[0].duration_ms).toBeGreaterThanOrEqual(0);
  });

  it("retries after 500s and a timeout until the receiver takes it", async () => {
    const hook = await receiver((n, _req, res) => {
      if (n < 2) return void res.writeHead(500).end("down");
      if (n === 2) return; // never answers: the attempt times out
      res.writeHead(204).end();
    });
    const endpoint = await addEndpoint(app, tenant.admin.key, { url: hook.url, types: ["participant.created"] });
    await createParticipant("hook-retry");
    const worker = testWorker(t().db, { timeoutMs: 500 });
    await workUntil(worker, async () => (await deliveriesOf(endpoint.id))[0]?.status === "delivered");

    const [delivery] = await deliveriesOf(endpoint.id);
    expect(delivery.tries).toBe(4);
    const attempts = [...delivery.attempts].reverse();
    expect(attempts.map((a: { status_code: number | null }) => a.status_code)).toEqual([500, 500, null, 204]);
    expect(attempts[0].error).toBe("answered 500");
    expect(attempts[0].response).toBe("down");
    expect(attempts[2].error).toMatch(/no answer within/);
    // Every attempt carried the same webhook-id, each signed afresh.
    expect(new Set(hook.received.map((r) => r.headers["webhook-id"])).size).toBe(1);
    for (const r of hook.received) expect(() => new Webhook(endpoint.secret).verify(r.body, r.headers)).not.toThrow();
  });

  it("disables an endpoint that fails persistently, with an audit event, and sends it nothing more", async () => {
    const hook = await receiver(answer(503, "nope"));
    const endpoint = await addEndpoint(app, tenant.admin.key, { url: hook.url, types: ["participant.created"] });
    await createParticipant("hook-dead-1");
    const worker = testWorker(t().db, { retry: { firstDelayMs: 50, factor: 2, maxDelayMs: 100, windowMs: 600, jitter: 0 } });
    const read = async () =>
      (await call(app, "GET", `/api/v1/webhook-endpoints/${endpoint.id}`, { key: tenant.admin.key })).body.data;
    await workUntil(worker, async () => (await read()).enabled === false);

    const record = await read();
    expect(record.disabled_reason).toMatch(/^disabled after every delivery failed since/);
    expect(record.failing_since).not.toBeNull();
    const [delivery] = await deliveriesOf(endpoint.id);
    expect(delivery.status).toBe("failed");
    expect(delivery.attempts.length).toBeGreaterThanOrEqual(3);
    const audit = await call(app, "GET", `/api/v1/audit-events?resource_type=webhook_endpoint&resource_id=${endpoint.id}`, {
      key: tenant.admin.key,
    });
    const disabled = audit.body.data.find((e: { changes: Record<string, unknown> }) => e.changes.enabled);
    expect(disabled).toMatchObject({ action: "update", actor_via: "operator", request_id: "webhook-worker" });
    expect(disabled.changes.enabled).toEqual([true, false]);

    const before = hook.received.length;
    await createParticipant("hook-dead-2");
    await new Promise((r) => setTimeout(r, 300));
    await worker.drain(1_000);
    expect(hook.received.length).toBe(before);
    expect(await deliveriesOf(endpoint.id)).toHaveLength(1);
  });

  it("redelivers a delivery on an admin's request, with the same webhook-id", async () => {
    const hook = await receiver();
    const endpoint = await addEndpoint(app, tenant.admin.key, { url: hook.url, types: ["participant.created"] });
    await createParticipant("hook-again");
    const worker = testWorker(t().db);
    await workUntil(worker, () => hook.received.length >= 1);
    const [delivery] = await deliveriesOf(endpoint.id);
    await workUntil(worker, async () => (await deliveriesOf(endpoint.id))[0]?.status === "delivered");

    const again = await call(app, "POST", `/api/v1/webhook-endpoints/${endpoint.id}/deliveries/${delivery.id}/redeliver`, {
      key: tenant.admin.key,
    });
    expect(again.status).toBe(200);
    expect(again.body.data).toMatchObject({ id: delivery.id, status: "pending", tries: 0 });
    await workUntil(worker, () => hook.received.length >= 2);
    expect(hook.received[1]?.headers["webhook-id"]).toBe(hook.received[0]?.headers["webhook-id"]);
    await workUntil(worker, async () => (await deliveriesOf(endpoint.id))[0]?.status === "delivered");
    expect((await deliveriesOf(endpoint.id))[0].attempts).toHaveLength(2);

    const staff = await tenant.addUser("staff");
    const path = `/api/v1/webhook-endpoints/${endpoint.id}/deliveries/${delivery.id}/redeliver`;
    expect((await call(app, "POST", path, { key: staff.key })).status).toBe(403);
    const other = await newTenant(t().db);
    expect((await call(app, "POST", path, { key: other.admin.key })).status).toBe(404);
    expect((await call(app, "GET", `/api/v1/webhook-endpoints/${endpoint.id}/deliveries`, { key: other.admin.key })).status).toBe(
      404,
    );
  });

  it("sends each tenant's events to its own endpoints only", async () => {
    const other = await newTenant(t().db);
    const otherCamp = await call(app, "POST", "/api/v1/instances", { key: other.admin.key, body: { name: "Other camp" } });
    const mine = await receiver();
    const theirs = await receiver();
    await addEndpoint(app, tenant.admin.key, { url: mine.url, types: ["participant.created"] });
    await addEndpoint(app, other.admin.key, { url: theirs.url, types: ["participant.created"] });
    const a = await createParticipant("tenant-a");
    const b = await createParticipant("tenant-b", other.admin.key, otherCamp.body.data.id);
    const worker = testWorker(t().db);
    await workUntil(worker, () => mine.received.length >= 1 && theirs.received.length >= 1);
    await new Promise((r) => setTimeout(r, 200));
    await worker.drain(1_000);
    expect(mine.received.map((r) => JSON.parse(r.body).data.participant_id)).toEqual([a]);
    expect(theirs.received.map((r) => JSON.parse(r.body).data.participant_id)).toEqual([b]);
  });

  it("sends each event once with two workers on one queue", async () => {
    const hook = await receiver(async (_n, _req, res) => {
      await new Promise((r) => setTimeout(r, 20));
      res.writeHead(200).end();
    });
    const endpoint = await addEndpoint(app, tenant.admin.key, { url: hook.url, types: ["participant.created"] });
    const bulk = await call(app, "POST", "/api/v1/participants/bulk", {
      key: tenant.admin.key,
      body: {
        participants: Array.from({ length: 40 }, (_, i) => ({
          user_id: `two-workers-${i}`,
          instance_id: camp.instanceId,
          first_name: "W",
          surname: "Two",
        })),
      },
    });
    expect(bulk.status).toBe(201);
    // A generous timeout: on a loaded machine a 2 s one could fail an attempt and make a (legitimate) retry.
    const one = testWorker(t().db, { perEndpoint: 40, concurrency: 6, timeoutMs: 15_000 });
    const two = testWorker(t().db, { perEndpoint: 40, concurrency: 6, timeoutMs: 15_000 });
    one.start();
    two.start();
    try {
      await hook.waitFor(40, 60_000);
      await new Promise((r) => setTimeout(r, 500));
    } finally {
      await one.stop(5_000);
      await two.stop(5_000);
    }
    const ids = hook.received.map((r) => r.headers["webhook-id"]);
    expect(ids).toHaveLength(40);
    expect(new Set(ids).size).toBe(40);
    const deliveries = await deliveriesOf(endpoint.id);
    // Each leased once and answered once (a retry would show as a second try).
    const odd = deliveries.filter((d: { status: string; tries: number }) => d.status !== "delivered" || d.tries !== 1);
    expect(odd, JSON.stringify(odd)).toEqual([]);
  });
});
