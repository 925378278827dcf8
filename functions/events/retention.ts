import type { Database } from "../db/database.ts";
import { RETENTION_DAYS } from "./feed.ts";

const BATCH = 10_000;

/**
 * Deletes the events older than the feed keeps, a batch per transaction (no
 * long lock, no long transaction holding the feed back); returns how many.
 * Run by the webhook workers every hour and by `camp events prune`.
 */
export async function pruneEvents(db: Database, days = RETENTION_DAYS): Promise<number> {
  let total = 0;
  for (;;) {
    const [row] = await db.query<{ n: number }>(
      "select private.prune_events(now() - make_interval(days => $1::int), $2::int) as n",
      [days, BATCH],
    );
    const n = Number(row?.n ?? 0);
    total += n;
    if (n < BATCH) return total;
  }
}
