import { beforeAll, describe, expect, it } from "vitest";
import { useTestDatabase } from "./support/database.ts";
import { call, newTenant, signToken, type TestTenant, testApp } from "./support/fixtures.ts";
import { client, MISSING_ID, PATHS, type Resource, type Structure } from "./support/structure-api.ts";

/**
 * Tenant B against tenant A's structure, for every resource and every method:
 * A's records are indistinguishable from missing ones (404 on paths, 400 when
 * referenced in bodies), never listed, and never written. Also: every route
 * wants a valid credential.
 */

const t = useTestDatabase();
let a: TestTenant;
let b: TestTenant;
let ofA: Structure;
let ofB: Structure;
let asA: ReturnType<typeof client>;
let asB: ReturnType<typeof client>;

const TABLES: Record<Resource, string> = {
  instances: "instances",
  supergroups: "supergroups",
  subgroups: "subgroups",
  blocks: "blocks",
  rooms: "rooms",
};
const RESOURCES = Object.keys(PATHS) as Resource[];

/** A valid change per resource, so that only the id can make the request fail. */
const CHANGE: Record<Resource, Record<string, unknown>> = {
  instances: { name: "Taken over" },
  supergroups: { name: "Taken over" },
  subgroups: { name: "Taken over" },
  blocks: { name: "Taken over" },
  rooms: { room_number: "666" },
};

const idOf = (s: Structure, resource: Resource) =>
  ({ instances: s.instance, supergroups: s.supergroup, subgroups: s.subgroup, blocks: s.block, rooms: s.room })[resource];

/** Everything stored for a tenant, as the owner role: to prove nothing changed. */
async function snapshot(tenantId: string) {
  const tables: Record<string, unknown[]> = {};
  for (const table of Object.values(TABLES)) {
    tables[table] = (await t().admin(`select * from public.${table} where tenant_id = $1 order by id`, [tenantId])).rows;
  }
  return tables;
}

beforeAll(async () => {
  a = await newTenant(t().db);
  b = await newTenant(t().db);
  const app = testApp(t().db);
  asA = client(app, a.admin.key);
  asB = client(app, b.admin.key);
  ofA = await asA.structure("A");
  ofB = await asB.structure("B");
});

describe("tenant B on tenant A's ids", () => {
  it.each(RESOURCES.flatMap((r) => ["GET", "PUT", "PATCH", "DELETE"].map((m) => [m, r] as const)))(
    "%s on one of A's %s answers 404 NOT_FOUND and changes nothing",
    async (method, resource) => {
      const before = await snapshot(a.tenantId);
      const body = method.startsWith("P") ? CHANGE[resource] : undefined;
      const res = await asB.send(method, `${PATHS[resource]}/${idOf(ofA, resource)}`, body);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({
        success: false,
        error: { code: "NOT_FOUND", message: expect.any(String), request_id: expect.any(String) },
      });
      // Exactly what an id that exists nowhere gets (but for the request's own id).
      const missing = (await asB.send(method, `${PATHS[resource]}/${MISSING_ID}`, body)).body;
      expect({ ...missing, error: { ...missing.error, request_id: "" } }).toEqual({
        ...res.body,
        error: { ...res.body.error, request_id: "" },
      });
      expect(await snapshot(a.tenantId)).toEqual(before);
    },
  );
});

describe("A's ids in tenant B's request bodies", () => {
  const cases: Array<[string, string, string, () => Record<string, unknown>, string]> = [
    ["POST", "supergroups", "", () => ({ name: "X", instance_id: ofA.instance }), "instance_id"],
    ["POST", "blocks", "", () => ({ name: "X", instance_id: ofA.instance }), "instance_id"],
    [
      "POST",
      "subgroups",
      "",
      () => ({ name: "X", instance_id: ofA.instance, parent_supergroup_id: ofA.supergroup }),
      "instance_id",
    ],
    [
      "POST",
      "subgroups",
      "",
      () => ({ name: "X", instance_id: ofB.instance, parent_supergroup_id: ofA.supergroup }),
      "parent_supergroup_id",
    ],
    ["POST", "rooms", "", () => ({ room_number: "X", instance_id: ofA.instance, block_id: ofA.block }), "instance_id"],
    ["POST", "rooms", "", () => ({ room_number: "X", instance_id: ofB.instance, block_id: ofA.block }), "block_id"],
    ["PATCH", "subgroups", "own", () => ({ parent_supergroup_id: ofA.supergroup }), "parent_supergroup_id"],
    ["PUT", "rooms", "own", () => ({ block_id: ofA.block }), "block_id"],
    ...(["supergroups", "subgroups", "blocks", "rooms"] as const).map(
      (r) =>
        ["PATCH", r, "own", () => ({ instance_id: ofA.instance }), "instance_id"] as [
          string,
          string,
          string,
          () => Record<string, unknown>,
          string,
        ],
    ),
  ];

  it.each(cases)(
    "%s %s (%s record) answers 400 naming the field when A's id is sent as %s",
    async (method, resource, own, body, field) => {
      const before = await snapshot(a.tenantId);
      const path = own ? `${PATHS[resource as Resource]}/${idOf(ofB, resource as Resource)}` : PATHS[resource as Resource];
      const res = await asB.send(method, path, body());
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: "VALIDATION_ERROR", details: [{ field }] });
      expect(await snapshot(a.tenantId)).toEqual(before);
    },
  );

  it("left nothing of B pointing into A's instance", async () => {
    for (const table of Object.values(TABLES).filter((name) => name !== "instances")) {
      const rows = await t().admin(`select count(*)::int as n from public.${table} where tenant_id = $1 and instance_id = $2`, [
        b.tenantId,
        ofA.instance,
      ]);
      expect(rows.rows[0].n, table).toBe(0);
    }
  });
});

describe("tenant B's lists", () => {
  it.each(RESOURCES)("of %s never show A's rows", async (resource) => {
    const res = await asB.get(`${PATHS[resource]}?limit=1000`);
    expect(res.status).toBe(200);
    const ids = res.body.data.map((row: { id: string }) => row.id);
    expect(ids).toContain(idOf(ofB, resource));
    expect(ids).not.toContain(idOf(ofA, resource));
    expect(res.body.meta.total).toBe(ids.length);
  });

  const filters: Array<[Resource, () => string]> = [
    ["instances", () => "status=upcoming"],
    ["supergroups", () => `instance_id=${ofA.instance}`],
    ["subgroups", () => `instance_id=${ofA.instance}`],
    ["subgroups", () => `parent_supergroup_id=${ofA.supergroup}`],
    ["blocks", () => `instance_id=${ofA.instance}`],
    ["rooms", () => `instance_id=${ofA.instance}`],
    ["rooms", () => `block_id=${ofA.block}`],
  ];
  it.each(filters)("of %s filtered by A's ids are empty", async (resource, filter) => {
    const res = await asB.get(`${PATHS[resource]}?${filter()}`);
    expect(res.status).toBe(200);
    const ids = res.body.data.map((row: { id: string }) => row.id);
    expect(ids).not.toContain(idOf(ofA, resource));
    if (resource !== "instances") expect(res.body).toMatchObject({ data: [], meta: { total: 0 } });
  });
});

describe("credentials", () => {
  const requests = RESOURCES.flatMap((resource) => [
    ["GET", resource, false],
    ["POST", resource, false],
    ["GET", resource, true],
    ["PUT", resource, true],
    ["PATCH", resource, true],
    ["DELETE", resource, true],
  ]) as Array<[string, Resource, boolean]>;

  it.each(requests)(
    "%s on %s (with id: %s) answers 401 without a credential and with a bad one",
    async (method, resource, withId) => {
      const path = withId ? `${PATHS[resource]}/${idOf(ofA, resource)}` : PATHS[resource];
      const body = method.startsWith("P") ? CHANGE[resource] : undefined;
      const app = testApp(t().db);
      const attempts = [
        await call(app, method, path, { body }),
        await call(app, method, path, { body, key: "camp_not-a-real-key-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" }),
        await call(app, method, path, { body, key: "nonsense" }),
        await call(app, method, path, { body, token: "not.a.jwt" }),
      ];
      for (const res of attempts) {
        expect(res.status).toBe(401);
        expect(res.body.error.code).toBe("UNAUTHORIZED");
      }
    },
  );

  it("accepts a Bearer token of a user of the tenant", async () => {
    const token = await signToken({ sub: "idp-user-a", email: a.admin.email, email_verified: true });
    const res = await call(testApp(t().db), "GET", `${PATHS.instances}/${ofA.instance}`, { token });
    expect(res.status).toBe(200);
    expect(res.body.data.id).toBe(ofA.instance);
  });
});
