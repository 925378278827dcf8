import { beforeAll, describe, expect, it } from "vitest";
import { useTestDatabase } from "./support/database.ts";
import { call, newTenant, type TestApp, type TestTenant, testApp } from "./support/fixtures.ts";
import { client } from "./support/structure-api.ts";

/**
 * Issue 31, point 2: rooms read and list with their occupancy and free
 * places, filter and sort on them; blocks carry their rooms' totals; ETags
 * follow the occupancy.
 */

const t = useTestDatabase();
let app: TestApp;
let tenant: TestTenant;
let api: ReturnType<typeof client>;

beforeAll(async () => {
  app = testApp(t().db);
  tenant = await newTenant(t().db);
  api = client(app, tenant.admin.key);
});

const ROOMS = "/api/v1/rooms";
const BLOCKS = "/api/v1/blocks";
const PARTICIPANTS = "/api/v1/participants";

let people = 0;
async function place(instance: string, room: string): Promise<string> {
  const res = await api.post(PARTICIPANTS, {
    user_id: `o-${++people}`,
    instance_id: instance,
    first_name: "A",
    surname: "B",
    room_id: room,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data.id;
}

/** An instance with one block and rooms of these capacities. */
async function camp(capacities: Array<number | null>) {
  const instance = (await api.create("instances", { name: "Camp" })).id;
  const block = (await api.create("blocks", { name: "North", instance_id: instance })).id;
  const rooms: string[] = [];
  for (const [i, capacity] of capacities.entries()) {
    rooms.push((await api.create("rooms", { room_number: `${i + 1}`, instance_id: instance, block_id: block, capacity })).id);
  }
  return { instance, block, rooms };
}

describe("room occupancy", () => {
  it("comes with every read and write of a room, and follows the participants", async () => {
    const { instance, rooms } = await camp([3, null]);
    const [small, open] = rooms as [string, string];
    expect((await api.get(`${ROOMS}/${small}`)).body.data).toMatchObject({ capacity: 3, occupancy: 0, available: 3 });
    const first = await place(instance, small);
    await place(instance, small);
    await place(instance, open);
    expect((await api.get(`${ROOMS}/${small}`)).body.data).toMatchObject({ occupancy: 2, available: 1 });
    expect((await api.get(`${ROOMS}/${open}`)).body.data).toMatchObject({ capacity: null, occupancy: 1, available: null });
    expect((await api.patch(`${ROOMS}/${small}`, { name: "Lakeview" })).body.data).toMatchObject({ occupancy: 2, available: 1 });
    await api.delete(`${PARTICIPANTS}/${first}`);
    const listed = (await api.get(`${ROOMS}?instance_id=${instance}&sort=room_number`)).body.data;
    expect(listed.map((r: { occupancy: number; available: number | null }) => [r.occupancy, r.available])).toEqual([
      [1, 2],
      [1, null],
    ]);
  });

  it("shows an overfilled room (an admin's override) with available 0", async () => {
    const { instance, rooms } = await camp([1]);
    const room = rooms[0] as string;
    await place(instance, room);
    const over = await api.post(`${PARTICIPANTS}?override_capacity=true`, {
      user_id: `o-${++people}`,
      instance_id: instance,
      first_name: "A",
      surname: "B",
      room_id: room,
    });
    expect(over.status).toBe(201);
    expect((await api.get(`${ROOMS}/${room}`)).body.data).toMatchObject({ capacity: 1, occupancy: 2, available: 0 });
  });

  it("filters on available_min and sorts by available and occupancy", async () => {
    const { instance, rooms } = await camp([4, 2, 6, null]);
    const [four, two, six] = rooms as [string, string, string, string];
    await place(instance, four);
    await place(instance, six);
    await place(instance, six);
    const numbers = async (query: string) => {
      const res = await api.get(`${ROOMS}?instance_id=${instance}&${query}`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return { numbers: res.body.data.map((r: { room_number: string }) => r.room_number), total: res.body.meta.total };
    };
    // Free places: 1 → 3, 2 → 2, 3 → 4, 4 → no limit (null).
    expect(await numbers("available_min=3&sort=room_number")).toEqual({ numbers: ["1", "3"], total: 2 });
    expect(await numbers("available_min=0&sort=-available")).toEqual({ numbers: ["3", "1", "2"], total: 3 });
    expect(await numbers("sort=available")).toEqual({ numbers: ["2", "1", "3", "4"], total: 4 });
    expect(await numbers("sort=-occupancy,room_number")).toEqual({ numbers: ["3", "1", "2", "4"], total: 4 });
    expect(await numbers("available_min=5")).toEqual({ numbers: [], total: 0 });
    expect(two).toBeDefined();
    for (const bad of ["-1", "x", "1.5", "3000000000"]) {
      const res = await api.get(`${ROOMS}?available_min=${bad}`);
      expect(res.status).toBe(400);
      expect(res.body.error.details).toEqual([expect.objectContaining({ field: "available_min" })]);
    }
  });

  it("changes a room's ETag when its occupancy changes, while If-Match still guards the room's own fields", async () => {
    const { instance, rooms } = await camp([5]);
    const room = rooms[0] as string;
    const url = `${ROOMS}/${room}`;
    const etag = (await api.get(url)).headers.get("etag") as string;
    const unchanged = await call(app, "GET", url, { key: tenant.admin.key, headers: { "If-None-Match": etag } });
    expect(unchanged.status).toBe(304);
    await place(instance, room);
    const after = await call(app, "GET", url, { key: tenant.admin.key, headers: { "If-None-Match": etag } });
    expect(after.status).toBe(200);
    expect(after.headers.get("etag")).not.toBe(etag);
    // The room's own fields did not change: an edit with the older ETag is no lost update.
    const edit = await call(app, "PATCH", url, {
      key: tenant.admin.key,
      body: { name: "Lakeview" },
      headers: { "If-Match": etag },
    });
    expect(edit.status, JSON.stringify(edit.body)).toBe(200);
    const stale = await call(app, "PATCH", url, {
      key: tenant.admin.key,
      body: { name: "Pines" },
      headers: { "If-Match": etag },
    });
    expect(stale.status).toBe(412);
  });
});

describe("block totals", () => {
  it("sum the rooms' capacity, occupancy and free places; null capacity when a room has no limit; 0 without rooms", async () => {
    const { instance, block, rooms } = await camp([2, 3]);
    const [two, three] = rooms as [string, string];
    expect((await api.get(`${BLOCKS}/${block}`)).body.data).toMatchObject({ capacity: 5, occupancy: 0, available: 5 });
    await place(instance, two);
    await place(instance, three);
    await place(instance, three);
    expect((await api.get(`${BLOCKS}/${block}`)).body.data).toMatchObject({ capacity: 5, occupancy: 3, available: 2 });
    // Someone in the block without a room is not in its rooms' occupancy.
    const roomless = await api.post(PARTICIPANTS, {
      user_id: `o-${++people}`,
      instance_id: instance,
      first_name: "A",
      surname: "B",
      block_id: block,
    });
    expect(roomless.status).toBe(201);
    expect((await api.get(`${BLOCKS}?instance_id=${instance}`)).body.data[0]).toMatchObject({ occupancy: 3, available: 2 });
    await api.create("rooms", { room_number: "open", instance_id: instance, block_id: block });
    expect((await api.get(`${BLOCKS}/${block}`)).body.data).toMatchObject({ capacity: null, occupancy: 3, available: null });
    const empty = (await api.create("blocks", { name: "Empty", instance_id: instance })) as Record<string, unknown>;
    expect(empty).toMatchObject({ capacity: 0, occupancy: 0, available: 0 });
  });

  it("change a block's ETag when its totals change, and sort by them", async () => {
    const { instance, block, rooms } = await camp([4]);
    const other = (await api.create("blocks", { name: "South", instance_id: instance })).id;
    await api.create("rooms", { room_number: "S1", instance_id: instance, block_id: other, capacity: 1 });
    const etag = (await api.get(`${BLOCKS}/${block}`)).headers.get("etag");
    await place(instance, rooms[0] as string);
    expect((await api.get(`${BLOCKS}/${block}`)).headers.get("etag")).not.toBe(etag);
    const sorted = (await api.get(`${BLOCKS}?instance_id=${instance}&sort=-available`)).body.data.map(
      (b: { name: string }) => b.name,
    );
    expect(sorted).toEqual(["North", "South"]);
  });

  it("accept the totals back in a body and ignore them", async () => {
    const { block } = await camp([2]);
    const read = (await api.get(`${BLOCKS}/${block}`)).body.data;
    const res = await api.put(`${BLOCKS}/${block}`, { ...read, description: "By the lake", capacity: 99 });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toMatchObject({ description: "By the lake", capacity: 2 });
  });
});
