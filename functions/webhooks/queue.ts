import type { Database } from "../db/database.ts";
import type { EventFigures } from "../events/types.ts";

/** A delivery a worker has leased: what to send, where, and with which secrets. */
export interface LeasedDelivery {
  id: string;
  tenant_id: string;
  endpoint_id: string;
  url: string;
  event_id: string;
  event_type: string;
  resource_id: string;
  occurred_at: Date;
  /** The event's figures (roll_call.closed: its counts), or null. */
  data: EventFigures | null;
  tries: number;
  cycle_started_at: Date;
  lease_token: string;
  secrets: string[];
}

export interface AttemptOutcome {
  started: Date;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
  response: string | null;
  delivered: boolean;
  /** When to try again after a failure; null: the retries are spent. */
  retryAt: Date | null;
  /**
   * A failure that held its slot for at least half the timeout: the endpoint's
   * first pause (the timeout), doubled by the database for each such failure
   * in a row. Null: the endpoint answered in time, its pause ends.
   */
  slowPauseMs: number | null;
}

/**
 * The queue's statements (sql/migrations/*_webhooks.sql), each one round trip
 * in a transaction of its own, as the database's owner: workers act for every
 * tenant, so they sit outside row-level security.
 */
export const queue = {
  /** Enqueues deliveries for the events that can no longer change; returns how many. */
  async dispatch(db: Database, perEndpoint: number): Promise<number> {
    const [row] = await db.query<{ n: number }>("select private.dispatch_webhook_events($1::int) as n", [perEndpoint]);
    return Number(row?.n ?? 0);
  },

  /** Leases up to `limit` due deliveries, tenants taking turns, none beyond a tenant's or an endpoint's slots. */
  async claim(
    db: Database,
    limit: number,
    leaseMs: number,
    slots: { perEndpoint: number; perTenant: number },
  ): Promise<LeasedDelivery[]> {
    const rows = await db.query<LeasedDelivery>(
      "select * from private.claim_webhook_deliveries($1::int, make_interval(secs => $2::double precision / 1000), $3::int, $4::int)",
      [limit, leaseMs, slots.perEndpoint, slots.perTenant],
    );
    return rows.map((row) => ({ ...row, event_id: String(row.event_id) }));
  },

  /** Records an attempt; 'lost_lease' when another worker holds the delivery now. */
  async finish(db: Database, delivery: LeasedDelivery, outcome: AttemptOutcome): Promise<string> {
    const [row] = await db.query<{ result: string }>(
      "select private.finish_webhook_attempt($1, $2, $3, $4, $5, $6, $7, $8, $9, make_interval(secs => $10::double precision / 1000)) as result",
      [
        delivery.id,
        delivery.lease_token,
        outcome.started,
        outcome.durationMs,
        outcome.statusCode,
        outcome.error,
        outcome.response,
        outcome.delivered,
        outcome.retryAt,
        outcome.slowPauseMs,
      ],
    );
    return row?.result ?? "lost_lease";
  },

  /** Claims the hourly housekeeping for this worker; false when another did it within the hour. */
  async housekeepingDue(db: Database): Promise<boolean> {
    const rows = await db.query(
      "update private.webhook_housekeeping set last_run = now() where last_run < now() - interval '1 hour' returning 1",
    );
    return rows.length > 0;
  },

  async pruneDeliveries(db: Database, days: number): Promise<number> {
    let total = 0;
    for (;;) {
      const [row] = await db.query<{ n: number }>(
        "select private.prune_webhook_deliveries(now() - make_interval(days => $1::int), 10000) as n",
        [days],
      );
      const n = Number(row?.n ?? 0);
      total += n;
      if (n < 10_000) return total;
    }
  },
};
