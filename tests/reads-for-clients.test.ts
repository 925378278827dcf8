import { beforeAll, describe, expect, it } from "vitest";
import { type CampStructure, tenantWithCamp } from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { call, newTenant, signToken, type TestApp, type TestTenant } from "./support/fixtures.ts";

/**
 * What an admin front end reaches for first (issue 30): who the caller is
 * (GET /api/v1/me), parents' names on rooms and subgroups, a label on audit
 * events, and strict bodies that name a typo instead of dropping it.
 */

const t = useTestDatabase();
let app: TestApp;
let tenant: TestTenant;
let camp: CampStructure;

beforeAll(async () => {
  ({ app, tenant, camp } = await tenantWithCamp(t()));
});

describe("GET /api/v1/me", () => {
  it("answers an API key's caller: user, tenant and the key with its name, scopes and expiry", async () => {
    const res = await call(app, "GET", "/api/v1/me", { key: tenant.admin.key });
    expect(res.status).toBe(200);
    const tenantName = (await t().admin("select name from public.tenants where id = $1", [tenant.tenantId])).rows[0].name;
    const keyId = (
      await t().admin("select id from public.api_keys where user_id = $1 and revoked_at is null", [tenant.admin.userId])
    ).rows[0].id;
    expect(res.body.data).toEqual({
      user: {
        id: tenant.admin.userId,
        email: tenant.admin.email,
        role: "admin",
        active: true,
        care_access: expect.any(String),
        safeguarding_lead: false,
      },
      tenant: { id: tenant.tenantId, name: tenantName },
      credential: { type: "api_key", id: keyId, name: null, scopes: expect.arrayContaining(["read", "write"]), expires_at: null },
    });
  });

  it("shows a read-only key with its name and expiry, so a UI can hide its write menus", async () => {
    const expires = new Date(Date.now() + 86_400_000).toISOString();
    const staff = await tenant.addUser("staff", { withKey: false });
    const issued = await call(app, "POST", "/api/v1/api-keys/generate", {
      key: tenant.admin.key,
      body: { email: staff.email, name: "Reports", scopes: ["read"], expires_at: expires },
    });
    expect(issued.status).toBe(201);
    const res = await call(app, "GET", "/api/v1/me", { key: issued.body.data.key });
    expect(res.status).toBe(200);
    expect(res.body.data.user).toMatchObject({ id: staff.userId, role: "staff", active: true });
    expect(res.body.data.credential).toEqual({
      type: "api_key",
      id: issued.body.data.id,
      name: "Reports",
      scopes: ["read"],
      expires_at: new Date(expires).toISOString(),
    });
  });

  it("shows a Bearer caller with the token's subject", async () => {
    const user = await tenant.addUser("staff", { withKey: false });
    const token = await signToken({ sub: `idp|${user.userId}`, email: user.email, email_verified: true });
    const res = await call(app, "GET", "/api/v1/me", { token });
    expect(res.status).toBe(200);
    expect(res.body.data.user).toMatchObject({ id: user.userId, email: user.email, role: "staff" });
    expect(res.body.data.credential).toEqual({ type: "bearer", subject: `idp|${user.userId}`, scopes: expect.any(Array) });
  });

  it("answers 401 without a credential and never shows another tenant", async () => {
    expect((await call(app, "GET", "/api/v1/me")).status).toBe(401);
    const other = await newTenant(t().db);
    const res = await call(app, "GET", "/api/v1/me", { key: other.admin.key });
    expect(res.body.data.tenant.id).toBe(other.tenantId);
    expect(res.body.data.user.id).toBe(other.admin.userId);
  });
});

describe("parents' names", () => {
  it("gives rooms their block_name in list and get, and sorts by it", async () => {
    const key = tenant.admin.key;
    const south = await call(app, "POST", "/api/v1/blocks", { key, body: { name: "Annex", instance_id: camp.instanceId } });
    const room = await call(app, "POST", "/api/v1/rooms", {
      key,
      body: { room_number: "A1", block_id: south.body.data.id, instance_id: camp.instanceId },
    });
    expect(room.status).toBe(201);
    expect(room.body.data.block_name).toBe("Annex");
    expect((await call(app, "GET", `/api/v1/rooms/${room.body.data.id}`, { key })).body.data.block_name).toBe("Annex");
    const sorted = await call(app, "GET", `/api/v1/rooms?instance_id=${camp.instanceId}&sort=block_name`, { key });
    expect(sorted.status).toBe(200);
    const names = sorted.body.data.map((r: { block_name: string }) => r.block_name);
    expect(names).toEqual([...names].sort());
    expect(names).toContain("Annex");
  });

  it("gives subgroups their supergroup_name in list and get, and sorts by it descending", async () => {
    const key = tenant.admin.key;
    const list = await call(app, "GET", `/api/v1/groups/subgroups?instance_id=${camp.instanceId}&sort=-supergroup_name`, { key });
    expect(list.status).toBe(200);
    const parent = await call(app, "GET", `/api/v1/groups/supergroups/${camp.supergroupId}`, { key });
    const mine = list.body.data.find((s: { id: string }) => s.id === camp.subgroupId);
    expect(mine.supergroup_name).toBe(parent.body.data.name);
    const one = await call(app, "GET", `/api/v1/groups/subgroups/${camp.subgroupId}`, { key });
    expect(one.body.data.supergroup_name).toBe(parent.body.data.name);
  });
});

describe("audit events' labels", () => {
  it("label a live record, and say nothing of one deleted or erased", async () => {
    const key = tenant.admin.key;
    const block = await call(app, "POST", "/api/v1/blocks", { key, body: { name: "Label lodge", instance_id: camp.instanceId } });
    const person = await call(app, "POST", "/api/v1/participants", {
      key,
      body: { user_id: "label-1", instance_id: camp.instanceId, first_name: "Grace", surname: "Hopper" },
    });
    const events = async (id: string) =>
      (await call(app, "GET", `/api/v1/audit-events?resource_id=${id}`, { key })).body.data as Array<{
        resource_label: string | null;
      }>;
    expect((await events(block.body.data.id)).map((e) => e.resource_label)).toEqual(["Label lodge"]);
    expect((await events(person.body.data.id)).map((e) => e.resource_label)).toEqual(["Grace Hopper"]);

    expect((await call(app, "DELETE", `/api/v1/blocks/${block.body.data.id}`, { key })).status).toBe(200);
    expect((await events(block.body.data.id)).map((e) => e.resource_label)).toEqual([null, null]);
    expect((await call(app, "POST", `/api/v1/participants/${person.body.data.id}/erase`, { key })).status).toBe(200);
    const erased = await events(person.body.data.id);
    expect(erased.every((e) => e.resource_label === null)).toBe(true);
    expect(JSON.stringify(erased)).not.toContain("Hopper");
  });
});

describe("strict bodies", () => {
  it("names an unknown field of a bulk row by its place, and creates nothing", async () => {
    const res = await call(app, "POST", "/api/v1/participants/bulk", {
      key: tenant.admin.key,
      body: {
        participants: [
          { user_id: "strict-1", instance_id: camp.instanceId, first_name: "A", surname: "B" },
          { user_id: "strict-2", instance_id: camp.instanceId, first_name: "C", surname: "D", sur_name: "typo" },
        ],
      },
    });
    expect(res.status).toBe(400);
    expect(res.body.error.details).toEqual([{ field: "participants.1.sur_name", issue: "is not a field of this operation" }]);
    const stored = await t().admin("select count(*)::int as n from public.participants where user_id like 'strict-%'");
    expect(stored.rows[0].n).toBe(0);
  });

  it("keeps CSV import lenient: unknown columns are ignored and listed, in the dry run too", async () => {
    const csv = "user_id,first_name,surname,Shoe size\ncsv-1,Ada,Lovelace,5\n";
    const res = await call(app, "POST", `/api/v1/participants/import?instance_id=${camp.instanceId}&dry_run=true`, {
      key: tenant.admin.key,
      raw: csv,
      headers: { "Content-Type": "text/csv" },
    });
    expect(res.status).toBe(200);
    // A dry run counts what it would create (issue 40: dry and real runs report the same counts).
    expect(res.body.data).toMatchObject({ dry_run: true, created: 1, ignored_columns: ["Shoe size"] });
  });
});
