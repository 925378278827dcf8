import { randomUUID } from "node:crypto";
import pg from "pg";
import { beforeAll, describe, expect, it } from "vitest";
import { addCampStructure } from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { type CallOptions, call, newTenant, signToken, type TestApp, type TestTenant, testApp } from "./support/fixtures.ts";

/**
 * The attendance scope, over HTTP and at the SQL level as the API role: a key
 * with it records movements, runs roll calls and reads the roster (with
 * authorised pickups' names, never their phones), and does nothing else that
 * write allows; ["attendance"] alone reaches nothing else at all.
 */

const t = useTestDatabase();

let app: TestApp;
let tenant: TestTenant;
let admin: CallOptions;
let instanceId: string;
let child: string;
let pickup: string;
const keys: Record<"attendance" | "readAttendance" | "read", { key: string; id: string; userId: string }> = {} as never;

async function keyWith(scopes: string[]) {
  const user = await tenant.addUser("staff", { withKey: false });
  const issued = await call(app, "POST", "/api/v1/api-keys/generate", { ...admin, body: { email: user.email, scopes } });
  expect(issued.status, JSON.stringify(issued.body)).toBe(201);
  expect(issued.body.data.scopes).toEqual(scopes);
  return { key: issued.body.data.key as string, id: issued.body.data.id as string, userId: user.userId };
}

beforeAll(async () => {
  app = testApp(t().db);
  tenant = await newTenant(t().db);
  admin = { token: await signToken({ sub: `sub-${tenant.admin.email}`, email: tenant.admin.email, email_verified: true }) };
  instanceId = (await addCampStructure(t(), tenant.tenantId)).instanceId;
  const created = await call(app, "POST", "/api/v1/participants", {
    ...admin,
    body: { instance_id: instanceId, user_id: `scope-${randomUUID().slice(0, 6)}`, first_name: "Scope", surname: "Kid" },
  });
  child = created.body.data.id;
  const contact = await call(app, "POST", `/api/v1/participants/${child}/contacts`, {
    ...admin,
    body: {
      name: "Aunt Pickup",
      phone: "+44 20 7946 0123",
      email: "aunt@example.test",
      notes: "Secret note",
      authorised_pickup: true,
    },
  });
  pickup = contact.body.data.id;
  keys.attendance = await keyWith(["attendance"]);
  keys.readAttendance = await keyWith(["read", "attendance"]);
  keys.read = await keyWith(["read"]);
});

describe("the attendance scope over HTTP", () => {
  it("records movements, runs roll calls and reads the roster with pickups' names (not their phones)", async () => {
    const who = { key: keys.attendance.key };
    const checkIn = await call(app, "POST", "/api/v1/attendance", { ...who, body: { participant_id: child, direction: "in" } });
    expect(checkIn.status, JSON.stringify(checkIn.body)).toBe(201);
    const synced = await call(app, "POST", "/api/v1/attendance/sync", {
      ...who,
      body: { records: [{ participant_id: child, direction: "out", pickup_contact_id: pickup, nonce: randomUUID() }] },
    });
    expect(synced.status).toBe(200);
    expect(synced.body.data.counts.accepted).toBe(1);
    const roll = await call(app, "POST", "/api/v1/roll-calls", { ...who, body: { instance_id: instanceId } });
    expect(roll.status).toBe(201);
    const marks = await call(app, "PUT", `/api/v1/roll-calls/${roll.body.data.id}/marks`, {
      ...who,
      body: { marks: [{ participant_id: child, mark: "present" }] },
    });
    expect(marks.status).toBe(200);
    expect((await call(app, "POST", `/api/v1/roll-calls/${roll.body.data.id}/close`, who)).status).toBe(200);
    for (const path of [
      `/api/v1/roll-calls/${roll.body.data.id}`,
      `/api/v1/roll-calls?instance_id=${instanceId}`,
      `/api/v1/instances/${instanceId}/presence`,
      "/api/v1/attendance",
      "/api/v1/events",
      "/api/v1/me",
    ]) {
      expect((await call(app, "GET", path, who)).status, path).toBe(200);
    }
    const roster = await call(app, "GET", `/api/v1/instances/${instanceId}/roster`, who);
    expect(roster.status).toBe(200);
    const entry = roster.body.data.participants.find((p: { id: string }) => p.id === child);
    expect(entry.authorised_pickups).toEqual([{ id: pickup, name: "Aunt Pickup" }]);
    const text = JSON.stringify(roster.body);
    for (const secret of ["7946", "aunt@example.test", "Secret note"]) expect(text).not.toContain(secret);
  });

  it("alone, reaches nothing else: no participant read or write, no contacts, no instances (403)", async () => {
    const who = { key: keys.attendance.key };
    for (const [method, path, body] of [
      ["GET", "/api/v1/participants"],
      ["GET", `/api/v1/participants/${child}`],
      ["PATCH", `/api/v1/participants/${child}`, { first_name: "Changed" }],
      ["POST", "/api/v1/participants", { instance_id: instanceId, user_id: "x", first_name: "X", surname: "Y" }],
      ["GET", `/api/v1/participants/${child}/contacts`],
      ["GET", "/api/v1/instances"],
      ["GET", `/api/v1/instances/${instanceId}`],
      ["POST", "/api/v1/blocks", { instance_id: instanceId, name: "Sneaky" }],
      ["GET", "/api/v1/audit-events"],
    ] as Array<[string, string, unknown?]>) {
      const answer = await call(app, method, path, { ...who, body });
      expect(answer.status, `${method} ${path}`).toBe(403);
      expect(JSON.stringify(answer.body)).not.toContain("Scope");
    }
  });

  it("with read, reads like a read key and still writes no participant", async () => {
    const who = { key: keys.readAttendance.key };
    expect((await call(app, "GET", `/api/v1/participants/${child}`, who)).status).toBe(200);
    expect((await call(app, "PATCH", `/api/v1/participants/${child}`, { ...who, body: { first_name: "Changed" } })).status).toBe(
      403,
    );
    const checkIn = await call(app, "POST", "/api/v1/attendance", { ...who, body: { participant_id: child, direction: "in" } });
    expect(checkIn.status).toBe(201);
  });

  it("is needed to record: a read key records nothing and sees no pickups' names", async () => {
    const who = { key: keys.read.key };
    expect(
      (await call(app, "POST", "/api/v1/attendance", { ...who, body: { participant_id: child, direction: "out" } })).status,
    ).toBe(403);
    expect((await call(app, "POST", "/api/v1/roll-calls", { ...who, body: { instance_id: instanceId } })).status).toBe(403);
    const roster = await call(app, "GET", `/api/v1/instances/${instanceId}/roster`, who);
    expect(roster.body.data.pickups_visible).toBe(false);
    expect(JSON.stringify(roster.body)).not.toContain("Aunt Pickup");
  });

  it("refuses scopes a key cannot have", async () => {
    const user = await tenant.addUser("staff", { withKey: false });
    for (const scopes of [
      ["write", "attendance"],
      ["care", "attendance"],
      ["attendance", "attendance"],
    ]) {
      const refused = await call(app, "POST", "/api/v1/api-keys/generate", { ...admin, body: { email: user.email, scopes } });
      expect(refused.status, JSON.stringify(scopes)).toBe(400);
    }
  });
});

/** Runs `work` as camp_api with the claims a request of this key carries, rolled back. */
async function asKey<T>(key: { id: string; userId: string }, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: t().url });
  await client.connect();
  try {
    await client.query("begin");
    const claims = {
      role: "camp_api",
      tenant_id: tenant.tenantId,
      sub: key.userId,
      app_role: "staff",
      via: "api_key",
      key_id: key.id,
    };
    await client.query("select set_config('role', 'camp_api', true), set_config('request.jwt.claims', $1, true)", [
      JSON.stringify(claims),
    ]);
    return await work(client);
  } finally {
    await client.query("rollback").catch(() => undefined);
    await client.end();
  }
}

const codeOf = async (client: pg.Client, text: string, values: unknown[] = []) => {
  await client.query("savepoint s");
  try {
    await client.query(text, values);
    await client.query("release savepoint s");
    return "ok";
  } catch (error) {
    await client.query("rollback to savepoint s");
    return (error as { code?: string }).code;
  }
};

describe("the attendance scope at the SQL level, as the API role", () => {
  it("reads pickups' names through their one door, and no phone, e-mail or note", async () => {
    await asKey(keys.attendance, async (client) => {
      const names = await client.query("select private.instance_pickups($1) as p", [instanceId]);
      expect(names.rows[0].p[child]).toEqual([{ id: pickup, name: "Aunt Pickup" }]);
      expect(await codeOf(client, "select phone, email, notes from public.participant_contacts")).toBe("42501");
      expect(await codeOf(client, "select private.care_contacts($1, false)", [child])).toBe("CA403");
      expect(await codeOf(client, "select * from public.attendance_codes")).toBe("42501");
    });
  });

  it("writes no participant, and records movements through the door", async () => {
    await asKey(keys.attendance, async (client) => {
      const updated = await client.query("update public.participants set first_name = 'Hacked' where id = $1", [child]);
      expect(updated.rowCount).toBe(0);
      expect(
        await codeOf(
          client,
          "insert into public.participants (instance_id, user_id, first_name, surname) values ($1, 'sneak', 'S', 'N')",
          [instanceId],
        ),
      ).toBe("42501");
      expect(
        await codeOf(
          client,
          "insert into public.attendance_movements (instance_id, participant_id, direction, recorded_at, nonce) values ($1, $2, 'in', now(), gen_random_uuid())",
          [instanceId, child],
        ),
      ).toBe("42501");
      const presence = (await client.query("select presence from public.participants where id = $1", [child])).rows[0]?.presence;
      const recorded = await client.query("select private.attendance_record($1, true) as r", [
        JSON.stringify({
          participant_id: child,
          direction: presence === "in" ? "out" : "in",
          nonce: randomUUID(),
          pickup_contact_id: pickup,
        }),
      ]);
      expect(["accepted", "conflict"]).toContain(recorded.rows[0].r.outcome);
    });
    const name = await t().admin("select first_name from public.participants where id = $1", [child]);
    expect(name.rows[0].first_name).toBe("Scope");
  });

  it("a read key records nothing and sees no names", async () => {
    await asKey(keys.read, async (client) => {
      expect(
        await codeOf(client, "select private.attendance_record($1, true)", [
          JSON.stringify({ participant_id: child, direction: "in", nonce: randomUUID() }),
        ]),
      ).toBe("CA403");
      expect((await client.query("select private.instance_pickups($1) as p", [instanceId])).rows[0].p).toBeNull();
    });
  });
});
