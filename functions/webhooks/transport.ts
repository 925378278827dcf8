/**
 * The one runtime-specific part of delivery: sending a signed request to a
 * receiver over a connection whose address has been checked. Node
 * (node/webhook-transport.ts) and Deno (supabase/functions/api/webhook-transport.ts)
 * each provide one; the worker (worker.ts) is the same everywhere.
 */
export interface OutgoingWebhook {
  url: string;
  headers: Record<string, string>;
  body: string;
}

export interface DeliveryLimits {
  /** From the first byte sent to the answer's status: longer is a failed attempt. */
  timeoutMs: number;
  /** At most this much of an answer's body is read; the rest is never received. */
  maxResponseBytes: number;
  /** Allow http and loopback/private addresses (WEBHOOK_ALLOW_PRIVATE_NETWORKS). */
  allowPrivate: boolean;
}

export interface ReceiverAnswer {
  status: number;
  /** The start of the body, as text (at most maxResponseBytes were read). */
  body: string;
}

/** A failed attempt whose message is fit for the endpoint's admins: no stack, no internal detail. */
export class DeliveryError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "DeliveryError";
  }
}

export type Transport = (request: OutgoingWebhook, limits: DeliveryLimits) => Promise<ReceiverAnswer>;

/** The limits of every attempt, from the configuration. */
export function deliveryLimits(config: { WEBHOOK_TIMEOUT_MS: number; WEBHOOK_ALLOW_PRIVATE_NETWORKS: boolean }): DeliveryLimits {
  return {
    timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    maxResponseBytes: 64 * 1024,
    allowPrivate: config.WEBHOOK_ALLOW_PRIVATE_NETWORKS,
  };
}
