import { beforeAll, describe, expect, it } from "vitest";
import { type CampStructure, tenantWithCamp } from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { call, type TestApp, type TestTenant } from "./support/fixtures.ts";

/**
 * Optimistic concurrency: a strong ETag on every single-record read and write,
 * 304 for If-None-Match, 412 for an If-Match that no longer matches, with
 * nothing changed.
 */

const t = useTestDatabase();
let app: TestApp;
let tenant: TestTenant;
let camp: CampStructure;

beforeAll(async () => {
  ({ app, tenant, camp } = await tenantWithCamp(t()));
});

const resources = () => [
  { path: "/api/v1/instances", body: { name: `Etag ${Math.random()}` }, change: { name: `Renamed ${Math.random()}` } },
  {
    path: "/api/v1/groups/supergroups",
    body: { name: `Etag ${Math.random()}`, instance_id: camp.instanceId },
    change: { purpose: "changed" },
  },
  { path: "/api/v1/blocks", body: { name: `Etag ${Math.random()}`, instance_id: camp.instanceId }, change: { description: "x" } },
  {
    path: "/api/v1/rooms",
    body: { room_number: `E${Math.random()}`.slice(0, 8), block_id: camp.blockId, instance_id: camp.instanceId },
    change: { capacity: 4 },
  },
  {
    path: "/api/v1/participants",
    body: { user_id: `etag-${Math.random()}`, instance_id: camp.instanceId, first_name: "Ada", surname: "Byron" },
    change: { surname: "Lovelace" },
  },
];

describe("ETags", () => {
  it("comes with every read and write of a record, is strong, and changes with every change", async () => {
    for (const { path, body, change } of resources()) {
      const key = tenant.admin.key;
      const created = await call(app, "POST", path, { key, body });
      expect(created.status, path).toBe(201);
      const tag = created.headers.get("etag") as string;
      expect(tag, path).toMatch(/^"[0-9]+(\.[0-9]*){0,3}"$/);
      const url = `${path}/${created.body.data.id}`;
      const read = await call(app, "GET", url, { key });
      expect(read.headers.get("etag"), path).toBe(tag);

      expect((await call(app, "GET", url, { key, headers: { "If-None-Match": tag } })).status, path).toBe(304);
      expect((await call(app, "GET", url, { key, headers: { "If-None-Match": `W/${tag}` } })).status, path).toBe(304);
      expect((await call(app, "GET", url, { key, headers: { "If-None-Match": '"0"' } })).status, path).toBe(200);

      const patched = await call(app, "PATCH", url, { key, body: change, headers: { "If-Match": tag } });
      expect(patched.status, path).toBe(200);
      const next = patched.headers.get("etag") as string;
      expect(next, path).not.toBe(tag);
      expect((await call(app, "GET", url, { key })).headers.get("etag"), path).toBe(next);
      // A change made outside the API changes it too.
      const table = path.split("/").pop() === "supergroups" ? "supergroups" : (path.split("/").pop() as string);
      await t().admin(`update public.${table} set updated_at = now() where id = $1`, [created.body.data.id]);
      expect((await call(app, "GET", url, { key })).headers.get("etag"), path).not.toBe(next);
    }
  });

  it("refuses a PUT, PATCH or DELETE whose If-Match no longer matches with 412, changing nothing", async () => {
    for (const { path, body, change } of resources()) {
      const key = tenant.admin.key;
      const created = await call(app, "POST", path, { key, body });
      const url = `${path}/${created.body.data.id}`;
      const stale = created.headers.get("etag") as string;
      const fresh = (await call(app, "PATCH", url, { key, body: change })).headers.get("etag") as string;
      const before = (await call(app, "GET", url, { key })).body.data;
      for (const method of ["PUT", "PATCH", "DELETE"]) {
        for (const condition of [stale, `W/${fresh}`, '"nonsense"']) {
          const res = await call(app, method, url, {
            key,
            body: method === "DELETE" ? undefined : body,
            headers: { "If-Match": condition },
          });
          expect(res.status, `${method} ${path} ${condition}`).toBe(412);
          expect(res.body.error.code).toBe("PRECONDITION_FAILED");
        }
      }
      expect((await call(app, "GET", url, { key })).body.data).toEqual(before);
      expect((await call(app, "DELETE", url, { key, headers: { "If-Match": `"1", ${fresh}` } })).status, path).toBe(200);
      expect((await call(app, "DELETE", url, { key, headers: { "If-Match": fresh } })).status, path).toBe(404);
    }
  });

  it("lets two admins editing one participant lose nothing: the second save is refused", async () => {
    const key = tenant.admin.key;
    const second = (await tenant.addUser("admin")).key as string;
    const created = await call(app, "POST", "/api/v1/participants", {
      key,
      body: { user_id: "two-admins", instance_id: camp.instanceId, first_name: "Ada", surname: "Byron" },
    });
    const url = `/api/v1/participants/${created.body.data.id}`;
    const [first, other] = await Promise.all([call(app, "GET", url, { key }), call(app, "GET", url, { key: second })]);
    const saves = await Promise.all([
      call(app, "PATCH", url, {
        key,
        body: { pronouns: "she/her" },
        headers: { "If-Match": first.headers.get("etag") as string },
      }),
      call(app, "PATCH", url, {
        key: second,
        body: { rank: "Leader" },
        headers: { "If-Match": other.headers.get("etag") as string },
      }),
    ]);
    expect(saves.map((s) => s.status).sort()).toEqual([200, 412]);
    const stored = (await call(app, "GET", url, { key })).body.data;
    const winner = saves.find((s) => s.status === 200);
    expect(stored).toEqual(winner?.body.data);
  });

  it("takes If-Match: * as any live record, and a missing record is still 404", async () => {
    const created = await call(app, "POST", "/api/v1/instances", { key: tenant.admin.key, body: { name: "Star" } });
    const url = `/api/v1/instances/${created.body.data.id}`;
    expect(
      (await call(app, "PATCH", url, { key: tenant.admin.key, body: { name: "Star 2" }, headers: { "If-Match": "*" } })).status,
    ).toBe(200);
    expect((await call(app, "DELETE", url, { key: tenant.admin.key, headers: { "If-Match": "*" } })).status).toBe(200);
    expect(
      (await call(app, "PATCH", url, { key: tenant.admin.key, body: { name: "x" }, headers: { "If-Match": "*" } })).status,
    ).toBe(404);
  });
});

describe("ETags of records that carry a parent's name", () => {
  it("change when the parent is renamed, while If-Match still guards the record's own fields", async () => {
    const key = tenant.admin.key;
    const block = await call(app, "POST", "/api/v1/blocks", { key, body: { name: "Old lodge", instance_id: camp.instanceId } });
    const room = await call(app, "POST", "/api/v1/rooms", {
      key,
      body: { room_number: "7", block_id: block.body.data.id, instance_id: camp.instanceId },
    });
    const url = `/api/v1/rooms/${room.body.data.id}`;
    const read = await call(app, "GET", url, { key });
    expect(read.body.data.block_name).toBe("Old lodge");
    const etag = read.headers.get("etag") as string;
    const renamed = await call(app, "PATCH", `/api/v1/blocks/${block.body.data.id}`, { key, body: { name: "New lodge" } });
    expect(renamed.status).toBe(200);
    // The old copy is stale: a conditional read gets the new name, not a 304.
    const again = await call(app, "GET", url, { key, headers: { "If-None-Match": etag } });
    expect(again.status).toBe(200);
    expect(again.body.data.block_name).toBe("New lodge");
    expect(again.headers.get("etag")).not.toBe(etag);
    // The room itself did not change: an edit made with the old ETag is not a lost update.
    const edit = await call(app, "PATCH", url, { key, body: { capacity: 3 }, headers: { "If-Match": etag } });
    expect(edit.status).toBe(200);
    const stale = await call(app, "PATCH", url, { key, body: { capacity: 2 }, headers: { "If-Match": etag } });
    expect(stale.status).toBe(412);
  });
});
