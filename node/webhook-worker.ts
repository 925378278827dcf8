import type { Config } from "../functions/config.ts";
import type { Database } from "../functions/db/database.ts";
import { deliveryLimits } from "../functions/webhooks/transport.ts";
import { WebhookWorker, workerOptions } from "../functions/webhooks/worker.ts";
import { nodeTransport } from "./webhook-transport.ts";

/**
 * A webhook worker on Node (the server's own, or `camp worker`'s): the
 * runtime-neutral worker with Node's DNS-checked transport. Returns the
 * function that stops it, waiting for the deliveries in flight (at most
 * `stopTimeoutMs`; one still running then is sent again by another worker
 * once its lease runs out), and the one that makes it look at the queue now.
 */
export function startWebhookWorker(
  db: Database,
  config: Config,
  stopTimeoutMs: number,
): { stop: () => Promise<void>; wake: () => void } {
  const worker = new WebhookWorker(
    db,
    nodeTransport(),
    workerOptions({ concurrency: config.WEBHOOK_WORKER_CONCURRENCY, limits: deliveryLimits(config) }),
  );
  worker.start();
  return { stop: () => worker.stop(stopTimeoutMs), wake: () => worker.wake() };
}
