import { ApiError, notFound, serviceUnavailable, unauthorized } from "../errors.ts";
import { errorBody } from "../http/envelope.ts";
import { describeError, log } from "../log.ts";
import type { WebhookWorker } from "./worker.ts";

/** How long one scheduled drain works before it answers (the Edge Function's wall clock is longer). */
export const DRAIN_BUDGET_MS = 25_000;

function sameSecret(given: string, expected: string): boolean {
  // Compared in full whatever differs, so the time taken says nothing about the secret.
  let diff = given.length ^ expected.length;
  for (let i = 0; i < expected.length; i++) diff |= (given.charCodeAt(i) | 0) ^ expected.charCodeAt(i);
  return diff === 0;
}

const answer = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { ...headers, "content-type": "application/json" } });

/**
 * POST /webhooks/drain, for a scheduler (pg_cron with pg_net on Supabase):
 * works the webhook queue for at most DRAIN_BUDGET_MS with the same worker
 * code as every other runtime, then answers what it did. Bearer
 * WEBHOOK_DRAIN_SECRET; without that secret configured there is no such route.
 */
export function drainHandler(worker: WebhookWorker, secret: string | undefined, budgetMs = DRAIN_BUDGET_MS) {
  return async (request: Request): Promise<Response> => {
    const fail = (error: ApiError) => answer(error.status, errorBody(error), error.headers);
    if (!secret) return fail(notFound("route"));
    if (request.method !== "POST") return fail(new ApiError("METHOD_NOT_ALLOWED", "use POST", undefined, { Allow: "POST" }));
    const given = /^Bearer (.+)$/.exec(request.headers.get("authorization") ?? "")?.[1] ?? "";
    if (!sameSecret(given, secret)) return fail(unauthorized("the drain needs Authorization: Bearer <WEBHOOK_DRAIN_SECRET>"));
    try {
      return answer(200, { success: true, data: await worker.drain(budgetMs) });
    } catch (error) {
      log.warn("webhook drain could not reach the queue", describeError(error));
      return fail(serviceUnavailable());
    }
  };
}
