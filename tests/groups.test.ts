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

const SUPERGROUPS = "/api/v1/groups/supergroups";
const SUBGROUPS = "/api/v1/groups/subgroups";
const newInstance = async (fields: Record<string, unknown> = {}) =>
  (await api.create("instances", { name: "Camp", ...fields })).id;
const newSupergroup = async (instance: string, name = "Eagles") =>
  (await api.create("supergroups", { name, instance_id: instance })).id;

describe("POST /api/v1/groups/supergroups", () => {
  it("creates a supergroup with type supergroup and notifications on by default", async () => {
    const instance = await newInstance();
    const res = await api.post(SUPERGROUPS, { name: " Eagles ", instance_id: instance });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      success: true,
      data: {
        id: expect.any(String),
        name: "Eagles",
        instance_id: instance,
        description: null,
        type: "supergroup",
        purpose: null,
        notifications: true,
        created_at: expect.any(String),
        updated_at: expect.any(String),
      },
    });
  });

  it("stores every optional field that is sent and refuses unknown ones naming them", async () => {
    const instance = await newInstance();
    const body = { name: "Owls", instance_id: instance, description: "d", type: "house", purpose: "p", notifications: false };
    const refused = await api.post(SUPERGROUPS, { ...body, tenant_id: MISSING_ID, extra: 1 });
    expect(refused.status).toBe(400);
    expect(refused.body.error.details.map((d: { field: string }) => d.field)).toEqual(["tenant_id", "extra"]);
    const res = await api.post(SUPERGROUPS, body);
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject(body);
    expect(res.body.data).not.toHaveProperty("tenant_id");
  });

  it.each([
    ["a missing name", { name: undefined }, "name"],
    ["a blank name", { name: " " }, "name"],
    ["a missing instance_id", { instance_id: undefined }, "instance_id"],
    ["a malformed instance_id", { instance_id: "camp-1" }, "instance_id"],
    ["notifications that are not a boolean", { notifications: "yes" }, "notifications"],
    ["a blank type", { type: "" }, "type"],
    ["a purpose over 2,000 characters", { purpose: "p".repeat(2001) }, "purpose"],
  ])("refuses %s with 400 naming the field", async (_, change, field) => {
    const res = await api.post(SUPERGROUPS, { name: "G", instance_id: MISSING_ID, ...change });
    expect(res.status).toBe(400);
    expect(res.body.error.details).toEqual(expect.arrayContaining([expect.objectContaining({ field })]));
  });

  it.each([
    ["does not exist", async () => MISSING_ID],
    [
      "was deleted",
      async () => {
        const id = await newInstance();
        await api.delete(`/api/v1/instances/${id}`);
        return id;
      },
    ],
  ])("refuses an instance that %s with 400 naming instance_id", async (_, instanceId) => {
    const res = await api.post(SUPERGROUPS, { name: "G", instance_id: await instanceId() });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: "VALIDATION_ERROR", details: [{ field: "instance_id" }] });
  });

  it("refuses a name already used in the instance, whatever its case and spaces, with 409", async () => {
    const instance = await newInstance();
    await newSupergroup(instance, "Eagles");
    const res = await api.post(SUPERGROUPS, { name: "  eAGLES ", instance_id: instance });
    expect(res.status).toBe(409);
    expect(res.body.error).toMatchObject({ code: "CONFLICT", details: [{ field: "name" }] });
  });

  it("allows the same name in another instance, and again after the first is deleted", async () => {
    const [one, two] = [await newInstance(), await newInstance()];
    const first = await newSupergroup(one, "Eagles");
    expect((await api.post(SUPERGROUPS, { name: "Eagles", instance_id: two })).status).toBe(201);
    expect((await api.delete(`${SUPERGROUPS}/${first}`)).status).toBe(200);
    expect((await api.post(SUPERGROUPS, { name: "Eagles", instance_id: one })).status).toBe(201);
  });
});

describe("GET, PUT, PATCH, DELETE /api/v1/groups/supergroups/{id}", () => {
  it("gets the supergroup", async () => {
    const created = await api.create("supergroups", { name: "Hawks", instance_id: await newInstance() });
    const res = await api.get(`${SUPERGROUPS}/${created.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, data: created });
  });

  it.each([
    ["GET", undefined],
    ["PUT", { name: "x" }],
    ["PATCH", { name: "x" }],
    ["DELETE", undefined],
  ])("%s answers 404 for an id that is not a uuid, an unknown id and a deleted supergroup", async (method, body) => {
    const deleted = await newSupergroup(await newInstance());
    await api.delete(`${SUPERGROUPS}/${deleted}`);
    for (const id of ["42", MISSING_ID, deleted]) {
      const res = await api.send(method, `${SUPERGROUPS}/${id}`, body);
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe("NOT_FOUND");
    }
  });

  it.each(["PUT", "PATCH"])("%s changes only the fields sent", async (method) => {
    const instance = await newInstance();
    const created = await api.create("supergroups", { name: "Hawks", instance_id: instance, purpose: "fly" });
    const res = await api.send(method, `${SUPERGROUPS}/${created.id}`, { notifications: false, description: "birds" });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ name: "Hawks", purpose: "fly", notifications: false, description: "birds" });
  });

  it("refuses an update with no updatable field with 400", async () => {
    const id = await newSupergroup(await newInstance());
    const res = await api.patch(`${SUPERGROUPS}/${id}`, { id: MISSING_ID, updated_at: "2000-01-01T00:00:00Z" });
    expect(res.status).toBe(400);
    expect(res.body.error.details).toEqual([expect.objectContaining({ field: "body" })]);
  });

  it("accepts its own instance_id but refuses to move to another instance with 400 naming instance_id", async () => {
    const [instance, other] = [await newInstance(), await newInstance()];
    const id = await newSupergroup(instance);
    expect((await api.patch(`${SUPERGROUPS}/${id}`, { instance_id: instance, name: "Same" })).status).toBe(200);
    const res = await api.patch(`${SUPERGROUPS}/${id}`, { instance_id: other });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({
      code: "VALIDATION_ERROR",
      details: [{ field: "instance_id", issue: expect.stringMatching(/cannot be changed/) }],
    });
  });

  it("refuses a rename onto a name used in the instance with 409", async () => {
    const instance = await newInstance();
    await newSupergroup(instance, "Taken");
    const id = await newSupergroup(instance, "Free");
    const res = await api.put(`${SUPERGROUPS}/${id}`, { name: "taken" });
    expect(res.status).toBe(409);
    expect(res.body.error.details).toMatchObject([{ field: "name" }]);
  });

  it.each([
    ["a live subgroup", "subgroups"],
    ["a live participant", "participants"],
  ])("refuses a delete with 409 while %s refers to it, and deletes once it is gone", async (_, kind) => {
    const instance = await newInstance();
    const id = await newSupergroup(instance);
    const child =
      kind === "subgroups"
        ? (await api.create("subgroups", { name: "Nest", instance_id: instance, parent_supergroup_id: id })).id
        : await addParticipant(t(), tenant.tenantId, { instance, supergroup: id });
    const res = await api.delete(`${SUPERGROUPS}/${id}`);
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe("CONFLICT");
    await t().admin(`update public.${kind} set deleted_at = now() where id = $1`, [child]);
    expect((await api.delete(`${SUPERGROUPS}/${id}`)).status).toBe(200);
  });
});

describe("subgroups", () => {
  it("are created with type subgroup and notifications on by default", async () => {
    const instance = await newInstance();
    const parent = await newSupergroup(instance);
    const res = await api.post(SUBGROUPS, { name: "Nest", instance_id: instance, parent_supergroup_id: parent });
    expect(res.status).toBe(201);
    expect(res.body.data).toEqual({
      id: expect.any(String),
      name: "Nest",
      instance_id: instance,
      parent_supergroup_id: parent,
      description: null,
      type: "subgroup",
      purpose: null,
      notifications: true,
      supergroup_name: expect.any(String),
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
  });

  it.each([
    ["missing", undefined, "is required"],
    ["malformed", "parent", "must be a uuid"],
  ])("refuse a %s parent_supergroup_id with 400", async (_, parent, issue) => {
    const res = await api.post(SUBGROUPS, { name: "Nest", instance_id: MISSING_ID, parent_supergroup_id: parent });
    expect(res.status).toBe(400);
    expect(res.body.error.details).toEqual(expect.arrayContaining([{ field: "parent_supergroup_id", issue }]));
  });

  it("refuse a parent that does not exist, was deleted, or lies in another instance with 400 naming parent_supergroup_id", async () => {
    const [instance, other] = [await newInstance(), await newInstance()];
    const deleted = await newSupergroup(instance, "Gone");
    await api.delete(`${SUPERGROUPS}/${deleted}`);
    const elsewhere = await newSupergroup(other);
    for (const parent of [MISSING_ID, deleted, elsewhere]) {
      const res = await api.post(SUBGROUPS, { name: "Nest", instance_id: instance, parent_supergroup_id: parent });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: "VALIDATION_ERROR", details: [{ field: "parent_supergroup_id" }] });
    }
  });

  it("have names unique per supergroup, whatever the case: 409 under the same parent, 201 under another", async () => {
    const instance = await newInstance();
    const [one, two] = [await newSupergroup(instance, "A"), await newSupergroup(instance, "B")];
    await api.create("subgroups", { name: "Nest", instance_id: instance, parent_supergroup_id: one });
    const again = await api.post(SUBGROUPS, { name: "NEST ", instance_id: instance, parent_supergroup_id: one });
    expect(again.status).toBe(409);
    expect(again.body.error.details).toMatchObject([{ field: "name" }]);
    expect((await api.post(SUBGROUPS, { name: "Nest", instance_id: instance, parent_supergroup_id: two })).status).toBe(201);
  });

  it("can move to another supergroup of the instance while no participant is in them", async () => {
    const instance = await newInstance();
    const [one, two] = [await newSupergroup(instance, "A"), await newSupergroup(instance, "B")];
    const sub = await api.create("subgroups", { name: "Nest", instance_id: instance, parent_supergroup_id: one });
    const res = await api.patch(`${SUBGROUPS}/${sub.id}`, { parent_supergroup_id: two });
    expect(res.status).toBe(200);
    expect(res.body.data.parent_supergroup_id).toBe(two);
  });

  it("refuse a move to a supergroup of another instance or a missing one with 400", async () => {
    const [instance, other] = [await newInstance(), await newInstance()];
    const parent = await newSupergroup(instance);
    const sub = await api.create("subgroups", { name: "Nest", instance_id: instance, parent_supergroup_id: parent });
    for (const target of [await newSupergroup(other), MISSING_ID]) {
      const res = await api.patch(`${SUBGROUPS}/${sub.id}`, { parent_supergroup_id: target });
      expect(res.status).toBe(400);
      expect(res.body.error.details).toMatchObject([{ field: "parent_supergroup_id" }]);
    }
  });

  it.each([
    ["a live participant", false],
    ["a deleted participant", true],
  ])("refuse a move with 409 naming parent_supergroup_id while %s is in them", async (_, deleted) => {
    const instance = await newInstance();
    const [one, two] = [await newSupergroup(instance, "A"), await newSupergroup(instance, "B")];
    const sub = await api.create("subgroups", { name: "Nest", instance_id: instance, parent_supergroup_id: one });
    const participant = await addParticipant(t(), tenant.tenantId, { instance, supergroup: one, subgroup: sub.id });
    if (deleted) await t().admin("update public.participants set deleted_at = now() where id = $1", [participant]);
    const res = await api.put(`${SUBGROUPS}/${sub.id}`, { parent_supergroup_id: two });
    expect(res.status).toBe(409);
    expect(res.body.error).toMatchObject({ code: "CONFLICT", details: [{ field: "parent_supergroup_id" }] });
    expect((await api.get(`${SUBGROUPS}/${sub.id}`)).body.data.parent_supergroup_id).toBe(one);
  });

  it("refuse to move to another instance with 400 naming instance_id", async () => {
    const [instance, other] = [await newInstance(), await newInstance()];
    const sub = await api.create("subgroups", {
      name: "Nest",
      instance_id: instance,
      parent_supergroup_id: await newSupergroup(instance),
    });
    const res = await api.patch(`${SUBGROUPS}/${sub.id}`, {
      instance_id: other,
      parent_supergroup_id: await newSupergroup(other),
    });
    expect(res.status).toBe(400);
    expect(res.body.error.details).toMatchObject([{ field: "instance_id" }]);
  });

  it("are gone after a soft delete, which a live participant refuses with 409", async () => {
    const instance = await newInstance();
    const parent = await newSupergroup(instance);
    const sub = await api.create("subgroups", { name: "Nest", instance_id: instance, parent_supergroup_id: parent });
    const participant = await addParticipant(t(), tenant.tenantId, { instance, supergroup: parent, subgroup: sub.id });
    expect((await api.delete(`${SUBGROUPS}/${sub.id}`)).status).toBe(409);
    await t().admin("update public.participants set deleted_at = now() where id = $1", [participant]);
    const res = await api.delete(`${SUBGROUPS}/${sub.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, message: expect.any(String) });
    expect((await api.get(`${SUBGROUPS}/${sub.id}`)).status).toBe(404);
  });

  it("are listed by instance and by parent supergroup", async () => {
    const [instance, other] = [await newInstance(), await newInstance()];
    const [one, two] = [await newSupergroup(instance, "A"), await newSupergroup(instance, "B")];
    const a = await api.create("subgroups", { name: "a", instance_id: instance, parent_supergroup_id: one });
    const b = await api.create("subgroups", { name: "b", instance_id: instance, parent_supergroup_id: two });
    await api.create("subgroups", { name: "c", instance_id: other, parent_supergroup_id: await newSupergroup(other) });

    const byInstance = await api.get(`${SUBGROUPS}?instance_id=${instance}`);
    expect(byInstance.status).toBe(200);
    expect(byInstance.body).toEqual({ success: true, data: [a, b], meta: { total: 2, limit: 100, offset: 0, next: null } });
    const byParent = await api.get(`${SUBGROUPS}?parent_supergroup_id=${two}`);
    expect(byParent.body.data).toEqual([b]);
    const both = await api.get(`${SUBGROUPS}?instance_id=${other}&parent_supergroup_id=${two}`);
    expect(both.body).toMatchObject({ data: [], meta: { total: 0 } });
  });
});

describe("GET /api/v1/groups/supergroups", () => {
  it("lists the supergroups of one instance when instance_id is given", async () => {
    const [instance, other] = [await newInstance(), await newInstance()];
    const mine = await api.create("supergroups", { name: "Mine", instance_id: instance });
    await newSupergroup(other);
    const res = await api.get(`${SUPERGROUPS}?instance_id=${instance}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, data: [mine], meta: { total: 1, limit: 100, offset: 0, next: null } });
  });

  it("refuses a malformed instance_id filter with 400 naming it", async () => {
    const res = await api.get(`${SUPERGROUPS}?instance_id=abc`);
    expect(res.status).toBe(400);
    expect(res.body.error.details).toEqual([expect.objectContaining({ field: "instance_id" })]);
  });
});

describe("groups in an archived instance", () => {
  it("cannot be created, changed or deleted (409) until the instance is un-archived", async () => {
    const instance = await newInstance();
    const parent = await newSupergroup(instance, "A");
    const sub = await api.create("subgroups", { name: "Nest", instance_id: instance, parent_supergroup_id: parent });
    const spare = await newSupergroup(instance, "Spare");
    expect((await api.patch(`/api/v1/instances/${instance}`, { status: "archived" })).status).toBe(200);

    const attempts = [
      () => api.post(SUPERGROUPS, { name: "New", instance_id: instance }),
      () => api.patch(`${SUPERGROUPS}/${parent}`, { name: "Renamed" }),
      () => api.delete(`${SUPERGROUPS}/${spare}`),
      () => api.post(SUBGROUPS, { name: "New", instance_id: instance, parent_supergroup_id: parent }),
      () => api.put(`${SUBGROUPS}/${sub.id}`, { description: "x" }),
      () => api.delete(`${SUBGROUPS}/${sub.id}`),
    ];
    for (const attempt of attempts) {
      const res = await attempt();
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe("CONFLICT");
    }
    expect((await api.get(`${SUBGROUPS}/${sub.id}`)).status).toBe(200);

    expect((await api.patch(`/api/v1/instances/${instance}`, { status: "active" })).status).toBe(200);
    for (const attempt of attempts) expect((await attempt()).status).toBeLessThan(300);
  });
});
