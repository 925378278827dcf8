import { Webhook } from "standardwebhooks";

/** whsec_ and 32 random bytes in base64, as Standard Webhooks describes its secrets. */
export function newSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return `whsec_${btoa(String.fromCharCode(...bytes))}`;
}

/**
 * The Standard Webhooks headers of one attempt: `webhook-id` (the event's id,
 * the same on every attempt, so a receiver can drop repeats),
 * `webhook-timestamp` (this attempt's time) and `webhook-signature`, one
 * `v1,` signature per secret still valid: during a rotation's grace period,
 * the new secret's and the old one's, so the receiver verifies with either.
 */
export function signedHeaders(secrets: string[], id: string, at: Date, body: string): Record<string, string> {
  if (secrets.length === 0) throw new Error("no signing secret");
  return {
    "webhook-id": id,
    "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
    "webhook-signature": secrets.map((secret) => new Webhook(secret).sign(id, at, body)).join(" "),
  };
}
