import { beforeAll, describe, expect, it } from "vitest";
import { useTestDatabase } from "./support/database.ts";
import { newTenant, type TestTenant, testApp } from "./support/fixtures.ts";
import { addParticipant, client, MISSING_ID } from "./support/structure-api.ts";

const t = useTestDatabase();
let tenant: TestTenant;
let api: ReturnType<typeof client>;

beforeAll(async () => {
  tenant = await newTenant(t().db);
  api = client(testApp(t().db), tenant.admin.key);
});

const BLOCKS = "/api/v1/blocks";
const ROOMS = "/api/v1/rooms";
const newInstance = async () => (await api.create("instances", { name: "Camp" })).id;
const newBlock = async (instance: string, name = "North") => (await api.create("blocks", { name, instance_id: instance })).id;
const newRoom = async (instance: string, block: string, room_number = "101") =>
  (await api.create("rooms", { room_number, instance_id: instance, block_id: block })).id;

describe("blocks", () => {
  it("are created with 201 and every field", async () => {
    const instance = await newInstance();
    const res = await api.post(BLOCKS, { name: " North ", instance_id: instance, description: "By the lake" });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      success: true,
      data: {
        id: expect.any(String),
        name: "North",
        instance_id: instance,
        description: "By the lake",
        capacity: 0,
        occupancy: 0,
        available: 0,
        created_at: expect.any(String),
        updated_at: expect.any(String),
      },
    });
  });

  it.each([
    ["a missing name", { name: undefined }, "name"],
    ["a blank name", { name: "  " }, "name"],
    ["a missing instance_id", { instance_id: undefined }, "instance_id"],
    ["a malformed instance_id", { instance_id: 7 }, "instance_id"],
    ["a description over 2,000 characters", { description: "d".repeat(2001) }, "description"],
  ])("refuse %s with 400 naming the field", async (_, change, field) => {
    const res = await api.post(BLOCKS, { name: "B", instance_id: MISSING_ID, ...change });
    expect(res.status).toBe(400);
    expect(res.body.error.details).toEqual(expect.arrayContaining([expect.objectContaining({ field })]));
  });

  it("refuse an instance that does not exist with 400 naming instance_id", async () => {
    const res = await api.post(BLOCKS, { name: "B", instance_id: MISSING_ID });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: "VALIDATION_ERROR", details: [{ field: "instance_id" }] });
  });

  it("refuse a name already used in the instance with 409 CONFLICT, whatever its case", async () => {
    const instance = await newInstance();
    await newBlock(instance, "North");
    const res = await api.post(BLOCKS, { name: "north", instance_id: instance });
    expect(res.status).toBe(409);
    expect(res.body.error).toMatchObject({ code: "CONFLICT", details: [{ field: "name" }] });
    expect((await api.post(BLOCKS, { name: "North", instance_id: await newInstance() })).status).toBe(201);
  });

  it("are read, updated by PUT and PATCH, and deleted softly", async () => {
    const instance = await newInstance();
    const id = await newBlock(instance);
    expect((await api.get(`${BLOCKS}/${id}`)).body.data).toMatchObject({ id, name: "North" });
    expect((await api.put(`${BLOCKS}/${id}`, { description: "d" })).body.data).toMatchObject({ name: "North", description: "d" });
    expect((await api.patch(`${BLOCKS}/${id}`, { name: "South" })).body.data).toMatchObject({ name: "South", description: "d" });
    const res = await api.delete(`${BLOCKS}/${id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, message: expect.any(String) });
    expect((await api.get(`${BLOCKS}/${id}`)).status).toBe(404);
    const stored = await t().admin("select deleted_at from public.blocks where id = $1", [id]);
    expect(stored.rows[0].deleted_at).toBeInstanceOf(Date);
  });

  it.each(["GET", "PUT", "PATCH", "DELETE"])("%s answers 404 for an id that is not a uuid or is unknown", async (method) => {
    for (const id of ["north", MISSING_ID]) {
      const res = await api.send(method, `${BLOCKS}/${id}`, method.startsWith("P") ? { name: "x" } : undefined);
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe("NOT_FOUND");
    }
  });

  it("refuse an update with nothing to change (400) and a move to another instance (400 naming instance_id)", async () => {
    const id = await newBlock(await newInstance());
    const empty = await api.patch(`${BLOCKS}/${id}`, { created_at: "2000-01-01T00:00:00Z" });
    expect(empty.status).toBe(400);
    expect(empty.body.error.details).toEqual([expect.objectContaining({ field: "body" })]);
    const move = await api.patch(`${BLOCKS}/${id}`, { instance_id: await newInstance() });
    expect(move.status).toBe(400);
    expect(move.body.error.details).toMatchObject([{ field: "instance_id" }]);
  });

  it.each([
    ["a live room", "rooms"],
    ["a live participant", "participants"],
  ])("refuse a delete with 409 while %s refers to them", async (_, kind) => {
    const instance = await newInstance();
    const block = await newBlock(instance);
    const child =
      kind === "rooms" ? await newRoom(instance, block) : await addParticipant(t(), tenant.tenantId, { instance, block });
    const res = await api.delete(`${BLOCKS}/${block}`);
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe("CONFLICT");
    await t().admin(`update public.${kind} set deleted_at = now() where id = $1`, [child]);
    expect((await api.delete(`${BLOCKS}/${block}`)).status).toBe(200);
  });

  it("are listed by instance", async () => {
    const [instance, other] = [await newInstance(), await newInstance()];
    const a = await api.create("blocks", { name: "A", instance_id: instance });
    await newBlock(other);
    const res = await api.get(`${BLOCKS}?instance_id=${instance}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, data: [a], meta: { total: 1, limit: 100, offset: 0, next: null } });
  });
});

describe("rooms", () => {
  it("are created with 201 and every field; name and capacity default to null", async () => {
    const instance = await newInstance();
    const block = await newBlock(instance);
    const res = await api.post(ROOMS, { room_number: " 101 ", instance_id: instance, block_id: block });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      success: true,
      data: {
        id: expect.any(String),
        room_number: "101",
        block_id: block,
        instance_id: instance,
        name: null,
        capacity: null,
        block_name: "North",
        occupancy: 0,
        available: null,
        created_at: expect.any(String),
        updated_at: expect.any(String),
      },
    });
    const full = await api.post(ROOMS, {
      room_number: "102",
      instance_id: instance,
      block_id: block,
      name: "Lakeview",
      capacity: 0,
    });
    expect(full.status).toBe(201);
    expect(full.body.data).toMatchObject({ name: "Lakeview", capacity: 0 });
  });

  it.each([
    ["a missing room_number", { room_number: undefined }, "room_number"],
    ["a missing block_id", { block_id: undefined }, "block_id"],
    ["a malformed block_id", { block_id: "B1" }, "block_id"],
    ["a missing instance_id", { instance_id: undefined }, "instance_id"],
    ["a negative capacity", { capacity: -1 }, "capacity"],
    ["a fractional capacity", { capacity: 2.5 }, "capacity"],
    ["a capacity given as text", { capacity: "4" }, "capacity"],
    ["a capacity too large to store", { capacity: 2 ** 31 }, "capacity"],
  ])("refuse %s with 400 naming the field", async (_, change, field) => {
    const res = await api.post(ROOMS, { room_number: "1", instance_id: MISSING_ID, block_id: MISSING_ID, ...change });
    expect(res.status).toBe(400);
    expect(res.body.error.details).toEqual(expect.arrayContaining([expect.objectContaining({ field })]));
  });

  it("refuse a block that does not exist, was deleted or lies in another instance with 400 naming block_id", async () => {
    const [instance, other] = [await newInstance(), await newInstance()];
    const deleted = await newBlock(instance, "Gone");
    await api.delete(`${BLOCKS}/${deleted}`);
    for (const block of [MISSING_ID, deleted, await newBlock(other)]) {
      const res = await api.post(ROOMS, { room_number: "1", instance_id: instance, block_id: block });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: "VALIDATION_ERROR", details: [{ field: "block_id" }] });
    }
  });

  it("have room numbers unique per block: 409 in the same block, 201 in another", async () => {
    const instance = await newInstance();
    const [north, south] = [await newBlock(instance, "N"), await newBlock(instance, "S")];
    await newRoom(instance, north, "A1");
    const res = await api.post(ROOMS, { room_number: "a1", instance_id: instance, block_id: north });
    expect(res.status).toBe(409);
    expect(res.body.error.details).toMatchObject([{ field: "room_number" }]);
    expect((await api.post(ROOMS, { room_number: "A1", instance_id: instance, block_id: south })).status).toBe(201);
  });

  it("are read, updated by PUT and PATCH (capacity cleared with null) and deleted softly", async () => {
    const instance = await newInstance();
    const block = await newBlock(instance);
    const id = await newRoom(instance, block);
    expect((await api.put(`${ROOMS}/${id}`, { capacity: 4 })).body.data).toMatchObject({ room_number: "101", capacity: 4 });
    expect((await api.patch(`${ROOMS}/${id}`, { capacity: null, name: "Loft" })).body.data).toMatchObject({
      capacity: null,
      name: "Loft",
    });
    expect((await api.patch(`${ROOMS}/${id}`, { capacity: -3 })).status).toBe(400);
    expect((await api.get(`${ROOMS}/${id}`)).body.data).toMatchObject({ id, name: "Loft" });
    expect((await api.delete(`${ROOMS}/${id}`)).status).toBe(200);
    expect((await api.get(`${ROOMS}/${id}`)).status).toBe(404);
    expect((await api.delete(`${ROOMS}/${id}`)).status).toBe(404);
  });

  it("can move to another block of the instance while no participant is in them", async () => {
    const instance = await newInstance();
    const [north, south] = [await newBlock(instance, "N"), await newBlock(instance, "S")];
    const id = await newRoom(instance, north);
    const res = await api.patch(`${ROOMS}/${id}`, { block_id: south });
    expect(res.status).toBe(200);
    expect(res.body.data.block_id).toBe(south);
  });

  it("refuse a move into a block of another instance with 400 naming block_id", async () => {
    const [instance, other] = [await newInstance(), await newInstance()];
    const id = await newRoom(instance, await newBlock(instance));
    const res = await api.patch(`${ROOMS}/${id}`, { block_id: await newBlock(other) });
    expect(res.status).toBe(400);
    expect(res.body.error.details).toMatchObject([{ field: "block_id" }]);
  });

  it("refuse a move to another instance with 400 naming instance_id", async () => {
    const [instance, other] = [await newInstance(), await newInstance()];
    const id = await newRoom(instance, await newBlock(instance));
    const res = await api.patch(`${ROOMS}/${id}`, { instance_id: other, block_id: await newBlock(other) });
    expect(res.status).toBe(400);
    expect(res.body.error.details).toMatchObject([{ field: "instance_id" }]);
  });

  it.each([
    ["a live participant", false],
    ["a deleted participant", true],
  ])("refuse a block change with 409 naming block_id while %s is in them", async (_, deleted) => {
    const instance = await newInstance();
    const [north, south] = [await newBlock(instance, "N"), await newBlock(instance, "S")];
    const room = await newRoom(instance, north);
    const participant = await addParticipant(t(), tenant.tenantId, { instance, block: north, room });
    if (deleted) await t().admin("update public.participants set deleted_at = now() where id = $1", [participant]);
    const res = await api.patch(`${ROOMS}/${room}`, { block_id: south });
    expect(res.status).toBe(409);
    expect(res.body.error).toMatchObject({ code: "CONFLICT", details: [{ field: "block_id" }] });
  });

  it("refuse a delete with 409 while a live participant is in them", async () => {
    const instance = await newInstance();
    const block = await newBlock(instance);
    const room = await newRoom(instance, block);
    await addParticipant(t(), tenant.tenantId, { instance, block, room });
    const res = await api.delete(`${ROOMS}/${room}`);
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe("CONFLICT");
  });

  it("are listed by instance, by block, and by both", async () => {
    const [instance, other] = [await newInstance(), await newInstance()];
    const [north, south] = [await newBlock(instance, "N"), await newBlock(instance, "S")];
    const a = await api.create("rooms", { room_number: "1", instance_id: instance, block_id: north });
    const b = await api.create("rooms", { room_number: "2", instance_id: instance, block_id: south });
    await newRoom(other, await newBlock(other));
    expect((await api.get(`${ROOMS}?instance_id=${instance}`)).body).toEqual({
      success: true,
      data: [a, b],
      meta: { total: 2, limit: 100, offset: 0, next: null },
    });
    expect((await api.get(`${ROOMS}?block_id=${south}`)).body.data).toEqual([b]);
    expect((await api.get(`${ROOMS}?instance_id=${instance}&block_id=${north}`)).body.data).toEqual([a]);
    expect((await api.get(`${ROOMS}?instance_id=${other}&block_id=${north}`)).body.meta.total).toBe(0);
    expect((await api.get(`${ROOMS}?block_id=nope`)).status).toBe(400);
  });
});

describe("blocks and rooms in an archived instance", () => {
  it("cannot be created, changed or deleted (409) until the instance is un-archived", async () => {
    const instance = await newInstance();
    const block = await newBlock(instance, "N");
    const spare = await newBlock(instance, "Spare");
    const room = await newRoom(instance, block);
    expect((await api.patch(`/api/v1/instances/${instance}`, { status: "archived" })).status).toBe(200);

    const attempts = [
      () => api.post(BLOCKS, { name: "New", instance_id: instance }),
      () => api.put(`${BLOCKS}/${block}`, { description: "x" }),
      () => api.delete(`${BLOCKS}/${spare}`),
      () => api.post(ROOMS, { room_number: "9", instance_id: instance, block_id: block }),
      () => api.patch(`${ROOMS}/${room}`, { capacity: 3 }),
      () => api.delete(`${ROOMS}/${room}`),
    ];
    for (const attempt of attempts) {
      const res = await attempt();
      expect(res.status).toBe(409);
      expect(res.body.error).toMatchObject({ code: "CONFLICT", details: [{ field: "instance_id" }] });
    }
    expect((await api.get(`${ROOMS}/${room}`)).body.data.capacity).toBeNull();

    expect((await api.patch(`/api/v1/instances/${instance}`, { status: "upcoming" })).status).toBe(200);
    for (const attempt of attempts) expect((await attempt()).status).toBeLessThan(300);
  });
});

describe("simultaneous creates", () => {
  it("of one block name and one room number give exactly one 201 each, the rest 409", async () => {
    const instance = await newInstance();
    const blocks = await Promise.all(Array.from({ length: 6 }, () => api.post(BLOCKS, { name: "Race", instance_id: instance })));
    expect(blocks.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);

    const block = blocks.find((r) => r.status === 201)?.body.data.id;
    const rooms = await Promise.all(
      Array.from({ length: 6 }, () => api.post(ROOMS, { room_number: "R1", instance_id: instance, block_id: block })),
    );
    expect(rooms.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);
  });

  it("of a room and a delete of its block never leave a live room in a deleted block", async () => {
    for (let round = 0; round < 5; round++) {
      const instance = await newInstance();
      const block = await newBlock(instance, `Race ${round}`);
      const [room, removal] = await Promise.all([
        api.post(ROOMS, { room_number: "1", instance_id: instance, block_id: block }),
        api.delete(`${BLOCKS}/${block}`),
      ]);
      // Either order is fine; both succeeding is not.
      expect([room.status, removal.status].sort()).toEqual(room.status === 201 ? [201, 409] : [200, 400]);
      const orphans = await t().admin(
        `select count(*)::int as n from public.rooms r join public.blocks b on b.id = r.block_id
         where r.deleted_at is null and b.deleted_at is not null`,
      );
      expect(orphans.rows[0].n).toBe(0);
    }
  });
});
