import type { Database } from "../../functions/db/database.ts";
import type { RetryPolicy } from "../../functions/webhooks/retry-policy.ts";
import { WebhookWorker, type WorkerOptions, workerOptions } from "../../functions/webhooks/worker.ts";
import { nodeTransport, type Resolve } from "../../node/webhook-transport.ts";
import { call, type TestApp } from "./fixtures.ts";

/** Retries within a second, so a test sees a whole cycle. */
export const QUICK_RETRIES: RetryPolicy = { firstDelayMs: 50, factor: 2, maxDelayMs: 200, windowMs: 30_000, jitter: 0 };

/** A worker as the server runs one (Node's checked transport), with test-sized limits. */
export function testWorker(
  db: Database,
  options: Partial<WorkerOptions> & { resolve?: Resolve; timeoutMs?: number; allowPrivate?: boolean } = {},
): WebhookWorker {
  const { resolve, timeoutMs, allowPrivate, ...rest } = options;
  return new WebhookWorker(
    db,
    nodeTransport(resolve),
    workerOptions({
      retry: QUICK_RETRIES,
      idleMs: 50,
      limits: { timeoutMs: timeoutMs ?? 2_000, maxResponseBytes: 64 * 1024, allowPrivate: allowPrivate ?? true },
      ...rest,
    }),
  );
}

/** Drains the queue again and again until `done` holds. */
export async function workUntil(worker: WebhookWorker, done: () => boolean | Promise<boolean>, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error("the worker did not get there in time");
    await worker.drain(1_000);
    await new Promise((r) => setTimeout(r, 30));
  }
}

/** Registers an endpoint through the API; returns its id and secret. */
export async function addEndpoint(app: TestApp, key: string, body: Record<string, unknown>) {
  const created = await call(app, "POST", "/api/v1/webhook-endpoints", { key, body });
  if (created.status !== 201) throw new Error(`endpoint not created: ${JSON.stringify(created.body)}`);
  return created.body.data as { id: string; secret: string; url: string };
}
