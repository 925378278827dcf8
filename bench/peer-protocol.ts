/**
 * What the bench's peers (bench/hand-server.ts, bench/postgraphile-server.ts)
 * take instead of a credential: the tenant and user whose claims they set.
 * Neither checks a credential; the API checks its key on every request.
 */
export const TENANT_HEADER = "x-bench-tenant";
export const USER_HEADER = "x-bench-user";
