import type { Sql } from "../db/sql.ts";
import { type Cursor, formatCursor } from "./cursor.ts";
import { type EventFigures, type ThinEvent, thinEvent } from "./types.ts";

/** How long the feed keeps events (private.prune_events is called with this). */
export const RETENTION_DAYS = 30;

export interface FeedPage {
  events: ThinEvent[];
  /** Where the next request continues. */
  next: string;
  /** The page is full: more may be waiting. */
  hasMore: boolean;
  /** The newest transaction whose events retention removed. */
  horizon: string;
  /** The caller may still call (private.caller_is_live): checked on every look of a waiting request. */
  live: boolean;
  /** The caller has care access (private.care_access), so the feed shows it care events too (private.is_care_event). */
  care: boolean;
}

interface FeedRow {
  head: string;
  horizon: string;
  live: boolean;
  care: boolean;
  id: string | null;
  xact_id: string | null;
  type: string | null;
  occurred_at: Date | null;
  resource_id: string | null;
  data: EventFigures | null;
}

/**
 * The caller's events after `after` (RLS keeps them to the tenant, and care
 * events to callers with care access: *_care_events.sql), oldest
 * first, in one statement. Only events of transactions below the snapshot's
 * xmin are served: all of those have ended, so nothing can still commit
 * behind them. When the page is not full, `next` moves to (xmin, 0), before
 * every event that can still commit, so that an idle client's cursor keeps
 * up with the head. `types` is a comma-separated list (a parameter the
 * one-statement commit can inline).
 */
export async function readFeed(sql: Sql, after: Cursor, types: string | undefined, limit: number): Promise<FeedPage> {
  const rows = await sql.query<FeedRow>(
    `with page as (
       select e.id, e.xact_id, e.type, e.occurred_at, e.resource_id, e.data from public.events e
       where (e.xact_id, e.id) > ($1::xid8, $2::bigint)
         and e.xact_id < pg_snapshot_xmin(pg_current_snapshot())
         and ($3::text is null or e.type = any (string_to_array($3::text, ',')))
       order by e.xact_id, e.id
       limit $4
     )
     select pg_snapshot_xmin(pg_current_snapshot())::text as head,
            (select h.xact_id::text from private.event_horizon h) as horizon,
            (select private.caller_is_live()) as live,
            (select private.care_access()) <> 'none' as care,
            p.id::text, p.xact_id::text, p.type, p.occurred_at, p.resource_id, p.data
     from (select) as one left join page p on true
     order by p.xact_id, p.id`,
    [after.xactId, after.id, types ?? null, limit],
  );
  const first = rows[0] as FeedRow;
  const found = rows.filter((row): row is FeedRow & { id: string; xact_id: string } => row.id !== null);
  const events = found.map((row) => thinEvent(row as Parameters<typeof thinEvent>[0]));
  const last = found.at(-1);
  const full = limit > 0 && found.length === limit;
  const next = full && last ? { xactId: last.xact_id, id: last.id } : { xactId: first.head, id: "0" };
  return {
    events,
    next: formatCursor(maxCursor(after, next)),
    hasMore: full,
    horizon: first.horizon,
    live: first.live,
    care: first.care,
  };
}

/** A cursor never moves back (a client's own cursor may stand past the head it is shown). */
function maxCursor(a: Cursor, b: Cursor): Cursor {
  const [ax, bx] = [BigInt(a.xactId), BigInt(b.xactId)];
  if (ax !== bx) return ax > bx ? a : b;
  return BigInt(a.id) >= BigInt(b.id) ? a : b;
}
