import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CampStructure, tenantWithCamp } from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { call, type TestApp, type TestTenant, testApp } from "./support/fixtures.ts";
import { type Receiver, startReceiver } from "./support/receiver.ts";
import { addEndpoint, testWorker } from "./support/webhooks.ts";

/**
 * One tenant's receivers cannot stall another tenant's webhooks: tenants take
 * turns at the worker's slots, a tenant holds at most half of them, and an
 * endpoint whose attempts keep timing out is tried once at a time, less and
 * less often. Real receivers on 127.0.0.1 and the worker's long-running loop,
 * as the server runs it.
 */

const t = useTestDatabase();
let app: TestApp;
const receivers: Receiver[] = [];

beforeAll(() => {
  app = testApp(t().db, { WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true" });
});
afterAll(async () => {
  for (const r of receivers) await r.close();
});

async function receiver(...args: Parameters<typeof startReceiver>) {
  const r = await startReceiver(...args);
  receivers.push(r);
  return r;
}

/** A receiver that takes every request and never answers. */
const hanging = () => receiver(() => new Promise<void>(() => {}));

async function bulkCreate(tenant: TestTenant, camp: CampStructure, prefix: string, count: number) {
  const created = await call(app, "POST", "/api/v1/participants/bulk", {
    key: tenant.admin.key,
    body: {
      participants: Array.from({ length: count }, (_, i) => ({
        user_id: `${prefix}-${i}`,
        instance_id: camp.instanceId,
        first_name: "F",
        surname: "Air",
      })),
    },
  });
  expect(created.status).toBe(201);
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("webhook delivery between tenants", { timeout: 150_000 }, () => {
  it("delivers another tenant's events within seconds while one tenant's 20 endpoints never answer a burst", async () => {
    const a = await tenantWithCamp(t());
    const b = await tenantWithCamp(t());
    const stuck = await hanging();
    for (let i = 0; i < 20; i++) {
      await addEndpoint(app, a.tenant.admin.key, { url: `${stuck.url}/${i}`, types: ["participant.created"] });
    }
    const fine = await receiver();
    await addEndpoint(app, b.tenant.admin.key, { url: fine.url, types: ["participant.created"] });

    // The server's worker: 8 slots, 2 per endpoint, the default 10 s timeout.
    const worker = testWorker(t().db, { concurrency: 8, timeoutMs: 10_000 });
    worker.start();
    try {
      // Tenant A's burst: 20 events, 400 deliveries to receivers that never answer.
      await bulkCreate(a.tenant, a.camp, "burst", 20);
      await stuck.waitFor(4, 30_000);
      await pause(500);

      // Tenant B's ten writes, one every 300 ms.
      const createdAt = new Map<string, number>();
      for (let i = 0; i < 10; i++) {
        const created = await call(app, "POST", "/api/v1/participants", {
          key: b.tenant.admin.key,
          body: { user_id: `b-${i}`, instance_id: b.camp.instanceId, first_name: "B", surname: "Ee" },
        });
        expect(created.status).toBe(201);
        createdAt.set(created.body.data.id, Date.now());
        await pause(300);
      }
      await fine.waitFor(10, 90_000).catch(() => fine.received);
      const latencies = [...createdAt].map(([id, at]) => {
        const got = fine.received.find((r) => JSON.parse(r.body).data.participant_id === id);
        return got ? got.at - at : Number.POSITIVE_INFINITY;
      });
      // Each within a few seconds: none waited for one of tenant A's 10 s timeouts.
      expect(Math.max(...latencies), JSON.stringify(latencies)).toBeLessThan(5_000);
      // Tenant A never held more than half of the slots at once.
      const inFlight = await t().admin(
        `select count(*)::int as n from public.webhook_deliveries
         where tenant_id = $1 and status = 'pending' and lease_token is not null and next_attempt_at > now()`,
        [a.tenant.tenantId],
      );
      expect((inFlight.rows[0] as { n: number }).n).toBeLessThanOrEqual(4);
    } finally {
      await worker.stop(1_000);
    }
  });

  it("tries an endpoint that keeps timing out once at a time, less and less often, and at full pace once it answers", async () => {
    const c = await tenantWithCamp(t());
    let answering = false;
    const slow = await receiver((_n, _req, res) => {
      if (answering) res.writeHead(200).end("ok");
    });
    const endpoint = await addEndpoint(app, c.tenant.admin.key, { url: slow.url, types: ["participant.created"] });
    const worker = testWorker(t().db, { concurrency: 8, timeoutMs: 300 });
    await bulkCreate(c.tenant, c.camp, "slow", 10);
    worker.start();
    try {
      await pause(4_000);
      // Without backing off, 2 at a time every 300 ms: about 26 attempts in 4 s.
      const attempts = slow.received.length;
      expect(attempts).toBeGreaterThanOrEqual(2);
      expect(attempts).toBeLessThanOrEqual(8);
      // Never two at once after the first timeouts: each request came after the one before had timed out.
      const later = slow.received.slice(2).map((r) => r.at);
      for (let i = 1; i < later.length; i++) expect((later[i] as number) - (later[i - 1] as number)).toBeGreaterThanOrEqual(250);

      answering = true;
      const deadline = Date.now() + 60_000;
      const delivered = async () => {
        const list = await call(app, "GET", `/api/v1/webhook-endpoints/${endpoint.id}/deliveries`, { key: c.tenant.admin.key });
        return list.body.data.filter((d: { status: string }) => d.status === "delivered").length;
      };
      while ((await delivered()) < 10) {
        if (Date.now() > deadline) throw new Error("the endpoint never got back to full pace");
        await pause(200);
      }
    } finally {
      await worker.stop(1_000);
    }
  });
});
