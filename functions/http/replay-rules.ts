import type { Context } from "hono";
import type { AppEnv } from "../app-env.ts";
import type { StoredAnswer } from "../db/idempotency-lookup.ts";
import { conflict, forbidden } from "../errors.ts";
import type { Principal } from "../principal.ts";

/**
 * What a replay of a stored answer may return (http/idempotency.ts; docs/api.md,
 * "Safe retries"). The route says, while it runs, what its answer is:
 *
 * - `answerHoldsSecret`: the answer carries a secret (an API key, a webhook
 *   signing secret). It is never stored; a retry is told the secret was shown
 *   once (409), and nothing runs again.
 * - `requireAdmin` / `relyOnCareAccess`: the rights the operation relied on
 *   beyond the write scope (which the auth middleware checks on every request,
 *   with the key, its expiry and the user's being active). They are stored
 *   with the answer, and a replay is refused (403) to a caller who no longer
 *   holds them: a demoted admin does not get another user's answer again.
 *
 * Role checks go through `requireAdmin` only (tests/idempotency-replay.test.ts
 * holds the source to it), so no admin-only operation can be replayed to a
 * caller who is no longer an admin.
 */

/** 403 unless the caller is an admin; a stored answer of the request then needs an admin to be replayed. */
export function requireAdmin(c: Context<AppEnv>, message: string): void {
  if (c.get("principal").role !== "admin") throw forbidden(message);
  c.get("answerRules")?.rights.add("admin");
}

/**
 * The operation used an admin's right that the database checks itself (a
 * capacity override, private.override_room_capacity): a stored answer then
 * needs an admin to be replayed.
 */
export function relyOnAdminRole(c: Context<AppEnv>): void {
  c.get("answerRules")?.rights.add("admin");
}

/**
 * The operation reaches care data, whose access the database decides
 * (private.care_access); a stored answer then needs care write access to be replayed.
 */
export function relyOnCareAccess(c: Context<AppEnv>): void {
  c.get("answerRules")?.rights.add("care");
}

/** The answer carries a secret: it is not stored, only that it was given. */
export function answerHoldsSecret(c: Context<AppEnv>): void {
  const rules = c.get("answerRules");
  if (rules) rules.holdsSecret = true;
}

/** 403 when the caller no longer holds a right the stored answer's request relied on. */
export function checkReplayRights(principal: Principal, stored: StoredAnswer): void {
  const requires = stored.requires ?? [];
  if (requires.includes("admin") && principal.role !== "admin") {
    throw forbidden("only an admin may have this request's answer: the caller is no longer an admin");
  }
  if (requires.includes("care") && stored.care_access !== "write") {
    throw forbidden("this request's answer holds care data: the caller no longer has care write access");
  }
}

/** The answer of a stored key that kept no copy (withheld): what a retry is told instead. */
export function withheldAnswer(withheld: NonNullable<StoredAnswer["withheld"]>, header: string) {
  return withheld === "secret"
    ? conflict(
        "the first request with this Idempotency-Key succeeded, and its answer held a secret, which is shown only once and never stored; regenerate the key or rotate the signing secret if it was lost",
        { field: header, issue: "its request succeeded; the secret in its answer is shown only once" },
      )
    : conflict(
        "the first request with this Idempotency-Key succeeded, and its answer named a participant since erased, so it is no longer kept; the request is not run again",
        { field: header, issue: "its answer named a participant since erased" },
      );
}
