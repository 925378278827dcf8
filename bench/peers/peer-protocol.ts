/**
 * What the bench's peers (bench/peers/hand-server.ts, bench/peers/postgraphile-server.ts)
 * take instead of a credential: the tenant and user whose claims they set.
 * Neither checks a credential; the API checks its key on every request.
 */
export const TENANT_HEADER = "x-bench-tenant";
export const USER_HEADER = "x-bench-user";
