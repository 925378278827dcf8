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

const INSTANCE_FIELDS = [
  "id",
  "name",
  "description",
  "status",
  "start_date",
  "end_date",
  "location",
  "time_zone",
  "created_at",
  "updated_at",
];

describe("POST /api/v1/instances", () => {
  it("creates an instance with status upcoming by default and returns every field with 201", async () => {
    const res = await api.post("/api/v1/instances", { name: "  Summer Camp  " });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body.data).sort()).toEqual([...INSTANCE_FIELDS].sort());
    expect(res.body).toEqual({
      success: true,
      data: {
        id: expect.any(String),
        name: "Summer Camp",
        description: null,
        status: "upcoming",
        start_date: null,
        end_date: null,
        location: null,
        time_zone: "UTC",
        created_at: expect.any(String),
        updated_at: expect.any(String),
      },
    });
  });

  it("stores every optional field that is sent", async () => {
    const body = {
      name: "Winter",
      description: "Snow",
      status: "active",
      start_date: "2026-12-20",
      end_date: "2026-12-28",
      location: "Alps",
    };
    const res = await api.post("/api/v1/instances", body);
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject(body);
  });

  it("accepts and ignores the fields of the read form, so a client may send back what it read", async () => {
    const res = await api.post("/api/v1/instances", {
      name: "Camp",
      id: MISSING_ID,
      created_at: "2000-01-01T00:00:00Z",
      updated_at: "2000-01-01T00:00:00Z",
      deleted_at: "2000-01-01T00:00:00Z",
    });
    expect(res.status).toBe(201);
    expect(res.body.data.id).not.toBe(MISSING_ID);
    expect(res.body.data.created_at).not.toMatch(/^2000/);
    const stored = await t().admin("select tenant_id, deleted_at from public.instances where id = $1", [res.body.data.id]);
    expect(stored.rows[0]).toEqual({ tenant_id: tenant.tenantId, deleted_at: null });
    const again = await api.put(`/api/v1/instances/${res.body.data.id}`, { ...res.body.data, location: "Lakeside" });
    expect(again.status).toBe(200);
    expect(again.body.data.location).toBe("Lakeside");
  });

  it("refuses a field it does not know with 400 naming it, and writes nothing", async () => {
    const res = await api.post("/api/v1/instances", { name: "Typo camp", start_data: "2027-07-01", tenant_id: MISSING_ID });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("VALIDATION_ERROR");
    expect(res.body.error.details).toEqual([
      { field: "start_data", issue: "is not a field of this operation" },
      { field: "tenant_id", issue: "is not a field of this operation" },
    ]);
    const stored = await t().admin("select count(*)::int as n from public.instances where name = 'Typo camp'");
    expect(stored.rows[0].n).toBe(0);
  });

  it.each([
    ["a missing name", {}, "name"],
    ["a blank name", { name: "   " }, "name"],
    ["a name over 200 characters", { name: "x".repeat(201) }, "name"],
    ["a description over 2,000 characters", { name: "C", description: "x".repeat(2001) }, "description"],
    ["an unknown status", { name: "C", status: "cancelled" }, "status"],
    ["a date that is not YYYY-MM-DD", { name: "C", start_date: "01/07/2026" }, "start_date"],
    ["a date that is not in the calendar", { name: "C", end_date: "2026-02-30" }, "end_date"],
    ["an end date before the start date", { name: "C", start_date: "2026-07-10", end_date: "2026-07-09" }, "end_date"],
    ["a name that is not a string", { name: 42 }, "name"],
  ])("refuses %s with 400 naming the field", async (_, body, field) => {
    const res = await api.post("/api/v1/instances", body);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("VALIDATION_ERROR");
    expect(res.body.error.details).toEqual(expect.arrayContaining([expect.objectContaining({ field })]));
  });

  it("accepts an end date equal to the start date", async () => {
    const res = await api.post("/api/v1/instances", { name: "Day", start_date: "2026-07-10", end_date: "2026-07-10" });
    expect(res.status).toBe(201);
  });
});

describe("GET /api/v1/instances/{id}", () => {
  it("returns the instance", async () => {
    const created = await api.create("instances", { name: "Readable" });
    const res = await api.get(`/api/v1/instances/${created.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, data: created });
  });

  it.each([
    ["an id that is not a uuid", "not-a-uuid"],
    ["an unknown uuid", MISSING_ID],
  ])("answers 404 NOT_FOUND for %s", async (_, id) => {
    const res = await api.get(`/api/v1/instances/${id}`);
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe("NOT_FOUND");
  });
});

describe("PUT and PATCH /api/v1/instances/{id}", () => {
  it.each(["PUT", "PATCH"])("%s changes only the fields sent and moves updated_at", async (method) => {
    const created = await api.create("instances", { name: "Before", location: "Lake", description: "keep" });
    const res = await api.send(method, `/api/v1/instances/${created.id}`, { name: " After ", location: null });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ id: created.id, name: "After", location: null, description: "keep" });
    expect(res.body.data.created_at).toBe(created.created_at);
    // Compared in the database, at microsecond precision: the JSON has only milliseconds.
    const stored = await t().admin("select updated_at > created_at as moved from public.instances where id = $1", [created.id]);
    expect(stored.rows[0].moved).toBe(true);
  });

  it.each([
    ["an empty body", {}],
    ["only read-only fields", { id: MISSING_ID, created_at: "2000-01-01T00:00:00Z", updated_at: "2000-01-01T00:00:00Z" }],
  ])("refuses %s with 400 VALIDATION_ERROR", async (_, body) => {
    const created = await api.create("instances", { name: "Unchanged" });
    const res = await api.patch(`/api/v1/instances/${created.id}`, body);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("VALIDATION_ERROR");
    expect(res.body.error.details).toEqual([expect.objectContaining({ field: "body" })]);
  });

  it("refuses an unknown field in an update with 400 naming it", async () => {
    const created = await api.create("instances", { name: "Unchanged" });
    const res = await api.patch(`/api/v1/instances/${created.id}`, { name: "Changed", colour: "red" });
    expect(res.status).toBe(400);
    expect(res.body.error.details).toEqual([{ field: "colour", issue: "is not a field of this operation" }]);
    expect((await api.get(`/api/v1/instances/${created.id}`)).body.data.name).toBe("Unchanged");
  });

  it.each([
    ["a null name", { name: null }, "name"],
    ["a null status", { status: null }, "status"],
    ["an unknown status", { status: "done" }, "status"],
    ["dates in the wrong order", { start_date: "2026-08-02", end_date: "2026-08-01" }, "end_date"],
  ])("refuses %s with 400 naming the field", async (_, body, field) => {
    const created = await api.create("instances", { name: "Strict" });
    const res = await api.patch(`/api/v1/instances/${created.id}`, body);
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body.error.details)).toContain(`"field":"${field}"`);
  });

  it("refuses an end date before the stored start date with 400 naming end_date", async () => {
    const created = await api.create("instances", { name: "Dated", start_date: "2026-07-10" });
    const res = await api.patch(`/api/v1/instances/${created.id}`, { end_date: "2026-07-01" });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: "VALIDATION_ERROR", details: [{ field: "end_date" }] });
  });

  it("ignores read-only fields sent along with a real change", async () => {
    const created = await api.create("instances", { name: "Keep id" });
    const res = await api.put(`/api/v1/instances/${created.id}`, {
      name: "New",
      id: MISSING_ID,
      created_at: "2000-01-01T00:00:00Z",
    });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ id: created.id, name: "New", created_at: created.created_at });
  });

  it.each(["not-a-uuid", MISSING_ID])("answers 404 for the id %s", async (id) => {
    const res = await api.patch(`/api/v1/instances/${id}`, { name: "x" });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe("NOT_FOUND");
  });
});

describe("DELETE /api/v1/instances/{id}", () => {
  it("deletes softly: 200 with a message, deleted_at set, then 404 everywhere and gone from the list", async () => {
    const created = await api.create("instances", { name: "Short-lived" });
    const res = await api.delete(`/api/v1/instances/${created.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, message: expect.any(String) });

    const stored = await t().admin("select deleted_at from public.instances where id = $1", [created.id]);
    expect(stored.rows[0].deleted_at).toBeInstanceOf(Date);
    expect((await api.get(`/api/v1/instances/${created.id}`)).status).toBe(404);
    expect((await api.patch(`/api/v1/instances/${created.id}`, { name: "x" })).status).toBe(404);
    expect((await api.delete(`/api/v1/instances/${created.id}`)).status).toBe(404);
    const listed = await api.get("/api/v1/instances?limit=1000");
    expect(listed.body.data.map((i: { id: string }) => i.id)).not.toContain(created.id);
  });

  it.each(["not-a-uuid", MISSING_ID])("answers 404 for the id %s", async (id) => {
    const res = await api.delete(`/api/v1/instances/${id}`);
    expect(res.status).toBe(404);
  });

  const removeSoftly = (table: string, id: string) =>
    t().admin(`update public.${table} set deleted_at = now() where id = $1`, [id]);
  it.each([
    ["a supergroup", "supergroups", (i: string) => api.create("supergroups", { name: "G", instance_id: i }).then((g) => g.id)],
    ["a block", "blocks", (i: string) => api.create("blocks", { name: "B", instance_id: i }).then((b) => b.id)],
    ["a participant", "participants", (i: string) => addParticipant(t(), tenant.tenantId, { instance: i })],
  ])("refuses with 409 CONFLICT while %s is still in it, and deletes once it is gone", async (_, table, add) => {
    const instance = await api.create("instances", { name: "Occupied" });
    const child = await add(instance.id);
    const res = await api.delete(`/api/v1/instances/${instance.id}`);
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe("CONFLICT");

    await removeSoftly(table, child);
    expect((await api.delete(`/api/v1/instances/${instance.id}`)).status).toBe(200);
  });
});

describe("GET /api/v1/instances", () => {
  it("filters by status", async () => {
    const other = await newTenant(t().db);
    const own = client(testApp(t().db), other.admin.key);
    const done = await own.create("instances", { name: "Done", status: "completed" });
    await own.create("instances", { name: "Next" });
    const res = await own.get("/api/v1/instances?status=completed");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, data: [done], meta: { total: 1, limit: 100, offset: 0, next: null } });
  });

  it("refuses an unknown status filter with 400 naming status", async () => {
    const res = await api.get("/api/v1/instances?status=finished");
    expect(res.status).toBe(400);
    expect(res.body.error.details).toEqual([expect.objectContaining({ field: "status" })]);
  });
});

describe("archived instances", () => {
  it("refuse every change but the one that un-archives them, then take writes again", async () => {
    const instance = await api.create("instances", { name: "Old", status: "archived" });
    const path = `/api/v1/instances/${instance.id}`;

    const rename = await api.patch(path, { name: "Renamed" });
    expect(rename.status).toBe(409);
    expect(rename.body.error.code).toBe("CONFLICT");
    expect((await api.put(path, { status: "archived" })).status).toBe(409);
    expect((await api.delete(path)).status).toBe(409);
    expect((await api.get(path)).body.data.name).toBe("Old");

    const reopen = await api.patch(path, { status: "active" });
    expect(reopen.status).toBe(200);
    expect(reopen.body.data.status).toBe("active");
    expect((await api.patch(path, { name: "Renamed" })).status).toBe(200);
    expect((await api.delete(path)).status).toBe(200);
  });

  it("can be un-archived and changed in the same request", async () => {
    const instance = await api.create("instances", { name: "Old", status: "archived" });
    const res = await api.patch(`/api/v1/instances/${instance.id}`, { status: "completed", name: "Reopened" });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ status: "completed", name: "Reopened" });
  });
});
