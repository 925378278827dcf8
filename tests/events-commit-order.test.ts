import { randomBytes } from "node:crypto";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { type CampStructure, tenantWithCamp } from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { drainFeed, type FeedEvent, feedUntil } from "./support/events.ts";
import type { TestApp, TestTenant } from "./support/fixtures.ts";
import { openTenantTransaction } from "./support/tenant-transaction.ts";

/**
 * The feed's promise: a client that keeps passing the cursor sees every
 * committed change exactly once, whatever the length and interleaving of the
 * writing transactions. Each writer here is a real transaction on its own
 * connection; a reader follows the feed while they run.
 */

const t = useTestDatabase();
let app: TestApp;
let tenant: TestTenant;
let camp: CampStructure;

beforeAll(async () => {
  ({ app, tenant, camp } = await tenantWithCamp(t()));
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function insertParticipant(tx: { query: (text: string, values?: unknown[]) => Promise<{ rows: { id: string }[] }> }) {
  const { rows } = await tx.query(
    "insert into public.participants (instance_id, user_id, first_name, surname) values ($1, $2, 'Feed', 'Writer') returning id",
    [camp.instanceId, `w-${randomBytes(6).toString("hex")}`],
  );
  return (rows[0] as { id: string }).id;
}

const open = () => openTenantTransaction(t().url, tenant.tenantId, tenant.admin.userId);

describe("the feed under interleaved transactions", () => {
  it("holds back a change committed behind an older transaction still open, then serves both in transaction order", async () => {
    const key = tenant.admin.key;
    const { next: start } = await drainFeed(app, key, "now");
    const older = await open();
    const first = await insertParticipant(older);
    const newer = await open();
    const second = await insertParticipant(newer);
    await newer.commit();

    // The newer change has committed, but an older transaction could still
    // commit behind it: nothing past the older one is served.
    await sleep(300);
    const meanwhile = await drainFeed(app, key, start);
    expect(meanwhile.events.filter((e) => [first, second].includes(e.data.participant_id as string))).toEqual([]);

    await older.commit();
    const { events } = await feedUntil(app, key, (e) => e.some((x) => x.data.participant_id === second), {
      after: meanwhile.next,
    });
    // Only these two: the fixture's own events may come after "now" when another
    // transaction on the server held the feed back while they committed.
    const ours = events.map((e) => e.data.participant_id).filter((id) => id === first || id === second);
    expect(ours).toEqual([first, second]);
  });

  it("never serves what a transaction rolled back", async () => {
    const key = tenant.admin.key;
    const { next: start } = await drainFeed(app, key, "now");
    const undone = await open();
    const ghost = await insertParticipant(undone);
    const kept = await open();
    const real = await insertParticipant(kept);
    await undone.rollback();
    await kept.commit();
    const { events } = await feedUntil(app, key, (e) => e.some((x) => x.data.participant_id === real), { after: start });
    expect(events.map((e) => e.data.participant_id).filter((id) => id === real || id === ghost)).toEqual([real]);
    expect(events.some((e) => e.data.participant_id === ghost)).toBe(false);
  });

  it("gives a client that follows the cursor every committed change exactly once, whatever the interleaving", async () => {
    const key = tenant.admin.key;
    // Each run: writers that open, write, hold their transaction for a while
    // (one of them long), then commit or roll back, while a reader follows the feed.
    const plan = fc.array(
      fc.record({
        startDelay: fc.integer({ min: 0, max: 150 }),
        writes: fc.integer({ min: 1, max: 3 }),
        hold: fc.oneof(fc.integer({ min: 0, max: 100 }), fc.integer({ min: 400, max: 1200 })),
        commit: fc.integer({ min: 0, max: 9 }).map((n) => n < 7),
      }),
      { minLength: 3, maxLength: 8 },
    );
    await fc.assert(
      fc.asyncProperty(plan, async (writers) => {
        const { next: start } = await drainFeed(app, key, "now");
        const committed: string[] = [];
        const rolledBack: string[] = [];
        let writing = true;
        const seen: FeedEvent[] = [];
        const reader = (async () => {
          let cursor = start;
          while (writing) {
            const page = await drainFeed(app, key, cursor);
            seen.push(...page.events);
            cursor = page.next;
            await sleep(20);
          }
          return cursor;
        })();
        await Promise.all(
          writers.map(async (w) => {
            await sleep(w.startDelay);
            const tx = await open();
            const ids: string[] = [];
            for (let i = 0; i < w.writes; i++) ids.push(await insertParticipant(tx));
            await sleep(w.hold);
            if (w.commit) {
              await tx.commit();
              committed.push(...ids);
            } else {
              await tx.rollback();
              rolledBack.push(...ids);
            }
          }),
        );
        writing = false;
        const cursor = await reader;
        // This run's writes only: an earlier run's (or the fixture's) may come after "now".
        const written = new Set([...committed, ...rolledBack]);
        const ours = (events: FeedEvent[]) => events.filter((e) => written.has(e.data.participant_id as string));
        const rest = await feedUntil(app, key, (e) => ours(seen).length + ours(e).length >= committed.length, {
          after: cursor,
        });
        seen.push(...rest.events);

        expect(new Set(seen.map((e) => e.id)).size).toBe(seen.length);
        const served = ours(seen).map((e) => e.data.participant_id as string);
        expect([...served].sort()).toEqual([...committed].sort());
        for (const id of rolledBack) expect(served).not.toContain(id);
      }),
      { numRuns: 6, seed: 2911 },
    );
  }, 180_000);
});
