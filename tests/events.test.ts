import pg from "pg";
import { beforeAll, describe, expect, it } from "vitest";
import { DERIVED_EVENT_TYPES } from "../functions/events/types.ts";
import { type CampStructure, tenantWithCamp } from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { drainFeed, type FeedEvent, feedPage, feedUntil } from "./support/events.ts";
import { call, newTenant, type TestApp, type TestTenant } from "./support/fixtures.ts";
import { image } from "./support/images.ts";
import { photoApp, upload } from "./support/photos.ts";

/** GET /api/v1/events: what becomes an event, its shape, the cursor, types, wait, tenants and retention. */

const t = useTestDatabase();
let app: TestApp;
let tenant: TestTenant;
let camp: CampStructure;

beforeAll(async () => {
  ({ app, tenant, camp } = await tenantWithCamp(t()));
});

const ofResource = (events: FeedEvent[], id: string) => events.filter((e) => Object.values(e.data).includes(id));

async function newParticipant(key: string, userId: string, extra: Record<string, unknown> = {}) {
  const created = await call(app, "POST", "/api/v1/participants", {
    key,
    body: { user_id: userId, instance_id: camp.instanceId, first_name: "Ada", surname: "Lovelace", ...extra },
  });
  expect(created.status).toBe(201);
  return created.body.data.id as string;
}

describe("the event feed", () => {
  it("serves a participant's life as thin events in commit order: created, updated, photo, deleted, erased", async () => {
    const key = tenant.admin.key;
    const { next: start } = await drainFeed(app, key, "now");
    const photos = photoApp(t().db);
    const id = await newParticipant(key, "feed-life", { date_of_birth: "2014-03-02", pronouns: "she/her" });
    expect((await call(app, "PATCH", `/api/v1/participants/${id}`, { key, body: { surname: "Byron" } })).status).toBe(200);
    expect((await upload(photos, key, id, await image("png"))).status).toBe(200);
    expect((await call(app, "DELETE", `/api/v1/participants/${id}`, { key })).status).toBe(200);
    expect((await call(photos, "POST", `/api/v1/participants/${id}/erase`, { key })).status).toBe(200);

    const { events } = await feedUntil(app, key, (e) => ofResource(e, id).length >= 5, { after: start });
    const mine = ofResource(events, id);
    expect(mine.map((e) => e.type)).toEqual([
      "participant.created",
      "participant.updated",
      "photo.replaced",
      "participant.deleted",
      "participant.erased",
    ]);
    for (const event of mine) {
      expect(Object.keys(event).sort()).toEqual(["data", "id", "occurred_at", "type"]);
      expect(event.data).toEqual({ participant_id: id });
      expect(event.id).toMatch(/^[0-9]+$/);
      expect(new Date(event.occurred_at).toISOString()).toBe(event.occurred_at);
    }
    // Thin: nothing of the person leaves through the feed.
    const text = JSON.stringify(events);
    for (const value of ["Ada", "Lovelace", "Byron", "feed-life", "2014-03-02", "she/her"]) expect(text).not.toContain(value);
  });

  it("has an event for every change of the camp's structure, and none for users, keys or reads", async () => {
    const key = tenant.admin.key;
    const { next: start } = await drainFeed(app, key, "now");
    const room = await call(app, "POST", "/api/v1/rooms", {
      key,
      body: { instance_id: camp.instanceId, block_id: camp.blockId, room_number: "F1" },
    });
    expect(room.status).toBe(201);
    expect((await call(app, "PATCH", `/api/v1/rooms/${room.body.data.id}`, { key, body: { capacity: 3 } })).status).toBe(200);
    const user = await call(app, "POST", "/api/v1/users", {
      key,
      body: { email: `u-${Date.now()}@example.test`, role: "staff" },
    });
    expect(user.status).toBe(201);
    expect((await call(app, "POST", "/api/v1/api-keys/generate", { key, body: { email: user.body.data.email } })).status).toBe(
      201,
    );
    expect((await call(app, "GET", "/api/v1/audit-events", { key })).status).toBe(200);
    const sub = await call(app, "POST", "/api/v1/groups/subgroups", {
      key,
      body: { instance_id: camp.instanceId, parent_supergroup_id: camp.supergroupId, name: "Feed nest" },
    });
    expect(sub.status).toBe(201);

    const { events } = await feedUntil(app, key, (e) => ofResource(e, sub.body.data.id).length > 0, { after: start });
    expect(events.map((e) => [e.type, Object.keys(e.data)[0]])).toEqual([
      ["room.created", "room_id"],
      ["room.updated", "room_id"],
      ["subgroup.created", "subgroup_id"],
    ]);
  });

  it("has no event for safeguarding records, nor for reading them", async () => {
    const key = tenant.admin.key;
    const nurse = await tenant.addUser("staff", { withKey: false });
    expect((await call(app, "PATCH", `/api/v1/users/${nurse.userId}`, { key, body: { care_access: "write" } })).status).toBe(200);
    const issued = await call(app, "POST", "/api/v1/api-keys/generate", {
      key,
      body: { email: nurse.email, scopes: ["read", "write", "care"] },
    });
    expect(issued.status).toBe(201);
    const care = issued.body.data.key as string;
    const id = await newParticipant(key, "cared-for");
    const { next: start } = await feedUntil(app, key, (e) => ofResource(e, id).length > 0);
    const base = `/api/v1/participants/${id}`;
    const writes: Array<[string, string, unknown]> = [
      ["POST", `${base}/contacts`, { name: "Gran", phone: "+44 20 7946 0958", emergency: true, emergency_order: 1 }],
      ["PUT", `${base}/care`, { care_notes: "needs an inhaler", allergies: [{ name: "peanuts", severity: "anaphylactic" }] }],
      ["PUT", `${base}/consents`, { photo: "granted", emergency_medical_treatment: "granted" }],
    ];
    for (const [method, path, body] of writes)
      expect((await call(app, method, path, { key: care, body })).status, path).toBeLessThan(300);
    for (const path of [`${base}/contacts`, `${base}/care`, `${base}/consents`]) {
      expect((await call(app, "GET", path, { key: care })).status).toBe(200);
    }
    // A change of the participant after them: once it is served, anything before it would have been too.
    expect((await call(app, "PATCH", base, { key, body: { surname: "After" } })).status).toBe(200);
    const { events } = await feedUntil(app, key, (e) => e.some((x) => x.type === "participant.updated"), { after: start });
    expect(events.map((e) => e.type)).toEqual(["participant.updated"]);
    expect(JSON.stringify(events)).not.toMatch(/Gran|inhaler|peanuts/);
  });

  it("knows exactly the types the database derives", async () => {
    const derived = await t().admin(
      `select distinct private.event_type_of(r, a, c) as type
       from unnest(array['instance', 'supergroup', 'subgroup', 'block', 'room', 'participant', 'user', 'api_key', 'webhook_endpoint', 'contact', 'movement', 'roll_call', 'roll_call_mark']) r,
            unnest(array['create', 'update', 'delete', 'erase', 'read']) a,
            unnest(array['{}'::jsonb, '{"photo_key": [null, "k"]}', '{"photo_key": ["k", null], "photo_link": ["l", null]}',
              '{"direction": "in"}', '{"direction": "out"}', '{"status": ["open", "closed"]}']) c
       where private.event_type_of(r, a, c) is not null`,
    );
    expect(derived.rows.map((r) => r.type).sort()).toEqual([...DERIVED_EVENT_TYPES].sort());
  });

  it("pages with the cursor, filters by type and starts at the head with after=now", async () => {
    const key = tenant.admin.key;
    const { next: start } = await drainFeed(app, key, "now");
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await newParticipant(key, `page-${i}`));
    await call(app, "PATCH", `/api/v1/participants/${ids[0]}`, { key, body: { surname: "Paged" } });
    await feedUntil(app, key, (e) => e.some((x) => x.type === "participant.updated"), { after: start });

    const seen: FeedEvent[] = [];
    let cursor = start;
    for (let pages = 0; ; pages++) {
      const page = await feedPage(app, key, `after=${cursor}&limit=2`);
      seen.push(...page.body.data);
      expect(page.body.meta.limit).toBe(2);
      cursor = page.body.meta.next;
      if (!page.body.meta.has_more) break;
      expect(page.body.data).toHaveLength(2);
      expect(pages).toBeLessThan(10);
    }
    expect(seen.map((e) => e.type)).toEqual([...Array(5).fill("participant.created"), "participant.updated"]);
    expect(new Set(seen.map((e) => e.id)).size).toBe(6);

    const updates = await drainFeed(app, key, start, "types=participant.updated,room.deleted");
    expect(updates.events.map((e) => e.data.participant_id)).toEqual([ids[0]]);

    const head = await feedPage(app, key, "after=now");
    expect(head.body.data).toEqual([]);
    expect((await drainFeed(app, key, head.body.meta.next)).events).toEqual([]);
  });

  it("waits for an event with wait= and answers it as soon as it is committed", async () => {
    const key = tenant.admin.key;
    const { next } = await drainFeed(app, key, "now");
    const waiting = feedPage(app, key, `after=${next}&wait=20`);
    await new Promise((r) => setTimeout(r, 300));
    const id = await newParticipant(key, "waited-for");
    const page = await waiting;
    expect(page.body.data.map((e: FeedEvent) => e.data.participant_id)).toContain(id);
  });

  it("answers 401, not the events, to a wait whose key is revoked or whose user is deactivated meanwhile", async () => {
    for (const how of ["revoked", "deactivated"] as const) {
      const waiter = await tenant.addUser("staff");
      const key = waiter.key as string;
      const { next } = await drainFeed(app, key, "now");
      const waiting = call(app, "GET", `/api/v1/events?after=${next}&wait=20`, { key });
      await new Promise((r) => setTimeout(r, 300));
      if (how === "revoked") {
        expect((await call(app, "DELETE", "/api/v1/api-keys/revoke", { key })).status).toBe(200);
      } else {
        const off = await call(app, "PATCH", `/api/v1/users/${waiter.userId}`, {
          key: tenant.admin.key,
          body: { active: false },
        });
        expect(off.status).toBe(200);
      }
      // An event the waiting request would otherwise answer with, up to 30 s later.
      await newParticipant(tenant.admin.key, `after-${how}`);
      const page = await waiting;
      expect(page.status, how).toBe(401);
      expect(page.body.error.code).toBe("UNAUTHORIZED");
      expect(JSON.stringify(page.body)).not.toContain(`after-${how}`);
    }
  });

  it("answers a wait with no event with an empty page and the cursor to keep", async () => {
    const other = await newTenant(t().db);
    const { next } = await drainFeed(app, other.admin.key, "now");
    const page = await feedPage(app, other.admin.key, `after=${next}&wait=1`);
    expect(page.body.data).toEqual([]);
    expect(page.body.meta.next).toMatch(/^[0-9]+\.[0-9]+$/);
  });

  it("lets a user hold at most 4 waiting requests: a fifth answers at once", async () => {
    const other = await newTenant(t().db);
    const key = other.admin.key;
    const { next } = await drainFeed(app, key, "now");
    const finished: number[] = [];
    const waits: Promise<unknown>[] = [];
    for (let i = 0; i < 5; i++) {
      waits.push(feedPage(app, key, `after=${next}&wait=5`).then(() => finished.push(i)));
      // Each in turn, so the first four hold the slots when the fifth comes.
      await new Promise((r) => setTimeout(r, 300));
    }
    await Promise.all(waits);
    // No event came: the fifth, started last, came back first, answered at once.
    expect(finished[0]).toBe(4);
  });

  it("refuses a malformed cursor, unknown types, and limits or waits out of range, naming the parameter", async () => {
    const key = tenant.admin.key;
    const cases: Array<[string, string]> = [
      ["after=abc", "after"],
      ["after=1.2.3", "after"],
      ["after=99999999999999999999999.1", "after"],
      ["types=participant.created,participant.hugged", "types"],
      ["limit=0", "limit"],
      ["limit=1001", "limit"],
      ["wait=31", "wait"],
      ["wait=-1", "wait"],
      ["since=2020-01-01", "since"],
    ];
    for (const [query, field] of cases) {
      const answer = await call(app, "GET", `/api/v1/events?${query}`, { key });
      expect(answer.status, query).toBe(400);
      expect(answer.body.error.code).toBe("VALIDATION_ERROR");
      expect(JSON.stringify(answer.body.error.details), query).toContain(field);
    }
  });

  it("shows each tenant only its own events, and staff read the feed too", async () => {
    const other = await newTenant(t().db);
    const staff = await tenant.addUser("staff");
    const { next: mineStart } = await drainFeed(app, tenant.admin.key, "now");
    const { next: theirStart } = await drainFeed(app, other.admin.key, "now");
    const id = await newParticipant(tenant.admin.key, "only-mine");
    const { events } = await feedUntil(app, staff.key as string, (e) => ofResource(e, id).length > 0, { after: mineStart });
    expect(ofResource(events, id)).toHaveLength(1);
    // The other tenant's feed, from the same moment and past the event, has none of it.
    const theirs = await drainFeed(app, other.admin.key, theirStart);
    expect(ofResource(theirs.events, id)).toEqual([]);
    expect(theirs.events).toEqual([]);
    // A cursor is only a position: another tenant passing it sees nothing of ours.
    expect((await drainFeed(app, other.admin.key, mineStart)).events).toEqual([]);
    expect((await call(app, "GET", "/api/v1/events")).status).toBe(401);
  });

  it("refuses, with the way out, a cursor older than what retention kept", async () => {
    const key = tenant.admin.key;
    const { next: old } = await drainFeed(app, key, "now");
    await newParticipant(key, "to-expire");
    await feedUntil(app, key, (e) => e.length > 0, { after: old });
    const client = new pg.Client({ connectionString: t().url });
    await client.connect();
    try {
      // Everything up to now is past retention.
      const pruned = await client.query("select private.prune_events(now() + interval '1 second') as n");
      expect(Number(pruned.rows[0].n)).toBeGreaterThan(0);
    } finally {
      await client.end();
    }
    const answer = await call(app, "GET", `/api/v1/events?after=${old}`, { key });
    expect(answer.status).toBe(400);
    expect(answer.body.error.details).toMatchObject([{ field: "after" }]);
    expect(answer.body.error.message).toContain("after=now");
    const head = await feedPage(app, key, "after=now");
    expect((await drainFeed(app, key, head.body.meta.next)).events).toEqual([]);
  });
});
