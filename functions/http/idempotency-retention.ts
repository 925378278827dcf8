import type { Database } from "../db/database.ts";

const BATCH = 10_000;

/**
 * Deletes the stored answers of keyed POSTs past their 24 hours, every
 * tenant's, a batch per transaction; returns how many. Run by the webhook
 * workers' hourly housekeeping (webhooks/worker.ts) and `camp idempotency
 * prune`. Keyed requests also prune a few of their tenant's as they store an
 * answer (http/idempotency.ts); this catches the tenant that stopped sending them.
 */
export async function pruneIdempotencyKeys(db: Database): Promise<number> {
  let total = 0;
  for (;;) {
    const [row] = await db.query<{ n: number }>("select private.prune_idempotency_keys($1) as n", [BATCH]);
    const n = Number(row?.n ?? 0);
    total += n;
    if (n < BATCH) return total;
  }
}
