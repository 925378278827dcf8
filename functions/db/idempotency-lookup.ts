/**
 * What the key lookup's round trip fetches for a POST with an Idempotency-Key
 * (auth/middleware.ts), for the idempotency middleware (http/idempotency.ts) to
 * decide on: the key's lock and the answer stored under it.
 */

/**
 * Takes the key's lock (held until the request's transaction ends) and reads
 * its stored answer, for the caller of the tenant scope (the claims' tenant
 * and user), given the key as a SQL expression: a parameter, or a literal
 * when it rides in the key lookup's round trip. Outside a scope it returns
 * no row and locks nothing.
 */
export const lookupStatement = (key: string) =>
  `select pg_try_advisory_xact_lock(hashtextextended('idempotency/' || s.tenant_id || '/' || s.user_id || '/' || ${key}, 0)) as free,
          (select to_jsonb(k) from (
             select request_hash, status, headers, body, withheld, requires,
                    -- Only for an answer that relied on care access (http/replay-rules.ts): it costs two lookups.
                    case when 'care' = any (requires) then private.care_access() end as care_access
             from public.idempotency_keys
             where user_id = s.user_id and key = ${key} and expires_at > now()) k) as stored
   from (select private.request_tenant_id() as tenant_id,
                (nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'sub')::uuid as user_id) s
   where s.user_id is not null`;

/** What lookupStatement found: whether the lock was free, and the answer stored under the key. */
export interface IdempotencyLookup {
  free: boolean;
  stored: StoredAnswer | null;
}

/**
 * What is stored under a key: the answer, replayed to a retry of the same
 * request, or why it was not kept (`withheld`; http/replay-rules.ts).
 */
export interface StoredAnswer {
  /** Null once the answer was withheld for an erasure (the request's body held the person's data). */
  request_hash: string | null;
  status: number;
  headers: Record<string, string>;
  body: string | null;
  withheld: "secret" | "erased" | null;
  /** The rights the first request relied on beyond write scope. */
  requires: Array<"admin" | "care">;
  /** The caller's care access now, when `requires` holds `care`. */
  care_access: "none" | "read" | "write" | null;
}
