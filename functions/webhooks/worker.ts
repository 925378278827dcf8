import type { Database } from "../db/database.ts";
import { RETENTION_DAYS } from "../events/feed.ts";
import { pruneEvents } from "../events/retention.ts";
import { thinEvent } from "../events/types.ts";
import { pruneIdempotencyKeys } from "../http/idempotency-retention.ts";
import { raiseIncidentAlerts } from "../incidents/sweep.ts";
import { describeError, log } from "../log.ts";
import { OVERDUE_SWEEP_MS, raiseOverdueDoses, sweepRetainedHealthRecords } from "../medications/sweep.ts";
import { type AttemptOutcome, type LeasedDelivery, queue } from "./queue.ts";
import { DEFAULT_RETRY_POLICY, type RetryPolicy, retryAt } from "./retry-policy.ts";
import { signedHeaders } from "./signing.ts";
import { DeliveryError, type DeliveryLimits, type Transport } from "./transport.ts";

export interface WorkerOptions {
  /** Deliveries in flight at once. */
  concurrency: number;
  /** At most this many of one endpoint's deliveries in flight, over all workers: a slow receiver holds no more. */
  perEndpoint: number;
  /**
   * At most this many of one tenant's deliveries in flight, over all workers
   * (default: half of `concurrency`, rounded up), so that one tenant's
   * receivers leave the rest of the slots to the others.
   */
  perTenant: number;
  limits: DeliveryLimits;
  retry: RetryPolicy;
  /** How long to wait between looks at an empty queue. */
  idleMs: number;
  /** Events enqueued per endpoint per look. */
  dispatchBatch: number;
}

export const RESPONSE_EXCERPT = 256;

export function workerOptions(overrides: Partial<WorkerOptions> & { limits: DeliveryLimits }): WorkerOptions {
  const concurrency = overrides.concurrency ?? 8;
  return {
    concurrency,
    perEndpoint: 2,
    perTenant: Math.ceil(concurrency / 2),
    retry: DEFAULT_RETRY_POLICY,
    idleMs: 1_000,
    dispatchBatch: 500,
    ...overrides,
  };
}

/**
 * A lease outlasts the longest an attempt can take (the timeout, with room for
 * recording it), so no second worker takes a delivery that is still being
 * sent; when a worker dies, its deliveries are sent again once it runs out.
 */
export const leaseMsFor = (limits: DeliveryLimits) => 2 * limits.timeoutMs + 5_000;

const USER_AGENT = "camp-webhooks/1";
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it removes
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g;

/**
 * Delivers webhooks from the queue: enqueue what the feed has for each
 * endpoint, lease due deliveries, send each (signed) through the runtime's
 * transport, record the outcome. Any number of workers, in any runtime, can
 * work one queue: leases (`for update skip locked`) keep them from sending
 * the same delivery twice.
 */
export class WebhookWorker {
  readonly #inFlight = new Set<Promise<void>>();
  #stopping = false;
  #loop: Promise<void> | undefined;
  #wake: (() => void) | undefined;
  #woken = false;
  readonly #leaseMs: number;

  constructor(
    private readonly db: Database,
    private readonly transport: Transport,
    private readonly options: WorkerOptions,
  ) {
    this.#leaseMs = leaseMsFor(options.limits);
  }

  /** Works the queue until stop(). */
  start(): void {
    this.#loop ??= this.#run();
  }

  /** Looks at the queue now rather than after the idle pause: something is due that a person waits for. */
  wake(): void {
    // Asked while it is not sleeping (it is at the queue now): its next pause is skipped.
    this.#woken = true;
    this.#wake?.();
  }

  /**
   * Takes no new delivery, and waits up to `timeoutMs` for those in flight to
   * be sent and recorded. One still running then is abandoned: its lease runs
   * out and another worker sends it again.
   */
  async stop(timeoutMs: number): Promise<void> {
    this.#stopping = true;
    this.#wake?.();
    const all = Promise.all([this.#loop, ...this.#inFlight]);
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([all, new Promise((r) => (timer = setTimeout(r, timeoutMs)))]);
    clearTimeout(timer);
  }

  /**
   * Works the queue until nothing is due or `budgetMs` has passed, then
   * returns once what it sent is recorded: the Edge Function's scheduled
   * drain. Returns how many attempts it made.
   */
  async drain(budgetMs: number): Promise<{ dispatched: number; attempts: number }> {
    const counts = { dispatched: 0, attempts: 0 };
    // The same loop as the server's: a slot that frees is filled at once, so
    // one hanging receiver does not hold back what the other slots send.
    await this.#run(Date.now() + budgetMs, counts);
    await Promise.all(this.#inFlight);
    return counts;
  }

  /**
   * Fills slots as they free until stop() or, for a drain, until `deadline`
   * or until nothing is due and nothing is in flight.
   */
  async #run(deadline = Number.POSITIVE_INFINITY, counts = { dispatched: 0, attempts: 0 }): Promise<void> {
    const draining = deadline !== Number.POSITIVE_INFINITY;
    let failures = 0;
    while (!this.#stopping && Date.now() < deadline) {
      try {
        await this.#housekeeping();
        await this.#sweepOverdue();
        const dispatched = await queue.dispatch(this.db, this.options.dispatchBatch);
        const free = this.options.concurrency - this.#inFlight.size;
        const leased = free > 0 ? await queue.claim(this.db, free, this.#leaseMs, this.options) : [];
        counts.dispatched += dispatched;
        counts.attempts += leased.length;
        for (const delivery of leased) {
          const sending = this.#deliver(delivery).finally(() => {
            this.#inFlight.delete(sending);
            this.#wake?.();
          });
          this.#inFlight.add(sending);
        }
        failures = 0;
        const busy = leased.length > 0 || dispatched > 0;
        if (draining && !busy && this.#inFlight.size === 0) return;
        // Busy: look again as soon as a slot frees; idle: after a pause (a finished delivery ends it early).
        if (!busy || this.#inFlight.size >= this.options.concurrency) {
          await this.#sleep(Math.min(busy ? 60_000 : this.options.idleMs, deadline - Date.now()));
        }
      } catch (error) {
        if (draining) throw error;
        // The database is down or restarting: log, wait longer each time, go on.
        failures++;
        log.warn("webhook worker could not reach the queue; trying again", describeError(error));
        await this.#sleep(Math.min(this.options.idleMs * 2 ** failures, 30_000));
      }
    }
  }

  /** Sleeps up to `ms`; stop() and a finished delivery wake it early. */
  #sleep(ms: number): Promise<void> {
    if (this.#woken) {
      this.#woken = false;
      return Promise.resolve();
    }
    return new Promise((done) => {
      const finish = () => {
        clearTimeout(timer);
        this.#woken = false;
        done();
      };
      const timer = setTimeout(finish, ms);
      this.#wake = finish;
    });
  }

  #lastOverdueSweep = 0;

  /** About once a minute: overdue doses and incidents past their notice deadline become events (idempotent, so several workers may all sweep). */
  async #sweepOverdue(): Promise<void> {
    if (Date.now() - this.#lastOverdueSweep < OVERDUE_SWEEP_MS) return;
    this.#lastOverdueSweep = Date.now();
    const raised = await raiseOverdueDoses(this.db);
    if (raised > 0) log.info("overdue doses raised", { medication_overdue_events: raised });
    const incidents = await raiseIncidentAlerts(this.db);
    if (incidents > 0) log.info("incidents needing attention raised", { incident_needs_attention_events: incidents });
  }

  async #housekeeping(): Promise<void> {
    if (!(await queue.housekeepingDue(this.db))) return;
    const events = await pruneEvents(this.db);
    const deliveries = await queue.pruneDeliveries(this.db, RETENTION_DAYS);
    // The service's other hourly retention rides here: every runtime runs a worker (docs/operations.md).
    const answers = await pruneIdempotencyKeys(this.db);
    const health = await sweepRetainedHealthRecords(this.db);
    if (events + deliveries + answers + health > 0) {
      log.info("webhook housekeeping", {
        events_pruned: events,
        deliveries_pruned: deliveries,
        idempotency_answers_pruned: answers,
        retained_health_records_deleted: health,
      });
    }
  }

  async #deliver(delivery: LeasedDelivery): Promise<void> {
    const outcome = await this.#attempt(delivery);
    try {
      const result = await queue.finish(this.db, delivery, outcome);
      if (result === "disabled") {
        log.warn("webhook endpoint disabled after persistent failure", {
          endpoint_id: delivery.endpoint_id,
          tenant_id: delivery.tenant_id,
        });
      }
    } catch (error) {
      // Unrecorded: the lease runs out and the delivery is sent again.
      log.warn("webhook attempt could not be recorded; it will be sent again", describeError(error));
    }
  }

  async #attempt(delivery: LeasedDelivery): Promise<AttemptOutcome> {
    const started = new Date();
    const body = JSON.stringify(
      thinEvent({
        id: delivery.event_id,
        type: delivery.event_type,
        occurred_at: delivery.occurred_at,
        resource_id: delivery.resource_id,
        data: delivery.data,
      }),
    );
    let statusCode: number | null = null;
    let error: string | null = null;
    let response: string | null = null;
    try {
      const headers = {
        "content-type": "application/json",
        "user-agent": USER_AGENT,
        ...signedHeaders(delivery.secrets, delivery.event_id, started, body),
      };
      const answer = await this.transport({ url: delivery.url, headers, body }, this.options.limits);
      statusCode = answer.status;
      response = answer.body.slice(0, RESPONSE_EXCERPT).replace(CONTROL, " ") || null;
      if (statusCode >= 300 && statusCode < 400) error = `redirect not followed (${statusCode})`;
      else if (statusCode < 200 || statusCode >= 300) error = `answered ${statusCode}`;
    } catch (caught) {
      if (caught instanceof DeliveryError) error = caught.message;
      else {
        error = "the request failed";
        log.warn("webhook attempt failed unexpectedly", describeError(caught));
      }
    }
    const now = new Date();
    const delivered = error === null;
    const next = delivered ? undefined : retryAt(this.options.retry, delivery.tries, new Date(delivery.cycle_started_at), now);
    const durationMs = now.getTime() - started.getTime();
    const { timeoutMs } = this.options.limits;
    return {
      started,
      durationMs,
      statusCode,
      error,
      response,
      delivered,
      retryAt: next ?? null,
      slowPauseMs: !delivered && durationMs >= timeoutMs / 2 ? timeoutMs : null,
    };
  }
}
