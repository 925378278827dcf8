import pg from "pg";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { fromPgError } from "../functions/db/pg-errors.ts";
import type { Sql } from "../functions/db/sql.ts";
import { createParticipant } from "../functions/participants/data.ts";
import { addBlock, addCampStructure, addRoom, type CampStructure, storedParticipant } from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { call, newTenant, type TestApp, type TestTenant, testApp } from "./support/fixtures.ts";

/**
 * Issue 3, point 3: the rules hold under concurrency because the database
 * holds them. Interleavings are forced with explicit transactions that keep
 * their locks until the test commits them.
 */

const t = useTestDatabase();
const BASE = "/api/v1/participants";

let app: TestApp;
let tenant: TestTenant;
let camp: CampStructure;
const clients: pg.Client[] = [];

beforeAll(async () => {
  app = testApp(t().db);
  tenant = await newTenant(t().db);
  camp = await addCampStructure(t(), tenant.tenantId);
});

afterEach(async () => {
  for (const client of clients.splice(0)) await client.end().catch(() => {});
});

/** A connection with an open transaction in the tenant's scope, as the API opens one. */
async function tenantTransaction(): Promise<{ client: pg.Client; sql: Sql }> {
  const client = new pg.Client({ connectionString: t().url });
  clients.push(client);
  await client.connect();
  const claims = JSON.stringify({ role: "camp_api", tenant_id: tenant.tenantId, sub: tenant.admin.userId });
  await client.query("begin; set local role camp_api");
  await client.query("select set_config('request.jwt.claims', $1, true)", [claims]);
  const sql: Sql = {
    query: async (text, values) => (await client.query(text, values)).rows,
    one: async (text, values) => (await client.query(text, values)).rows[0],
    each: () => Promise.reject(new Error("these tests read no row by row")),
  };
  return { client, sql };
}

/** Resolves once `count` sessions of this database are waiting for a lock. */
async function lockWaiters(count: number): Promise<void> {
  for (;;) {
    const { rows } = await t().admin(
      "select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'",
    );
    if (rows[0].n >= count) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const body = (user_id: string, extra: Record<string, unknown> = {}) => ({
  user_id,
  instance_id: camp.instanceId,
  first_name: "Sam",
  surname: "Same",
  ...extra,
});

describe("participants under concurrency", () => {
  it("gives exactly one 201 and one 409 to two simultaneous creates of one user_id", async () => {
    for (let round = 0; round < 5; round++) {
      const [first, second] = await Promise.all([
        call(app, "POST", BASE, { key: tenant.admin.key, body: body(`race-${round}`) }),
        call(app, "POST", BASE, { key: tenant.admin.key, body: body(`race-${round}`, { first_name: "Other" }) }),
      ]);
      expect([first.status, second.status].sort()).toEqual([201, 409]);
      const loser = first.status === 409 ? first : second;
      expect(loser.body.error).toMatchObject({ code: "CONFLICT", details: [{ field: "user_id" }] });
      const stored = await t().admin("select count(*)::int as n from public.participants where user_id = $1", [`race-${round}`]);
      expect(stored.rows[0].n).toBe(1);
    }
  });

  it("makes a create wait for an uncommitted create of the same user_id, then answers 409", async () => {
    const held = await tenantTransaction();
    await createParticipant(held.sql, body("held-1"));
    const pending = call(app, "POST", BASE, { key: tenant.admin.key, body: body("held-1") });
    await lockWaiters(1);
    await held.client.query("commit");
    const res = await pending;
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe("CONFLICT");
  });

  it("lets the waiting create through when the uncommitted one rolls back", async () => {
    const held = await tenantTransaction();
    await createParticipant(held.sql, body("held-2"));
    const pending = call(app, "POST", BASE, { key: tenant.admin.key, body: body("held-2") });
    await lockWaiters(1);
    await held.client.query("rollback");
    expect((await pending).status).toBe(201);
  });

  it("refuses a room's deletion that waited for a participant being assigned to it (409), keeping both live", async () => {
    const block = await addBlock(t(), tenant.tenantId, camp.instanceId, "East");
    const room = await addRoom(t(), tenant.tenantId, camp.instanceId, block, "E1");

    const assigning = await tenantTransaction();
    const participant = await createParticipant(assigning.sql, body("assign-first", { room_id: room }));
    const deleting = await tenantTransaction();
    const deletion = deleting.client.query("update public.rooms set deleted_at = now() where id = $1", [room]).then(
      () => undefined,
      (error: unknown) => error,
    );
    await lockWaiters(1);
    await assigning.client.query("commit");

    const error = await deletion;
    expect(error).toMatchObject({ code: "CA409" });
    expect(fromPgError(error)?.status).toBe(409);
    await deleting.client.query("rollback");

    const stored = await storedParticipant(t(), JSON.parse(participant.json).id);
    expect(stored).toMatchObject({ room_id: room, block_id: block, deleted_at: null });
    const roomRow = await t().admin("select deleted_at from public.rooms where id = $1", [room]);
    expect(roomRow.rows[0].deleted_at).toBeNull();
  });

  it("refuses an assignment that waited for the room's deletion (400 on room_id), leaving no one in the deleted room", async () => {
    const block = await addBlock(t(), tenant.tenantId, camp.instanceId, "West");
    const room = await addRoom(t(), tenant.tenantId, camp.instanceId, block, "W1");
    const created = await call(app, "POST", BASE, { key: tenant.admin.key, body: body("delete-first") });
    expect(created.status).toBe(201);

    const deleting = await tenantTransaction();
    await deleting.sql.query("update public.rooms set deleted_at = now() where id = $1", [room]);
    const assignment = call(app, "PATCH", `${BASE}/${created.body.data.id}`, { key: tenant.admin.key, body: { room_id: room } });
    const creation = call(app, "POST", BASE, { key: tenant.admin.key, body: body("delete-first-2", { room_id: room }) });
    await lockWaiters(2);
    await deleting.client.query("commit");

    for (const res of [await assignment, await creation]) {
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: "VALIDATION_ERROR", details: [{ field: "room_id" }] });
    }
    const live = await t().admin("select count(*)::int as n from public.participants where room_id = $1 and deleted_at is null", [
      room,
    ]);
    expect(live.rows[0].n).toBe(0);
    expect((await storedParticipant(t(), created.body.data.id)).room_id).toBeNull();
  });
});
