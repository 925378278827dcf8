import { beforeAll, describe, expect, it } from "vitest";
import { addCampStructure, type CampStructure } from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { call, newTenant, type TestApp, type TestTenant, testApp } from "./support/fixtures.ts";

/** `sort`, `updated_since` and `include_deleted` on lists (docs/api.md, "The contract"). */

const t = useTestDatabase();
let app: TestApp;
let tenant: TestTenant;
let camp: CampStructure;

interface Row {
  id: string;
  user_id: string;
  surname: string;
  first_name: string;
  updated_at: string;
  deleted_at?: string | null;
}

const SURNAMES = ["Byron", "Adams", "Curie", "Adams", "Byron", "Adams", "Dirac", "Curie"];

beforeAll(async () => {
  app = testApp(t().db);
  tenant = await newTenant(t().db);
  camp = await addCampStructure(t(), tenant.tenantId);
  for (const [i, surname] of SURNAMES.entries()) {
    const res = await call(app, "POST", "/api/v1/participants", {
      key: tenant.admin.key,
      body: { user_id: `s-${i}`, instance_id: camp.instanceId, first_name: `F${(i * 7) % 5}`, surname },
    });
    expect(res.status).toBe(201);
  }
});

const list = async (query: string) => {
  const res = await call(app, "GET", `/api/v1/participants?instance_id=${camp.instanceId}&${query}`, { key: tenant.admin.key });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as { data: Row[]; meta: { total: number } };
};

/** The order a client expects: the keys, then id in the direction of the last key. */
function expected(rows: Row[], keys: Array<[keyof Row, 1 | -1]>): string[] {
  const last = keys[keys.length - 1]?.[1] ?? 1;
  return [...rows]
    .sort((a, b) => {
      for (const [field, direction] of keys) {
        const order = String(a[field]) < String(b[field]) ? -1 : String(a[field]) > String(b[field]) ? 1 : 0;
        if (order !== 0) return order * direction;
      }
      return (a.id < b.id ? -1 : 1) * last;
    })
    .map((r) => r.id);
}

describe("sort", () => {
  it("orders by the fields given, - for descending, id breaking ties", async () => {
    const all = (await list("limit=100")).data;
    const cases: Array<[string, Array<[keyof Row, 1 | -1]>]> = [
      ["surname", [["surname", 1]]],
      ["-surname", [["surname", -1]]],
      [
        "surname,first_name",
        [
          ["surname", 1],
          ["first_name", 1],
        ],
      ],
      [
        "surname,-first_name",
        [
          ["surname", 1],
          ["first_name", -1],
        ],
      ],
      ["-user_id", [["user_id", -1]]],
    ];
    for (const [sort, keys] of cases) {
      expect(
        (await list(`sort=${sort}&limit=100`)).data.map((r) => r.id),
        sort,
      ).toEqual(expected(all, keys));
    }
  });

  it("pages through ties without repeating or skipping anyone", async () => {
    const seen: string[] = [];
    for (let offset = 0; offset < SURNAMES.length; offset += 3) {
      seen.push(...(await list(`sort=surname&limit=3&offset=${offset}`)).data.map((r) => r.id));
    }
    expect(seen).toEqual((await list("sort=surname&limit=100")).data.map((r) => r.id));
    expect(new Set(seen).size).toBe(SURNAMES.length);
  });

  it("refuses an unknown, repeated or empty field, naming sort", async () => {
    for (const sort of ["shoe_size", "surname,surname", "surname,", "-", "tenant_id", "surname desc"]) {
      const res = await call(app, "GET", `/api/v1/participants?sort=${encodeURIComponent(sort)}`, { key: tenant.admin.key });
      expect(res.status, sort).toBe(400);
      expect(res.body.error.details[0].field, sort).toBe("sort");
    }
  });

  it("sorts the structure lists too", async () => {
    for (const name of ["Charlie", "alpha", "Bravo"]) {
      await call(app, "POST", "/api/v1/instances", { key: tenant.admin.key, body: { name } });
    }
    const names = async (sort: string) =>
      (await call(app, "GET", `/api/v1/instances?sort=${sort}`, { key: tenant.admin.key })).body.data.map(
        (i: { name: string }) => i.name,
      );
    const byName = await names("name");
    expect(await names("-name")).toEqual([...byName].reverse());
    expect((await call(app, "GET", "/api/v1/rooms?sort=capacity,-room_number", { key: tenant.admin.key })).status).toBe(200);
    expect((await call(app, "GET", "/api/v1/blocks?sort=room_number", { key: tenant.admin.key })).status).toBe(400);
  });
});

describe("updated_since and include_deleted", () => {
  it("mirror a tenant incrementally, deletions included", async () => {
    // A script's first full copy.
    const mirror = new Map<string, Row>();
    const pull = async (query: string) => {
      for (let offset = 0; ; offset += 2) {
        const page = await list(`sort=updated_at&limit=2&offset=${offset}&${query}`);
        for (const row of page.data) {
          if (row.deleted_at) mirror.delete(row.id);
          else mirror.set(row.id, row);
        }
        if (page.data.length < 2) break;
      }
    };
    await pull("include_deleted=true");
    const since = [...mirror.values()]
      .map((r) => r.updated_at)
      .sort()
      .pop() as string;

    // Changes of all three kinds.
    const [changed, removed] = [...mirror.values()];
    await call(app, "PATCH", `/api/v1/participants/${changed?.id}`, { key: tenant.admin.key, body: { surname: "Renamed" } });
    await call(app, "DELETE", `/api/v1/participants/${removed?.id}`, { key: tenant.admin.key });
    await call(app, "POST", "/api/v1/participants", {
      key: tenant.admin.key,
      body: { user_id: "late", instance_id: camp.instanceId, first_name: "L", surname: "Late" },
    });

    const delta = await list(`updated_since=${encodeURIComponent(since)}&include_deleted=true&limit=100`);
    expect(delta.data.length).toBeLessThan(mirror.size);
    await pull(`updated_since=${encodeURIComponent(since)}&include_deleted=true`);
    const server = (await list("limit=100")).data;
    expect(new Map(server.map((r) => [r.id, r.surname]))).toEqual(new Map([...mirror.values()].map((r) => [r.id, r.surname])));
  });

  it("returns deleted records only when asked, with their deleted_at", async () => {
    const created = await call(app, "POST", "/api/v1/instances", { key: tenant.admin.key, body: { name: "Gone soon" } });
    await call(app, "DELETE", `/api/v1/instances/${created.body.data.id}`, { key: tenant.admin.key });
    const live = (await call(app, "GET", "/api/v1/instances?limit=1000", { key: tenant.admin.key })).body.data;
    expect(live.find((i: { id: string }) => i.id === created.body.data.id)).toBeUndefined();
    expect(live[0]).not.toHaveProperty("deleted_at");
    const all = (await call(app, "GET", "/api/v1/instances?include_deleted=true&limit=1000", { key: tenant.admin.key })).body
      .data;
    expect(all.find((i: { id: string }) => i.id === created.body.data.id)?.deleted_at).toEqual(expect.any(String));
  });

  it("answers include_deleted=true with no other filter, for GET and HEAD (was a SQL syntax error, 500)", async () => {
    const gone = await call(app, "POST", "/api/v1/participants", {
      key: tenant.admin.key,
      body: { user_id: "alone-deleted", instance_id: camp.instanceId, first_name: "Al", surname: "One" },
    });
    await call(app, "DELETE", `/api/v1/participants/${gone.body.data.id}`, { key: tenant.admin.key });
    const res = await call(app, "GET", "/api/v1/participants?include_deleted=true&limit=1000", { key: tenant.admin.key });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data.find((p: Row) => p.id === gone.body.data.id)?.deleted_at).toEqual(expect.any(String));
    expect((await call(app, "HEAD", "/api/v1/participants?include_deleted=true", { key: tenant.admin.key })).status).toBe(200);
  });

  it("finds deleted participants with q and include_deleted=true, whatever the length of q (tests/list-properties.test.ts's case)", async () => {
    // A term of three letters or more searched live participants only: this one was missing.
    const gone = await call(app, "POST", "/api/v1/participants", {
      key: tenant.admin.key,
      body: { user_id: "searched-deleted", instance_id: camp.instanceId, first_name: "Ada", surname: "Quarry" },
    });
    await call(app, "DELETE", `/api/v1/participants/${gone.body.data.id}`, { key: tenant.admin.key });
    for (const q of ["qu", "quarry", "ADA QUA"]) {
      const found = await list(`status=active&q=${encodeURIComponent(q)}&include_deleted=true`);
      expect(
        found.data.map((p) => p.id),
        q,
      ).toContain(gone.body.data.id);
      expect(found.meta.total, q).toBe(found.data.length);
      // Without include_deleted the deleted one stays out.
      expect(
        (await list(`q=${encodeURIComponent(q)}`)).data.map((p) => p.id),
        q,
      ).not.toContain(gone.body.data.id);
    }
  });

  it("refuses a timestamp that is not RFC 3339, and a bad include_deleted, naming them", async () => {
    for (const [query, field] of [
      ["updated_since=yesterday", "updated_since"],
      ["updated_since=2026-07-14", "updated_since"],
      ["updated_since=1700000000", "updated_since"],
      ["include_deleted=yes", "include_deleted"],
    ]) {
      const res = await call(app, "GET", `/api/v1/participants?${query}`, { key: tenant.admin.key });
      expect(res.status, query).toBe(400);
      expect(res.body.error.details[0].field, query).toBe(field);
    }
  });

  it("never shows another tenant's records, deleted or not", async () => {
    const stranger = await newTenant(t().db);
    const res = await call(app, "GET", "/api/v1/participants?include_deleted=true&updated_since=2000-01-01T00:00:00Z", {
      key: stranger.admin.key,
    });
    expect(res.body.meta.total).toBe(0);
  });
});
