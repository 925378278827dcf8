import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addressRefusal } from "../functions/webhooks/address-policy.ts";
import { DeliveryError, type DeliveryLimits } from "../functions/webhooks/transport.ts";
import { nodeTransport, type Resolve } from "../node/webhook-transport.ts";
import { type CampStructure, tenantWithCamp } from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { call, type TestApp, type TestTenant, testApp } from "./support/fixtures.ts";
import { answer, type Receiver, startReceiver } from "./support/receiver.ts";
import { addEndpoint, testWorker, workUntil } from "./support/webhooks.ts";

/**
 * No way in through a webhook URL: the address connected to is the address
 * checked (a resolver that answers loopback, as DNS rebinding does, is
 * refused), redirects are not followed, and a slow or hostile receiver holds
 * neither memory nor every worker.
 */

const t = useTestDatabase();
let app: TestApp;
let tenant: TestTenant;
let camp: CampStructure;
let hook: Receiver;
const strictLimits: DeliveryLimits = { timeoutMs: 2_000, maxResponseBytes: 64 * 1024, allowPrivate: false };
const openLimits: DeliveryLimits = { ...strictLimits, allowPrivate: true };
const servers: Server[] = [];

beforeAll(async () => {
  ({ tenant, camp } = await tenantWithCamp(t()));
  app = testApp(t().db, { WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true" });
  hook = await startReceiver();
});
afterAll(async () => {
  await hook.close();
  for (const s of servers) {
    s.closeAllConnections();
    s.close();
  }
});

const portOf = (url: string) => new URL(url).port;
const resolveTo =
  (...addresses: string[]): Resolve =>
  async () =>
    addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
const request = (url: string) => ({ url, headers: { "content-type": "application/json" }, body: "{}" });

async function refusal(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(DeliveryError);
    return (error as Error).message;
  }
  throw new Error("the request was not refused");
}

async function server(handler: Parameters<typeof createServer>[1]): Promise<string> {
  const s = createServer(handler);
  servers.push(s);
  await new Promise<void>((done) => s.listen(0, "127.0.0.1", done));
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
}

describe("webhook addresses", () => {
  it("judges addresses as public unicast or not", () => {
    for (const address of [
      "127.0.0.1",
      "10.0.0.1",
      "172.16.5.5",
      "192.168.1.1",
      "169.254.169.254",
      "100.64.0.1",
      "0.0.0.0",
      "::1",
      "::",
      "fe80::1",
      "fd00:ec2::254",
      "::ffff:127.0.0.1",
      "::ffff:10.0.0.1",
      "64:ff9b::7f00:1",
      "2002:7f00:1::",
      "224.0.0.1",
      "255.255.255.255",
      "192.0.2.1",
      "2001:db8::1",
    ]) {
      expect(addressRefusal(address), address).toBeDefined();
    }
    for (const address of ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111"])
      expect(addressRefusal(address), address).toBeUndefined();
  });

  it("refuses a name that resolves to a loopback or private address, on the connection itself (DNS rebinding)", async () => {
    const port = portOf(hook.url);
    const before = hook.received.length;
    // A name an admin registered as public, which now answers loopback.
    const rebound = nodeTransport(resolveTo("127.0.0.1"));
    // https (as the policy requires) to the receiver's port: refused before any connection.
    expect(await refusal(rebound(request(`https://rebind.example.org:${port}/hook`), strictLimits))).toMatch(
      /address not allowed: rebind\.example\.org resolves to 127\.0\.0\.1 is a loopback address/,
    );
    // One private address among public ones refuses the name whole.
    const mixed = nodeTransport(resolveTo("93.184.216.34", "10.0.0.7"));
    expect(await refusal(mixed(request("https://mixed.example.org/hook"), strictLimits))).toMatch(
      /10\.0\.0\.7 is a private address/,
    );
    const metadata = nodeTransport(resolveTo("169.254.169.254"));
    expect(await refusal(metadata(request("https://meta.example.org/"), strictLimits))).toMatch(/linkLocal/);
    const mapped = nodeTransport(resolveTo("::ffff:127.0.0.1"));
    expect(await refusal(mapped(request("https://mapped.example.org/"), strictLimits))).toMatch(/127\.0\.0\.1 is a loopback/);
    expect(hook.received.length).toBe(before);
  });

  it("refuses literal internal addresses and http without WEBHOOK_ALLOW_PRIVATE_NETWORKS", async () => {
    const transport = nodeTransport();
    const port = portOf(hook.url);
    expect(await refusal(transport(request(`https://127.0.0.1:${port}/hook`), strictLimits))).toMatch(/loopback/);
    expect(await refusal(transport(request(`https://[::ffff:7f00:1]:${port}/hook`), strictLimits))).toMatch(/loopback/);
    expect(await refusal(transport(request(hook.url), strictLimits))).toMatch(/http: URLs are not allowed/);
  });

  it("connects to the address it checked: with private networks allowed, a resolved name reaches the receiver", async () => {
    const transport = nodeTransport(resolveTo("127.0.0.1"));
    const before = hook.received.length;
    const got = await transport(request(`http://receiver.example.org:${portOf(hook.url)}/hook`), openLimits);
    expect(got.status).toBe(200);
    expect(hook.received.length).toBe(before + 1);
    expect(hook.received.at(-1)?.headers.host).toBe(`receiver.example.org:${portOf(hook.url)}`);
  });

  it("records a refused address as the attempt's error, and the worker goes on", async () => {
    // An endpoint whose name now resolves to loopback: the API could not know it would when it was registered.
    const endpoint = await addEndpoint(app, tenant.admin.key, {
      url: "https://rebind.example.org/hook",
      types: ["participant.created"],
    });
    const created = await call(app, "POST", "/api/v1/participants", {
      key: tenant.admin.key,
      body: { user_id: "ssrf", instance_id: camp.instanceId, first_name: "S", surname: "R" },
    });
    expect(created.status).toBe(201);
    const worker = testWorker(t().db, { resolve: resolveTo("127.0.0.1"), allowPrivate: false });
    const deliveries = async () =>
      (await call(app, "GET", `/api/v1/webhook-endpoints/${endpoint.id}/deliveries`, { key: tenant.admin.key })).body.data;
    await workUntil(worker, async () => (await deliveries())[0]?.attempts.length > 0);
    const [delivery] = await deliveries();
    expect(delivery.attempts[0]).toMatchObject({ status_code: null });
    expect(delivery.attempts[0].error).toMatch(/address not allowed/);
    expect(delivery.status).toBe("pending");
  });
});

describe("hostile receivers", () => {
  it("does not follow a redirect", async () => {
    const target = await startReceiver();
    try {
      const redirecting = await server((_req, res) => res.writeHead(302, { location: target.url }).end());
      const got = await nodeTransport()(request(`${redirecting}/hook`), openLimits);
      expect(got.status).toBe(302);
      await new Promise((r) => setTimeout(r, 200));
      expect(target.received).toHaveLength(0);
    } finally {
      await target.close();
    }
  });

  it("reads at most the cap of an endless answer", async () => {
    let written = 0;
    const endless = await server((_req, res) => {
      res.writeHead(200, { "content-type": "text/plain" });
      const chunk = Buffer.alloc(64 * 1024, "x");
      const pump = () => {
        while (written < 200 * 1024 * 1024 && res.write(chunk)) written += chunk.length;
        if (written < 200 * 1024 * 1024) res.once("drain", pump);
        else res.end();
      };
      pump();
    });
    const got = await nodeTransport()(request(endless), openLimits);
    expect(got.status).toBe(200);
    expect(got.body.length).toBeLessThanOrEqual(64 * 1024);
    await new Promise((r) => setTimeout(r, 200));
    // The connection was closed long before the 200 MB were sent.
    expect(written).toBeLessThan(50 * 1024 * 1024);
  });

  it("gives up on a receiver that trickles its headers, at the deadline", async () => {
    const trickling = await server((_req, res) => {
      const socket = res.socket;
      socket?.write("HTTP/1.1 200 OK\r\n");
      const timer = setInterval(() => socket?.write("X-Slow: y\r\n"), 100);
      socket?.on("close", () => clearInterval(timer));
    });
    const started = Date.now();
    const message = await refusal(nodeTransport()(request(trickling), { ...openLimits, timeoutMs: 600 }));
    expect(message).toMatch(/no answer within/);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("lets a receiver that never answers hold at most its share of a worker", { timeout: 90_000 }, async () => {
    const hanging = await startReceiver(() => {});
    const healthy = await startReceiver(answer(200));
    try {
      const slow = await addEndpoint(app, tenant.admin.key, { url: hanging.url, types: ["participant.created"] });
      await addEndpoint(app, tenant.admin.key, { url: healthy.url, types: ["participant.created"] });
      const bulk = await call(app, "POST", "/api/v1/participants/bulk", {
        key: tenant.admin.key,
        body: {
          participants: Array.from({ length: 10 }, (_, i) => ({
            user_id: `hang-${i}`,
            instance_id: camp.instanceId,
            first_name: "H",
            surname: "R",
          })),
        },
      });
      expect(bulk.status).toBe(201);
      // Four slots, at most two per endpoint: the hanging receiver holds two, the healthy one gets the rest.
      const worker = testWorker(t().db, { concurrency: 4, perEndpoint: 2, timeoutMs: 20_000 });
      worker.start();
      try {
        await healthy.waitFor(10, 60_000);
        expect(hanging.received.length).toBeLessThanOrEqual(2);
      } finally {
        await worker.stop(100);
      }
      expect(slow.id).toBeDefined();
    } finally {
      await hanging.close();
      await healthy.close();
    }
  });
});

describe("fairness between endpoints", () => {
  it("lets another tenant's delivery through while one tenant's backlog is being sent", { timeout: 90_000 }, async () => {
    const slowly = () =>
      startReceiver(async (_n, _req, res) => {
        await new Promise((r) => setTimeout(r, 100));
        res.writeHead(200).end();
      });
    const flooded = [await slowly(), await slowly()];
    const other = await tenantWithCamp(t(), "-fair");
    const otherApp = testApp(t().db, { WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true" });
    const quiet = await startReceiver();
    try {
      for (const r of flooded) await addEndpoint(app, tenant.admin.key, { url: r.url, types: ["participant.created"] });
      await addEndpoint(otherApp, other.tenant.admin.key, { url: quiet.url, types: ["participant.created"] });
      const bulk = await call(app, "POST", "/api/v1/participants/bulk", {
        key: tenant.admin.key,
        body: {
          participants: Array.from({ length: 40 }, (_, i) => ({
            user_id: `flood-${i}`,
            instance_id: camp.instanceId,
            first_name: "F",
            surname: "L",
          })),
        },
      });
      expect(bulk.status).toBe(201);
      const worker = testWorker(t().db, { concurrency: 2, perEndpoint: 1 });
      worker.start();
      try {
        await flooded[0]?.waitFor(3, 60_000);
        // The backlog is older, but the quiet endpoint takes its turn.
        const late = await call(otherApp, "POST", "/api/v1/participants", {
          key: other.tenant.admin.key,
          body: { user_id: "quiet", instance_id: other.camp.instanceId, first_name: "Q", surname: "T" },
        });
        expect(late.status).toBe(201);
        await quiet.waitFor(1, 60_000);
        const sent = flooded.reduce((n, r) => n + r.received.length, 0);
        expect(sent).toBeLessThan(80);
      } finally {
        await worker.stop(5_000);
      }
    } finally {
      await quiet.close();
      for (const r of flooded) await r.close();
    }
  });
});
