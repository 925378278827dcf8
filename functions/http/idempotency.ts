import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex } from "@noble/hashes/utils.js";
import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import type { AnswerRules, AppEnv } from "../app-env.ts";
import { type IdempotencyLookup, lookupStatement, type StoredAnswer } from "../db/idempotency-lookup.ts";
import type { Sql } from "../db/sql.ts";
import { conflict, invalidField } from "../errors.ts";
import { checkReplayRights, withheldAnswer } from "./replay-rules.ts";

const HEADER = "Idempotency-Key";
const KEY = /^[\x21-\x7e]{1,255}$/;
/** The answer's headers a replay repeats; the rest (request id, rate limits) are the retry's own. */
const KEPT_HEADERS = ["content-type", "location", "etag"];
/** Expired keys of the tenant removed by each keyed request, so the table never grows without bound. */
const PRUNE_BATCH = 20;

/** The request's Idempotency-Key when it is a POST's and well formed (a malformed one is refused later, with 400). */
export function idempotencyKeyOf(c: Context<AppEnv>): string | undefined {
  const key = c.req.header(HEADER);
  return c.req.method === "POST" && key !== undefined && KEY.test(key) ? key : undefined;
}

/**
 * Safe retries of POSTs (docs/api.md, "The contract"). With an
 * Idempotency-Key, the whole request runs in one tenant transaction
 * (TenantScope.wholeRequest) that also stores its answer under the
 * key, for the tenant and the calling user, for 24 hours: the answer is
 * stored exactly when the write commits. A retry with the same key and the
 * same request gets that answer with `Idempotent-Replayed: true` and writes
 * nothing; the same key with another request, or while the first still runs
 * (an advisory lock held by its transaction), is 409. An error answer is not
 * stored: its transaction wrote nothing, so a retry runs again.
 *
 * What a replay may return (http/replay-rules.ts): an answer holding a secret
 * is not stored (a retry is 409: shown once); the rights the route relied on
 * are stored with the answer and checked again before a replay (403); an
 * answer naming a participant since erased has lost its copy (409).
 */
export function idempotency() {
  return createMiddleware<AppEnv>(async (c, next) => {
    const key = c.req.header(HEADER);
    if (c.req.method !== "POST" || key === undefined) return next();
    if (!KEY.test(key)) throw invalidField(HEADER, "must be 1 to 255 visible ASCII characters");
    const requestHash = await fingerprint(c);
    const principal = c.get("principal");
    const tenant = c.get("tenant");

    return tenant.wholeRequest(async (sql, last) => {
      // The key lookup has usually done this in its own round trip, in this transaction.
      const found = c.get("idempotencyLookup") ?? (await sql.one<IdempotencyLookup>(lookupStatement("$1"), [key]));
      if (!found?.free) throw conflict(`a request with this ${HEADER} is still in progress; retry when it has finished`);
      const stored = found.stored;
      if (stored) {
        // The caller's credential, its scope and the user's being active were checked again by authentication.
        checkReplayRights(principal, stored);
        if (stored.request_hash !== null && stored.request_hash !== requestHash) {
          throw conflict(`this ${HEADER} was used for a different request (method, path or body) in the last 24 hours`);
        }
        if (stored.withheld !== null) throw withheldAnswer(stored.withheld, HEADER);
        const incident = incidentReplay(stored, c.req.path);
        if (incident) {
          // An incident's answer goes through the incident door again: 404 once the caller may no longer read it
          // (a safeguarding incident to someone no longer a lead), a read on the record.
          await sql.query("select private.incident($1)", [incident]);
          return { commit: true, result: replay(stored) };
        }
        const care = careReplay(stored, c.req.path);
        if (!care) return { commit: false, result: replay(stored) };
        // A care answer goes through the care door again: 404 once the participant is deleted, a read on the record.
        await sql.query("select private.care_replay($1, $2)", [care.participant, care.type]);
        return { commit: true, result: replay(stored) };
      }

      const rules: AnswerRules = { holdsSecret: false, rights: new Set() };
      c.set("answerRules", rules);
      await next();
      const response = c.res;
      if (response.status < 200 || response.status >= 300) return { commit: false, result: undefined };
      // The answer is stored by the transaction's last statement, sent with the commit.
      await record(last, principal.userId, key, requestHash, response, rules);
      return { commit: true, result: undefined };
    });
  });
}

/** What makes two requests the same: method, path, query, content type and body bytes. */
async function fingerprint(c: Context<AppEnv>): Promise<string> {
  const url = new URL(c.req.url);
  const body = new Uint8Array(await c.req.arrayBuffer());
  // The route reads the raw request; give it the bytes read here.
  c.req.raw = new Request(c.req.raw.url, { method: c.req.method, headers: c.req.raw.headers, body });
  const head = new TextEncoder().encode(
    `${c.req.method} ${url.pathname}?${url.searchParams} ${c.req.header("content-type") ?? ""}\n`,
  );
  return bytesToHex(sha256.create().update(head).update(body).digest());
}

async function record(
  sql: Sql,
  userId: string,
  key: string,
  requestHash: string,
  response: Response,
  rules: AnswerRules,
): Promise<void> {
  // A secret is kept nowhere: the key records only that its request succeeded.
  const headers = rules.holdsSecret
    ? {}
    : Object.fromEntries(
        KEPT_HEADERS.flatMap((name) => {
          const value = response.headers.get(name);
          return value === null ? [] : [[name, value]];
        }),
      );
  const body = rules.holdsSecret ? null : await response.clone().text();
  await sql.query(
    `with pruned as (
       delete from public.idempotency_keys
       where ctid in (select ctid from public.idempotency_keys where expires_at <= now() limit ${PRUNE_BATCH})
     )
     insert into public.idempotency_keys (user_id, key, request_hash, status, headers, body, withheld, requires)
     values ($1, $2, $3, $4, $5, $6, $7, $8::text[])
     on conflict (tenant_id, user_id, key) do update
       set request_hash = excluded.request_hash, status = excluded.status, headers = excluded.headers,
           body = excluded.body, withheld = excluded.withheld, requires = excluded.requires,
           created_at = now(), expires_at = now() + interval '24 hours'
       where public.idempotency_keys.expires_at <= now()`,
    [
      userId,
      key,
      requestHash,
      response.status,
      JSON.stringify(headers),
      body,
      rules.holdsSecret ? "secret" : null,
      // An array literal as text: a JS array would keep the statement from travelling with the commit (db/statements.ts executeText).
      `{${[...rules.rights].sort().join(",")}}`,
    ],
  );
}

/**
 * The participant and the read's resource type of a stored answer that
 * carries care data (`requires` holds care), from the request's path, which
 * the replay shares with the first request (it is in the fingerprint).
 */
function careReplay(stored: StoredAnswer, path: string): { participant: string; type: string } | undefined {
  if (!stored.requires?.includes("care")) return undefined;
  const match = /\/participants\/([0-9a-fA-F-]{36})\/([a-z-]+)/.exec(path);
  if (!match?.[1] || !match[2]) return undefined;
  // The path's collection is the read's type (contacts, medications, medication_administrations).
  return { participant: match[1], type: match[2].replaceAll("-", "_") };
}

/** The incident of a stored care answer under /incidents/{id}/… (an amendment, a close), from the request's path. */
function incidentReplay(stored: StoredAnswer, path: string): string | undefined {
  if (!stored.requires?.includes("care")) return undefined;
  return /\/incidents\/([0-9a-fA-F-]{36})\//.exec(path)?.[1];
}

function replay(stored: StoredAnswer): Response {
  const headers = new Headers(stored.headers);
  headers.set("Idempotent-Replayed", "true");
  return new Response(stored.body, { status: stored.status, headers });
}
