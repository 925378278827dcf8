import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CampStructure, tenantWithCamp } from "./support/camp-structure.ts";
import { countingDatabase, useTestDatabase } from "./support/database.ts";
import { call, type TestApp, type TestTenant, testApp } from "./support/fixtures.ts";

/**
 * Database round trips per request (each pg query call is one: pg waits for
 * Postgres before it sends the next): a read in one (begin, the key check with
 * the tenant scope, the statement and commit in one text), a single-row write
 * in two (the key check that opens the tenant scope, then the statement with
 * its commit), three under an Idempotency-Key. Counted on a one-connection
 * pool, so every statement has been prepared by the requests before.
 */

const t = useTestDatabase();
let tenant: TestTenant;
let camp: CampStructure;
beforeAll(async () => {
  ({ tenant, camp } = await tenantWithCamp(t()));
});

function countingApp(prepare: boolean) {
  const { db, sent } = countingDatabase(t().url, prepare);
  return { db, app: testApp(db), sent };
}

/** The round trips of a request, after the same request has run once (so its statements are prepared). */
async function roundTrips(
  subject: { app: TestApp; sent: string[] },
  method: string,
  path: () => string,
  options: { body?: () => unknown; headers?: () => Record<string, string>; status: number },
) {
  const once = async () => {
    subject.sent.length = 0;
    const response = await call(subject.app, method, path(), {
      key: tenant.admin.key,
      body: options.body?.(),
      headers: options.headers?.(),
    });
    expect(response.status, JSON.stringify(response.body)).toBe(options.status);
    return subject.sent.length;
  };
  await once();
  return once();
}

let n = 0;
const participant = () => ({ user_id: `rt-${++n}`, instance_id: camp.instanceId, first_name: "Ada", surname: "Byron" });

describe.each([
  { prepare: true, read: 1, callerRead: 2, write: 2, keyed: 3 },
  // Behind a transaction-mode pooler (DB_PREPARED_STATEMENTS=false) the key check and the commit go on their own.
  { prepare: false, read: 3, callerRead: 3, write: 3, keyed: 4 },
])("round trips with prepared statements $prepare", ({ prepare, read, callerRead, write, keyed }) => {
  let subject: ReturnType<typeof countingApp>;
  let participantId: string;
  beforeAll(async () => {
    subject = countingApp(prepare);
    const created = await call(subject.app, "POST", "/api/v1/participants", { key: tenant.admin.key, body: participant() });
    participantId = (created.body as { data: { id: string } }).data.id;
  });
  afterAll(() => subject.db.close());

  it("reads one participant, a page of participants, one instance and a page of instances", async () => {
    expect(await roundTrips(subject, "GET", () => `/api/v1/participants/${participantId}`, { status: 200 })).toBe(read);
    expect(await roundTrips(subject, "GET", () => `/api/v1/participants?instance_id=${camp.instanceId}`, { status: 200 })).toBe(
      read,
    );
    expect(await roundTrips(subject, "GET", () => `/api/v1/instances/${camp.instanceId}`, { status: 200 })).toBe(read);
    expect(await roundTrips(subject, "GET", () => "/api/v1/instances", { status: 200 })).toBe(read);
    // A route that reads the caller before its query (admins only) checks the key on its own first.
    expect(await roundTrips(subject, "GET", () => "/api/v1/users", { status: 200 })).toBe(callerRead);
  });

  it("still checks the key of a read on every request: a revoked key is refused at once, and a made-up one", async () => {
    const staff = await tenant.addUser("staff");
    const path = `/api/v1/participants/${participantId}`;
    expect((await call(subject.app, "GET", path, { key: staff.key })).status).toBe(200);
    expect((await call(subject.app, "GET", path, { key: staff.key })).status).toBe(200);
    await t().admin("update public.api_keys set revoked_at = now() where user_id = $1", [staff.userId]);
    const revoked = await call(subject.app, "GET", path, { key: staff.key });
    expect(revoked.status).toBe(401);
    expect(revoked.headers.get("www-authenticate")).toBeTruthy();
    const madeUp = await call(subject.app, "GET", path, { key: `camp_${"A".repeat(43)}` });
    expect(madeUp.status).toBe(401);
    // A read refused before it reaches the database (a bad id) still answers 401 to a bad key.
    expect((await call(subject.app, "GET", "/api/v1/participants/not-a-uuid", { key: staff.key })).status).toBe(401);
    // The connection is kept: the one-connection pool serves the next request.
    expect((await call(subject.app, "GET", path, { key: tenant.admin.key })).status).toBe(200);
  });

  it("creates a participant, audit trail included", async () => {
    expect(await roundTrips(subject, "POST", () => "/api/v1/participants", { body: participant, status: 201 })).toBe(write);
  });

  it("creates a participant under an Idempotency-Key, and replays it", async () => {
    const withKey = { body: participant, headers: () => ({ "Idempotency-Key": `rt-${n}` }), status: 201 };
    expect(await roundTrips(subject, "POST", () => "/api/v1/participants", withKey)).toBe(keyed);
    // A replay: the lookup rides with the key's, then the transaction ends without writing.
    const body = { ...participant(), user_id: `again-${prepare}` };
    const again = () =>
      call(subject.app, "POST", "/api/v1/participants", {
        key: tenant.admin.key,
        body,
        headers: { "Idempotency-Key": `again-${prepare}` },
      });
    expect((await again()).status).toBe(201);
    subject.sent.length = 0;
    const replay = await again();
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(subject.sent.length).toBe(2);
  });

  it("updates a participant (the update, then its commit)", async () => {
    expect(
      await roundTrips(subject, "PATCH", () => `/api/v1/participants/${participantId}`, {
        body: () => ({ surname: `S${++n}` }),
        status: 200,
      }),
    ).toBe(3);
  });
});
