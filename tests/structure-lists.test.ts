import { beforeAll, describe, expect, it } from "vitest";
import { useTestDatabase } from "./support/database.ts";
import { newTenant, testApp } from "./support/fixtures.ts";
import { client, PATHS, type Resource } from "./support/structure-api.ts";

/**
 * Pagination of the five structure lists: pages are disjoint and in a stable
 * order (created_at, id), meta tells the truth, and limit/offset outside their
 * bounds are refused.
 */

const t = useTestDatabase();
const ROWS = 7;
/** Per resource: the list path (filtered to this test's rows) of a tenant holding exactly ROWS rows of it. */
const lists = {} as Record<
  Resource,
  { api: ReturnType<typeof client>; path: string; ids: string[]; extra: () => Record<string, unknown> }
>;

beforeAll(async () => {
  const tenant = await newTenant(t().db);
  const api = client(testApp(t().db), tenant.admin.key);
  const instances: string[] = [];
  for (let i = 0; i < ROWS; i++) instances.push((await api.create("instances", { name: `Camp ${i}` })).id);
  const instance = instances[0] as string;
  const parent = (await api.create("supergroups", { name: "Parent", instance_id: instances[1] })).id;
  const block = (await api.create("blocks", { name: "Block", instance_id: instances[1] })).id;
  const make: Record<Exclude<Resource, "instances">, (i: number) => Record<string, unknown>> = {
    supergroups: (i) => ({ name: `S${i}`, instance_id: instance }),
    subgroups: (i) => ({ name: `Sub${i}`, instance_id: instances[1], parent_supergroup_id: parent }),
    blocks: (i) => ({ name: `B${i}`, instance_id: instance }),
    rooms: (i) => ({ room_number: `${i}`, instance_id: instances[1], block_id: block }),
  };
  lists.instances = { api, path: PATHS.instances, ids: instances, extra: () => ({ name: "Extra" }) };
  for (const [resource, body] of Object.entries(make) as Array<
    [Exclude<Resource, "instances">, (i: number) => Record<string, unknown>]
  >) {
    const ids: string[] = [];
    for (let i = 0; i < ROWS; i++) ids.push((await api.create(resource, body(i))).id);
    const filter =
      resource === "subgroups"
        ? `parent_supergroup_id=${parent}`
        : resource === "rooms"
          ? `block_id=${block}`
          : `instance_id=${instance}`;
    lists[resource] = { api, path: `${PATHS[resource]}?${filter}`, ids, extra: () => body(ROWS) };
  }
});

const RESOURCES = Object.keys(PATHS) as Resource[];
const withParams = (path: string, params: string) => `${path}${path.includes("?") ? "&" : "?"}${params}`;

describe.each(RESOURCES)("GET %s", (resource) => {
  it("returns every row once across pages, in creation order, with a truthful meta", async () => {
    const { api, path, ids } = lists[resource];
    const seen: string[] = [];
    for (let offset = 0; offset < ROWS + 3; offset += 3) {
      const res = await api.get(withParams(path, `limit=3&offset=${offset}`));
      expect(res.status).toBe(200);
      expect(res.body.meta).toEqual({ total: ROWS, limit: 3, offset, next: offset + 3 < ROWS ? expect.any(String) : null });
      expect(res.body.data.length).toBe(Math.max(0, Math.min(3, ROWS - offset)));
      seen.push(...res.body.data.map((row: { id: string }) => row.id));
    }
    expect(seen).toEqual(ids);
  });

  it("uses limit 100 and offset 0 by default and accepts limit 1000", async () => {
    const { api, path } = lists[resource];
    expect((await api.get(path)).body.meta).toEqual({ total: ROWS, limit: 100, offset: 0, next: null });
    expect((await api.get(withParams(path, "limit=1000"))).body.meta.limit).toBe(1000);
  });

  it.each([
    ["limit", "0"],
    ["limit", "1001"],
    ["limit", "-1"],
    ["limit", "abc"],
    ["limit", "2.5"],
    ["offset", "-1"],
    ["offset", "abc"],
  ])("refuses %s=%s with 400 naming the parameter", async (name, value) => {
    const { api, path } = lists[resource];
    const res = await api.get(withParams(path, `${name}=${value}`));
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: "VALIDATION_ERROR", details: [expect.objectContaining({ field: name })] });
  });

  it("leaves deleted rows out of the page and the total", async () => {
    const { api, path, ids, extra } = lists[resource];
    const added = await api.create(resource, extra());
    expect((await api.get(path)).body.meta.total).toBe(ROWS + 1);
    expect((await api.delete(`${PATHS[resource]}/${added.id}`)).status).toBe(200);
    const res = await api.get(path);
    expect(res.body.meta.total).toBe(ROWS);
    expect(res.body.data.map((row: { id: string }) => row.id)).toEqual(ids);
  });
});
