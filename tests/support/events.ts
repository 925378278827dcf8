import { expect } from "vitest";
import { type CallResult, call, type TestApp } from "./fixtures.ts";

/** An event as the feed answers it. */
export interface FeedEvent {
  id: string;
  type: string;
  occurred_at: string;
  data: Record<string, string>;
}

/** One request to the feed, which must succeed. */
export async function feedPage(app: TestApp, key: string, query: string): Promise<CallResult> {
  const page = await call(app, "GET", `/api/v1/events${query ? `?${query}` : ""}`, { key });
  expect(page.status, JSON.stringify(page.body)).toBe(200);
  return page;
}

/**
 * Every event after `after` that the feed serves now, following `next` until
 * the page is not full; and the cursor to continue from.
 */
export async function drainFeed(
  app: TestApp,
  key: string,
  after?: string,
  extra = "",
): Promise<{ events: FeedEvent[]; next: string }> {
  const events: FeedEvent[] = [];
  let cursor = after;
  for (;;) {
    const query = [cursor === undefined ? "" : `after=${cursor}`, "limit=1000", extra].filter(Boolean).join("&");
    const page = await feedPage(app, key, query);
    events.push(...page.body.data);
    cursor = page.body.meta.next;
    if (!page.body.meta.has_more) return { events, next: cursor as string };
  }
}

/**
 * Reads the feed until `done` holds for what it has read. A transaction open
 * anywhere on the shared Postgres (another test file's) holds the feed back
 * for a while: that is the design, so tests wait for it rather than assume
 * an event is served the moment it commits.
 */
export async function feedUntil(
  app: TestApp,
  key: string,
  done: (events: FeedEvent[]) => boolean,
  options: { after?: string; extra?: string; timeoutMs?: number } = {},
): Promise<{ events: FeedEvent[]; next: string }> {
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  const events: FeedEvent[] = [];
  let next = options.after;
  for (;;) {
    const page = await drainFeed(app, key, next, options.extra);
    events.push(...page.events);
    next = page.next;
    if (done(events)) return { events, next };
    if (Date.now() > deadline)
      throw new Error(`the feed did not serve the expected events in time; it served ${JSON.stringify(events)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
