import { beforeAll, describe, expect, it } from "vitest";
import { type CampStructure, tenantWithCamp } from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { drainFeed } from "./support/events.ts";
import { call, type TestApp, type TestTenant } from "./support/fixtures.ts";
import { openTenantTransaction } from "./support/tenant-transaction.ts";

/**
 * Mirroring a tenant's participants while a slow writing transaction (a large
 * import) stays open and others commit around it. The feed's mirror misses
 * nothing. The `updated_since` mirror misses the slow transaction's change,
 * whatever margin it subtracts, once the transaction outlasts the margin:
 * `updated_at` is when the writing transaction began, not when it committed
 * (why the README points mirrors at the feed).
 */

const t = useTestDatabase();
let app: TestApp;
let tenant: TestTenant;
let camp: CampStructure;

beforeAll(async () => {
  ({ app, tenant, camp } = await tenantWithCamp(t()));
});

type Row = Record<string, unknown> & { id: string; updated_at: string };
type Mirror = Map<string, string | null>;

/** What the mirror should hold: each participant's surname, null once deleted. */
async function truth(): Promise<Mirror> {
  const all = await call(app, "GET", `/api/v1/participants?instance_id=${camp.instanceId}&include_deleted=true&limit=1000`, {
    key: tenant.admin.key,
  });
  return new Map(all.body.data.map((p: Row) => [p.id, p.deleted_at ? null : (p.surname as string)]));
}

/** A mirror that follows the feed and fetches each record an event names. */
function feedMirror() {
  const mirror: Mirror = new Map();
  let cursor: string | undefined;
  return {
    mirror,
    async start() {
      cursor = (await drainFeed(app, tenant.admin.key, "now")).next;
      for (const [id, surname] of await truth()) mirror.set(id, surname);
    },
    async sync() {
      const page = await drainFeed(
        app,
        tenant.admin.key,
        cursor,
        "types=participant.created,participant.updated,participant.deleted",
      );
      for (const event of page.events) {
        const id = event.data.participant_id as string;
        const record = await call(app, "GET", `/api/v1/participants/${id}`, { key: tenant.admin.key });
        mirror.set(id, record.status === 404 ? null : record.body.data.surname);
      }
      cursor = page.next;
    },
  };
}

/** A mirror that pages `updated_since` its newest `updated_at` minus a margin, as the README used to advise. */
function updatedSinceMirror(marginMs: number) {
  const mirror: Mirror = new Map();
  let since = new Date(0);
  return {
    mirror,
    async sync() {
      const query = `instance_id=${camp.instanceId}&include_deleted=true&sort=updated_at&limit=1000&updated_since=${new Date(since.getTime() - marginMs).toISOString()}`;
      const page = await call(app, "GET", `/api/v1/participants?${query}`, { key: tenant.admin.key });
      expect(page.status).toBe(200);
      for (const p of page.body.data as Row[]) {
        mirror.set(p.id, p.deleted_at ? null : (p.surname as string));
        if (new Date(p.updated_at) > since) since = new Date(p.updated_at);
      }
    },
  };
}

async function create(userId: string) {
  const created = await call(app, "POST", "/api/v1/participants", {
    key: tenant.admin.key,
    body: { user_id: userId, instance_id: camp.instanceId, first_name: "Mira", surname: "Before" },
  });
  expect(created.status).toBe(201);
  return created.body.data.id as string;
}

describe("mirroring a tenant", () => {
  it("misses nothing through the feed while a writing transaction stays open and others commit", async () => {
    const slowTarget = await create("mirror-slow");
    const byFeed = feedMirror();
    await byFeed.start();
    const bySince = updatedSinceMirror(1_000);
    await bySince.sync();

    // A slow import: begins, changes a participant, and stays open.
    const slow = await openTenantTransaction(t().url, tenant.tenantId, tenant.admin.userId);
    await slow.query("update public.participants set surname = 'Slow' where id = $1", [slowTarget]);
    await new Promise((r) => setTimeout(r, 1_500));

    // Others commit meanwhile, and both mirrors sync past them.
    const quick = await create("mirror-quick");
    await call(app, "PATCH", `/api/v1/participants/${quick}`, { key: tenant.admin.key, body: { surname: "Quick" } });
    const gone = await create("mirror-gone");
    await call(app, "DELETE", `/api/v1/participants/${gone}`, { key: tenant.admin.key });
    await byFeed.sync();
    await bySince.sync();

    await slow.commit();
    const expected = await truth();
    expect(expected.get(slowTarget)).toBe("Slow");
    const deadline = Date.now() + 60_000;
    for (;;) {
      await byFeed.sync();
      // Until the mirror holds every change: another transaction anywhere on the server
      // may still hold the quick changes back after the slow one is served.
      const caughtUp = [...expected].every(([id, surname]) => byFeed.mirror.get(id) === surname);
      if (caughtUp || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    await bySince.sync();

    expect(byFeed.mirror).toEqual(expected);
    // The updated_since mirror has everything but the slow change: it had
    // already moved past the time that transaction began.
    expect(bySince.mirror.get(slowTarget)).toBe("Before");
    expect(new Map([...bySince.mirror].filter(([id]) => id !== slowTarget))).toEqual(
      new Map([...expected].filter(([id]) => id !== slowTarget)),
    );
  });
});
