import { randomUUID } from "node:crypto";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { instanceRoster } from "../functions/roll-calls/data.ts";
import { addCampStructure } from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { type CallOptions, call, newTenant, signToken, type TestApp, type TestTenant, testApp } from "./support/fixtures.ts";

/**
 * Offline devices: POST /attendance/sync answers each record in its place and
 * keeps the good ones; the timeline rule makes history and presence the same
 * whatever order and however often two devices upload overlapping batches
 * (a property, seeded); the roster gives a device what it needs, pickups'
 * names only to those who may see them.
 */

const t = useTestDatabase();

let app: TestApp;
let tenant: TestTenant;
let instanceId: string;
let admin: CallOptions;
let staff: CallOptions;

async function newParticipant(): Promise<string> {
  const created = await call(app, "POST", "/api/v1/participants", {
    ...admin,
    body: { instance_id: instanceId, user_id: `s-${randomUUID().slice(0, 8)}`, first_name: "Sam", surname: "Sync" },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body.data.id;
}

async function addContact(participant: string, body: Record<string, unknown>): Promise<string> {
  const created = await call(app, "POST", `/api/v1/participants/${participant}/contacts`, { ...admin, body });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body.data.id;
}

const sync = (who: CallOptions, records: unknown[]) =>
  call(app, "POST", "/api/v1/attendance/sync", { ...who, body: { records } });
const minutesAgo = (m: number) => new Date(Date.now() - m * 60_000).toISOString();

beforeAll(async () => {
  app = testApp(t().db);
  tenant = await newTenant(t().db);
  instanceId = (await addCampStructure(t(), tenant.tenantId)).instanceId;
  admin = { token: await signToken({ sub: `sub-${tenant.admin.email}`, email: tenant.admin.email, email_verified: true }) };
  staff = { key: (await tenant.addUser("staff")).key as string };
});

describe("POST /attendance/sync", () => {
  it("answers each record in its place, keeps the good ones, and knows a nonce it has seen", async () => {
    const child = await newParticipant();
    const mum = await addContact(child, { name: "Mum", authorised_pickup: true });
    const stranger = await addContact(child, { name: "Stranger", authorised_pickup: false });
    const records = [
      { participant_id: child, direction: "in", recorded_at: minutesAgo(50), nonce: randomUUID(), location: "Bus" },
      { participant_id: child, direction: "sideways", recorded_at: minutesAgo(49), nonce: randomUUID() },
      { participant_id: randomUUID(), direction: "in", recorded_at: minutesAgo(48), nonce: randomUUID() },
      { participant_id: child, direction: "out", recorded_at: minutesAgo(40), nonce: randomUUID(), pickup_contact_id: stranger },
      { participant_id: child, direction: "out", recorded_at: minutesAgo(30), nonce: randomUUID(), pickup_contact_id: mum },
      { participant_id: child, direction: "out", recorded_at: minutesAgo(20), nonce: randomUUID(), pickup_contact_id: mum },
      { participant_id: child, direction: "in", recorded_at: minutesAgo(10), nonce: randomUUID(), security_code: "ABCD" },
      {
        participant_id: child,
        direction: "in",
        recorded_at: new Date(Date.now() + 3_600_000).toISOString(),
        nonce: randomUUID(),
      },
      { participant_id: child, direction: "in", recorded_at: minutesAgo(5) },
      { participant_id: child, direction: "in", recorded_at: minutesAgo(4), nonce: randomUUID(), override_reason: "x" },
    ];
    const first = await sync(staff, records);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const outcomes = first.body.data.results.map((r: { outcome: string }) => r.outcome);
    expect(outcomes).toEqual([
      "accepted",
      "invalid",
      "invalid",
      "invalid",
      "accepted",
      "conflict",
      "invalid",
      "invalid",
      "invalid",
      "invalid",
    ]);
    expect(first.body.data.results.map((r: { index: number }) => r.index)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(first.body.data.results[1]).toMatchObject({ field: "direction" });
    expect(first.body.data.results[2]).toMatchObject({ field: "participant_id" });
    expect(first.body.data.results[3]).toMatchObject({ field: "pickup_contact_id" });
    expect(first.body.data.results[5].reason).toBe("already checked out");
    expect(first.body.data.results[8]).toMatchObject({ field: "nonce" });
    expect(first.body.data.counts).toEqual({ accepted: 2, duplicate: 0, conflict: 1, invalid: 7 });

    const again = await sync(staff, records);
    expect(again.body.data.counts).toEqual({ accepted: 0, duplicate: 3, conflict: 0, invalid: 7 });
    const stored = await call(app, "GET", `/api/v1/attendance?participant_id=${child}`, staff);
    expect(stored.body.data.map((m: { direction: string; conflict: boolean }) => [m.direction, m.conflict])).toEqual([
      ["in", false],
      ["out", false],
      ["out", true],
    ]);
    expect((await call(app, "GET", `/api/v1/participants/${child}`, staff)).body.data).toMatchObject({
      presence: "out",
      presence_since: records[5]?.recorded_at,
    });
  });

  it("judges a record by where its recorded_at falls: an earlier check-in arriving late clears a conflict", async () => {
    const child = await newParticipant();
    const mum = await addContact(child, { name: "Mum", authorised_pickup: true });
    const out = {
      participant_id: child,
      direction: "out",
      recorded_at: minutesAgo(10),
      nonce: randomUUID(),
      pickup_contact_id: mum,
    };
    const lonely = await sync(staff, [out]);
    expect(lonely.body.data.results[0]).toMatchObject({ outcome: "conflict", reason: "not checked in" });
    const late = await sync(staff, [
      { participant_id: child, direction: "in", recorded_at: minutesAgo(60), nonce: randomUUID() },
    ]);
    expect(late.body.data.results[0].outcome).toBe("accepted");
    const stored = await call(app, "GET", `/api/v1/attendance?participant_id=${child}`, staff);
    expect(stored.body.data.map((m: { conflict: boolean }) => m.conflict)).toEqual([false, false]);
    expect((await call(app, "GET", `/api/v1/participants/${child}`, staff)).body.data.presence).toBe("out");
  });

  it("refuses more than 1,000 records, and a read-only key", async () => {
    const child = await newParticipant();
    const many = Array.from({ length: 1_001 }, () => ({ participant_id: child, direction: "in", nonce: randomUUID() }));
    expect((await sync(staff, many)).status).toBe(400);
    const reader = await tenant.addUser("staff", { withKey: false });
    const issued = await call(app, "POST", "/api/v1/api-keys/generate", {
      ...admin,
      body: { email: reader.email, scopes: ["read"] },
    });
    const readOnly = await sync({ key: issued.body.data.key }, [{ participant_id: child, direction: "in", nonce: randomUUID() }]);
    expect(readOnly.status).toBe(403);
  });

  it("keeps another tenant's device out: its records about our participants are invalid", async () => {
    const child = await newParticipant();
    const other = await newTenant(t().db);
    const theirs = await sync({ key: other.admin.key }, [
      { participant_id: child, direction: "in", recorded_at: minutesAgo(1), nonce: randomUUID() },
    ]);
    expect(theirs.status).toBe(200);
    expect(theirs.body.data.results[0]).toMatchObject({ outcome: "invalid", field: "participant_id" });
    expect((await call(app, "GET", `/api/v1/participants/${child}`, staff)).body.data.presence).toBeNull();
  });
});

/** The timeline rule, written down once more for the property: the reference every upload order must reach. */
interface Rec {
  participant_id: string;
  direction: "in" | "out";
  recorded_at: string;
  nonce: string;
  pickup_contact_id?: string;
}

function expected(records: Rec[]) {
  const byParticipant = new Map<string, Rec[]>();
  for (const r of records) byParticipant.set(r.participant_id, [...(byParticipant.get(r.participant_id) ?? []), r]);
  const history: string[] = [];
  const presence: Record<string, string | null> = {};
  for (const [participant, list] of byParticipant) {
    const ordered = [...list].sort((a, b) =>
      a.recorded_at === b.recorded_at ? (a.nonce < b.nonce ? -1 : 1) : a.recorded_at < b.recorded_at ? -1 : 1,
    );
    ordered.forEach((r, i) => {
      const prev = ordered[i - 1]?.direction;
      const conflict = r.direction === prev || (r.direction === "out" && prev === undefined);
      history.push(`${r.nonce}:${r.direction}:${conflict}`);
    });
    presence[participant] = ordered[ordered.length - 1]?.direction ?? null;
  }
  return { history: history.sort(), presence };
}

describe("two devices syncing overlapping batches", () => {
  it("end in the same history and presence whatever the order and however often they upload (property, seeded)", async () => {
    const PARTICIPANTS = 3;
    const base = Date.now() - 86_400_000;
    const recordArb = fc.record({
      who: fc.integer({ min: 0, max: PARTICIPANTS - 1 }),
      direction: fc.constantFrom("in" as const, "out" as const),
      // Few distinct minutes, so equal recorded_at (ordered by nonce) happen too.
      minute: fc.integer({ min: 0, max: 12 }),
      device: fc.constantFrom("a", "b", "both"),
    });
    const scenario = fc.record({
      records: fc.array(recordArb, { minLength: 1, maxLength: 14 }),
      batchA: fc.integer({ min: 1, max: 5 }),
      batchB: fc.integer({ min: 1, max: 5 }),
      order: fc.array(fc.boolean(), { minLength: 30, maxLength: 30 }),
      repeats: fc.array(fc.nat(), { maxLength: 3 }),
    });

    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        const people: Array<{ id: string; pickup: string }> = [];
        for (let i = 0; i < PARTICIPANTS; i++) {
          const id = await newParticipant();
          people.push({ id, pickup: await addContact(id, { name: `Carer ${i}`, authorised_pickup: true }) });
        }
        const records = s.records.map((r) => {
          const person = people[r.who] as { id: string; pickup: string };
          const rec: Rec = {
            participant_id: person.id,
            direction: r.direction,
            recorded_at: new Date(base + r.minute * 60_000).toISOString(),
            nonce: randomUUID(),
          };
          if (r.direction === "out") rec.pickup_contact_id = person.pickup;
          return { rec, device: r.device };
        });
        const deviceRecords = (name: string) => records.filter((r) => r.device === name || r.device === "both").map((r) => r.rec);
        const chunks = (list: Rec[], size: number) =>
          Array.from({ length: Math.ceil(list.length / size) }, (_, i) => list.slice(i * size, i * size + size));
        const queues = { a: chunks(deviceRecords("a"), s.batchA), b: chunks(deviceRecords("b"), s.batchB) };
        const uploads: Rec[][] = [];
        let step = 0;
        while (queues.a.length > 0 || queues.b.length > 0) {
          const fromA = queues.b.length === 0 || (queues.a.length > 0 && (s.order[step++ % s.order.length] ?? true));
          uploads.push((fromA ? queues.a : queues.b).shift() as Rec[]);
        }
        // A device that lost the answer uploads a batch again, later.
        for (const r of s.repeats) if (uploads.length > 0) uploads.push(uploads[r % uploads.length] as Rec[]);
        for (const batch of uploads) {
          const answer = await sync(staff, batch);
          expect(answer.status, JSON.stringify(answer.body)).toBe(200);
          expect(answer.body.data.counts.invalid).toBe(0);
        }

        const want = expected(records.map((r) => r.rec));
        const history: string[] = [];
        const presence: Record<string, string | null> = {};
        for (const { id } of people) {
          const listed = await call(app, "GET", `/api/v1/attendance?participant_id=${id}&limit=1000`, staff);
          for (const m of listed.body.data) history.push(`${m.nonce}:${m.direction}:${m.conflict}`);
          const read = await call(app, "GET", `/api/v1/participants/${id}`, staff);
          if (want.presence[id] !== undefined || read.body.data.presence !== null) presence[id] = read.body.data.presence;
        }
        expect(history.sort()).toEqual(want.history);
        expect(presence).toEqual(want.presence);
      }),
      { seed: 4141, numRuns: 12, endOnFailure: true },
    );
  }, 240_000);
});

describe("GET /instances/{id}/roster", () => {
  it("gives a device its participants, presence and pickups' names, never their phones", async () => {
    const child = await newParticipant();
    const nan = await addContact(child, {
      name: "Nan Roster",
      authorised_pickup: true,
      phone: "+44 20 7946 0958",
      email: "nan@example.test",
    });
    await addContact(child, { name: "Not A Pickup", authorised_pickup: false });
    const roster = await call(app, "GET", `/api/v1/instances/${instanceId}/roster`, admin);
    expect(roster.status, JSON.stringify(roster.body)).toBe(200);
    expect(roster.body.data.cursor).toMatch(/^[0-9]+\.0$/);
    const entry = roster.body.data.participants.find((p: { id: string }) => p.id === child);
    expect(entry).toMatchObject({ first_name: "Sam", surname: "Sync", presence: null });
    expect(entry.authorised_pickups).toEqual([{ id: nan, name: "Nan Roster" }]);
    expect(JSON.stringify(roster.body)).not.toContain("7946");
    expect(JSON.stringify(roster.body)).not.toContain("nan@example.test");

    // A write key without the attendance scope and without care access reads the roster, not the names.
    const plain = await call(app, "GET", `/api/v1/instances/${instanceId}/roster`, staff);
    expect(plain.status).toBe(200);
    expect(plain.body.data.pickups_visible).toBe(false);
    expect(plain.body.data.participants.find((p: { id: string }) => p.id === child).authorised_pickups).toBeNull();
    expect(JSON.stringify(plain.body)).not.toContain("Nan Roster");

    const other = await newTenant(t().db);
    expect((await call(app, "GET", `/api/v1/instances/${instanceId}/roster`, { key: other.admin.key })).status).toBe(404);
  });

  it("reads the instance's pickups once, not once per participant", async () => {
    // Flattened into the participants' subquery, private.instance_pickups ran once per child, each
    // aggregating every pickup of the instance: a roster of 2,000 outran the statement timeout.
    await newParticipant();
    await newParticipant();
    const calls = await t().db.asOwner(async (sql) => {
      await sql.query("set local track_functions = 'all'");
      const roster = (await instanceRoster(sql, instanceId)) as { participants: unknown[] };
      expect(roster.participants.length).toBeGreaterThanOrEqual(2);
      return sql.one<{ calls: number }>(
        `select calls::int from pg_stat_xact_user_functions where schemaname = 'private' and funcname = 'instance_pickups'`,
      );
    });
    expect(calls?.calls).toBe(1);
  });
});
