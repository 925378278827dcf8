import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addCampStructure, type CampStructure } from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { DENO, DENO_CONFIG, denoEnv, RUN_FLAGS, type RunningFunction, startFunction } from "./support/deno.ts";
import { call, newTenant, type TestApp, type TestTenant, testApp } from "./support/fixtures.ts";
import { run } from "./support/processes.ts";
import { type Receiver, startReceiver } from "./support/receiver.ts";
import { addEndpoint } from "./support/webhooks.ts";

/**
 * The Edge Function drains the same queue with the same worker code when its
 * scheduler (pg_cron + pg_net on Supabase) calls POST /webhooks/drain, and
 * its own transport connects only to the address it checked.
 */

const t = useTestDatabase();
const SECRET = "drain-secret-0123456789-abcdefghijklmnop";
let fn: RunningFunction;
let app: TestApp;
let tenant: TestTenant;
let camp: CampStructure;
let hook: Receiver;

beforeAll(async () => {
  fn = await startFunction({ DATABASE_URL: t().url, WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true", WEBHOOK_DRAIN_SECRET: SECRET });
  tenant = await newTenant(t().db);
  camp = await addCampStructure(t(), tenant.tenantId);
  app = testApp(t().db, { WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true" });
  hook = await startReceiver();
}, 180_000);
afterAll(async () => {
  await fn?.stop();
  await hook?.close();
});

const drain = (secret = SECRET) =>
  fetch(`${fn.origin}/api/webhooks/drain`, { method: "POST", headers: { Authorization: `Bearer ${secret}` } });

describe("the Edge Function's scheduled drain", { timeout: 120_000 }, () => {
  it("delivers the queue's events, signed, when the scheduler calls it with its secret", async () => {
    const endpoint = await addEndpoint(app, tenant.admin.key, { url: hook.url, types: ["participant.created"] });
    const created = await call(app, "POST", "/api/v1/participants", {
      key: tenant.admin.key,
      body: { user_id: "edge-drained", instance_id: camp.instanceId, first_name: "E", surname: "D" },
    });
    expect(created.status).toBe(201);

    const deadline = Date.now() + 60_000;
    while (hook.received.length === 0 && Date.now() < deadline) {
      const answer = await drain();
      expect(answer.status).toBe(200);
      const body = await answer.json();
      expect(body.success).toBe(true);
      if (hook.received.length === 0) await new Promise((r) => setTimeout(r, 200));
    }
    const got = hook.received[0] as Receiver["received"][number];
    const event = new Webhook(endpoint.secret).verify(got.body, got.headers) as { data: Record<string, string> };
    expect(event.data.participant_id).toBe(created.body.data.id);
  });

  it("refuses a caller without the secret, and any method but POST", async () => {
    const wrong = await drain("not-the-secret");
    expect(wrong.status).toBe(401);
    expect((await wrong.json()).error.code).toBe("UNAUTHORIZED");
    const get = await fetch(`${fn.origin}/api/webhooks/drain`);
    expect(get.status).toBe(405);
  });

  it("connects only to checked addresses under Deno: a name answering loopback is refused", async () => {
    const before = hook.received.length;
    const result = await run(
      DENO,
      ["run", ...RUN_FLAGS, "--config", DENO_CONFIG, "tests/deno/transport-check.ts", hook.url],
      denoEnv() as Record<string, string>,
      120_000,
    );
    expect(result.code, result.stderr.slice(-2000)).toBe(0);
    const outcomes = JSON.parse(result.stdout.trim().split("\n").at(-1) as string);
    expect(outcomes.rebound.error).toMatch(
      /address not allowed: rebind\.example\.org resolves to 127\.0\.0\.1 is a loopback address/,
    );
    expect(outcomes.literal.error).toMatch(/127\.0\.0\.1 is a loopback address/);
    expect(outcomes.http.error).toMatch(/http: URLs are not allowed/);
    expect(outcomes.allowed).toEqual({ status: 200, body: "ok" });
    // Only the allowed request reached the receiver, by the checked address, for the name asked.
    expect(hook.received.length).toBe(before + 1);
    expect(hook.received.at(-1)?.headers.host).toBe(`receiver.example.org:${new URL(hook.url).port}`);
  });
});
