import { randomBytes } from "node:crypto";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Database } from "../functions/db/database.ts";
import { MemoryPhotoStore } from "../functions/photos/memory-store.ts";
import { addBlock, addRoom, type CampStructure, tenantWithCamp } from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { type CallOptions, type CallResult, call, signToken, type TestTenant } from "./support/fixtures.ts";
import { image } from "./support/images.ts";
import { multipart, newParticipant, photoApp } from "./support/photos.ts";

/**
 * A request holds at most one database connection at a time (issue 27, item
 * 2): holding one while asking for a second let a few concurrent idempotent
 * photo uploads hold the whole pool, each waiting for one more, while every
 * tenant's requests waited for a connection and got 503.
 */

const t = useTestDatabase();

/** A Database whose pool records, per request, the most connections it had out at once. */
function countingCheckouts(url: string, options: { max: number; connectTimeoutMs?: number }) {
  const db = new Database(url, options);
  let out = 0;
  let most = 0;
  const connect = db.pool.connect.bind(db.pool) as () => Promise<pg.PoolClient>;
  (db.pool as unknown as { connect: () => Promise<pg.PoolClient> }).connect = async () => {
    const client = await connect();
    most = Math.max(most, ++out);
    const release = client.release.bind(client);
    let released = false;
    client.release = (error?: boolean | Error) => {
      if (!released) out--;
      released = true;
      client.release = release;
      return release(error);
    };
    return client;
  };
  return {
    db,
    /** The most connections out at once since the last call. */
    takeMost() {
      const value = most;
      most = out;
      return value;
    },
  };
}

const photo = async () => {
  const { body, contentType } = multipart([{ name: "photo", data: await image("png"), filename: "p.png", type: "image/png" }]);
  return { raw: new Uint8Array(body), headers: { "Content-Type": contentType } };
};

describe("concurrent idempotent photo uploads", () => {
  it("leave the pool to other tenants: every upload completes and the other tenant never gets a 503", async () => {
    // A small pool. Held connections that each wait for a second never come back (before the fix, the
    // other tenant's reads got 503 after the wait for a connection); uploads that finish do, however
    // slow a busy machine makes them, so the wait is generous: this asserts completion, not timing.
    const db = new Database(t().url, { max: 4, connectTimeoutMs: 8_000 });
    try {
      const app = photoApp(db, new MemoryPhotoStore());
      const uploader = await tenantWithCamp(t());
      const other = await tenantWithCamp(t());
      const participants = await Promise.all(
        Array.from({ length: 12 }, () => newParticipant(t(), uploader.tenant.tenantId, uploader.camp.instanceId)),
      );
      const body = await photo();
      const uploads = participants.map((id) =>
        call(app, "POST", `/api/v1/photos/user/${id}`, {
          key: uploader.tenant.admin.key,
          raw: body.raw,
          headers: { ...body.headers, "Idempotency-Key": `upload-${id}` },
        }),
      );
      // The other tenant's reads, four at a time, while the uploads run.
      const reads: Promise<CallResult>[] = [];
      for (let round = 0; round < 5; round++) {
        const batch = Array.from({ length: 4 }, () =>
          call(app, "GET", `/api/v1/instances/${other.camp.instanceId}`, { key: other.tenant.admin.key }),
        );
        reads.push(...batch);
        await Promise.all(batch);
      }
      const uploaded = await Promise.all(uploads);
      const read = await Promise.all(reads);
      expect(read.map((r) => r.status)).toEqual(read.map(() => 200));
      expect(uploaded.map((r) => r.status)).toEqual(uploaded.map(() => 200));
      // A retry of each is a replay, not a second upload.
      const again = await call(app, "POST", `/api/v1/photos/user/${participants[0]}`, {
        key: uploader.tenant.admin.key,
        raw: body.raw,
        headers: { ...body.headers, "Idempotency-Key": `upload-${participants[0]}` },
      });
      expect(again.status).toBe(200);
      expect(again.headers.get("idempotent-replayed")).toBe("true");
    } finally {
      await db.close();
    }
  });
});

describe("the data layer", () => {
  it("refuses a second connection inside a request's tenant scope", async () => {
    const { tenant } = await tenantWithCamp(t());
    const scope = t().db.scopeFor({ tenantId: tenant.tenantId, userId: tenant.admin.userId, role: "admin" });
    await expect(scope.run(() => scope.run((sql) => sql.query("select 1")))).rejects.toThrow(/second database connection/);
    // One after the other is fine.
    expect(await scope.run((sql) => sql.one<{ n: number }>("select 1 as n"))).toEqual({ n: 1 });
  });
});

interface Fixture {
  tenant: TestTenant;
  camp: CampStructure;
  participantId: string;
  staff: { userId: string; key: string; email: string };
}

interface Sample extends CallOptions {
  path: string;
  /** Statuses this request may answer; never a 5xx. */
  ok?: number[];
}

const fresh = () => randomBytes(4).toString("hex");

/** A request for each operation that reaches its data access, with ids of this tenant's records. */
async function sample(f: Fixture, method: string, path: string): Promise<Sample> {
  const admin = f.tenant.admin.key;
  const insert = async (text: string, values: unknown[]) => ((await t().admin(text, values)).rows[0] as { id: string }).id;
  const instance = () =>
    insert("insert into public.instances (tenant_id, name) values ($1, $2) returning id", [f.tenant.tenantId, fresh()]);
  const csv = "user_id,instance_id,first_name,surname\n";
  const participant = () => ({ user_id: fresh(), instance_id: f.camp.instanceId, first_name: "Ada", surname: "Byron" });
  switch (`${method} ${path}`) {
    case "POST /api/v1/api-keys/generate": {
      const user = await f.tenant.addUser("staff", { withKey: false });
      return { path, key: admin, body: { email: user.email } };
    }
    case "GET /api/v1/api-keys/{id}":
    case "DELETE /api/v1/api-keys/{id}": {
      const user = await f.tenant.addUser("staff");
      const [key] = (await t().admin("select id from public.api_keys where user_id = $1", [user.userId])).rows;
      return { path: path.replace("{id}", key.id), key: admin };
    }
    case "POST /api/v1/api-keys/regenerate":
    case "DELETE /api/v1/api-keys/revoke":
      return { path, key: (await f.tenant.addUser("staff")).key };
    case "POST /api/v1/users":
      return { path, key: admin, body: { email: `${fresh()}@example.test`, role: "staff" } };
    case "GET /api/v1/users/{id}":
      return { path: path.replace("{id}", f.staff.userId), key: admin };
    case "PATCH /api/v1/users/{id}":
      return { path: path.replace("{id}", (await f.tenant.addUser("staff")).userId), key: admin, body: { role: "admin" } };
    case "POST /api/v1/instances":
      return { path, key: admin, body: { name: fresh() } };
    case "GET /api/v1/instances/{id}":
      return { path: path.replace("{id}", f.camp.instanceId), key: admin };
    case "PUT /api/v1/instances/{id}":
    case "PATCH /api/v1/instances/{id}":
      return { path: path.replace("{id}", f.camp.instanceId), key: admin, body: { location: fresh() } };
    case "DELETE /api/v1/instances/{id}":
      return { path: path.replace("{id}", await instance()), key: admin };
    case "POST /api/v1/groups/supergroups":
      return { path, key: admin, body: { name: fresh(), instance_id: f.camp.instanceId } };
    case "GET /api/v1/groups/supergroups/{id}":
    case "PUT /api/v1/groups/supergroups/{id}":
    case "PATCH /api/v1/groups/supergroups/{id}":
      return {
        path: path.replace("{id}", f.camp.supergroupId),
        key: admin,
        body: method === "GET" ? undefined : { purpose: "x" },
      };
    case "DELETE /api/v1/groups/supergroups/{id}": {
      const id = await insert("insert into public.supergroups (tenant_id, instance_id, name) values ($1, $2, $3) returning id", [
        f.tenant.tenantId,
        f.camp.instanceId,
        fresh(),
      ]);
      return { path: path.replace("{id}", id), key: admin };
    }
    case "POST /api/v1/groups/subgroups":
      return {
        path,
        key: admin,
        body: { name: fresh(), instance_id: f.camp.instanceId, parent_supergroup_id: f.camp.supergroupId },
      };
    case "GET /api/v1/groups/subgroups/{id}":
    case "PUT /api/v1/groups/subgroups/{id}":
    case "PATCH /api/v1/groups/subgroups/{id}":
      return { path: path.replace("{id}", f.camp.subgroupId), key: admin, body: method === "GET" ? undefined : { purpose: "x" } };
    case "DELETE /api/v1/groups/subgroups/{id}": {
      const id = await insert(
        "insert into public.subgroups (tenant_id, instance_id, parent_supergroup_id, name) values ($1, $2, $3, $4) returning id",
        [f.tenant.tenantId, f.camp.instanceId, f.camp.supergroupId, fresh()],
      );
      return { path: path.replace("{id}", id), key: admin };
    }
    case "POST /api/v1/blocks":
      return { path, key: admin, body: { name: fresh(), instance_id: f.camp.instanceId } };
    case "GET /api/v1/blocks/{id}":
    case "PUT /api/v1/blocks/{id}":
    case "PATCH /api/v1/blocks/{id}":
      return {
        path: path.replace("{id}", f.camp.blockId),
        key: admin,
        body: method === "GET" ? undefined : { description: "x" },
      };
    case "DELETE /api/v1/blocks/{id}":
      return { path: path.replace("{id}", await addBlock(t(), f.tenant.tenantId, f.camp.instanceId, fresh())), key: admin };
    case "POST /api/v1/rooms":
      return { path, key: admin, body: { room_number: fresh(), block_id: f.camp.blockId, instance_id: f.camp.instanceId } };
    case "GET /api/v1/rooms/{id}":
    case "PUT /api/v1/rooms/{id}":
    case "PATCH /api/v1/rooms/{id}":
      return { path: path.replace("{id}", f.camp.roomId), key: admin, body: method === "GET" ? undefined : { name: "x" } };
    case "DELETE /api/v1/rooms/{id}":
      return {
        path: path.replace("{id}", await addRoom(t(), f.tenant.tenantId, f.camp.instanceId, f.camp.blockId, fresh())),
        key: admin,
      };
    case "POST /api/v1/participants/bulk":
      return { path, key: admin, body: { participants: [participant(), participant()] } };
    case "POST /api/v1/participants/assign":
      return {
        path,
        key: admin,
        body: { assignments: [{ participant_id: f.participantId, room_id: f.camp.roomId }] },
      };
    case "POST /api/v1/participants/import":
      return {
        path: `${path}?instance_id=${f.camp.instanceId}`,
        key: admin,
        raw: `${csv}${fresh()},${f.camp.instanceId},Ada,Byron\n`,
        headers: { "Content-Type": "text/csv" },
      };
    case "POST /api/v1/participants/{id}/erase":
    case "DELETE /api/v1/participants/{id}":
      return {
        path: path.replace("{id}", await newParticipant(t(), f.tenant.tenantId, f.camp.instanceId)),
        key: admin,
        // Erasure may ask for a confirmation in its body; either way it reaches the database.
        body: method === "POST" ? {} : undefined,
        ok: [200, 400],
      };
    case "POST /api/v1/participants":
      return { path, key: admin, body: participant() };
    case "GET /api/v1/participants/{id}":
    case "PUT /api/v1/participants/{id}":
    case "PATCH /api/v1/participants/{id}":
      return { path: path.replace("{id}", f.participantId), key: admin, body: method === "GET" ? undefined : { rank: "x" } };
    case "POST /api/v1/photos/user/{userId}":
      return { path: path.replace("{userId}", f.participantId), key: admin, ...(await photo()) };
    case "GET /api/v1/photos/user/{userId}":
      return { path: path.replace("{userId}", f.participantId), key: admin, ok: [200, 404] };
    case "POST /api/v1/webhook-endpoints":
      return { path, key: admin, body: { url: "https://hooks.example.org/camp", types: ["participant.created"] } };
    case "GET /api/v1/events":
      return { path: `${path}?after=now`, key: admin };
    default:
      // An operation added since: its path ids are this tenant's participant's, a body empty.
      return {
        path: path.replace(/\{\w+\}/g, f.participantId),
        key: admin,
        body: ["POST", "PUT", "PATCH"].includes(method) ? {} : undefined,
        ok: [200, 201, 204, 400, 404, 409],
      };
  }
}

describe("every operation of the OpenAPI document", () => {
  const counting = () => countingCheckouts(t().url, { max: 10 });
  let subject: ReturnType<typeof counting>;
  let app: ReturnType<typeof photoApp>;
  let f: Fixture;
  beforeAll(async () => {
    subject = counting();
    app = photoApp(subject.db, new MemoryPhotoStore(), { RATE_LIMIT_PER_MINUTE: "100000" });
    const { tenant, camp } = await tenantWithCamp(t());
    // The admin's key may reach the care routes too (admins have care access; a key needs the care scope).
    await t().admin("update public.api_keys set scopes = '{read,write,care}' where user_id = $1 and revoked_at is null", [
      tenant.admin.userId,
    ]);
    const staff = await tenant.addUser("staff");
    f = {
      tenant,
      camp,
      participantId: await newParticipant(t(), tenant.tenantId, camp.instanceId),
      staff: { userId: staff.userId, key: staff.key as string, email: staff.email },
    };
  });
  afterAll(() => subject.db.close());

  it("holds at most one connection at a time, with an API key, a Bearer token and an Idempotency-Key", async () => {
    const document = (await call(app, "GET", "/api/v1/openapi.json")).body as {
      paths: Record<string, Record<string, unknown>>;
    };
    const token = await signToken({ sub: `sub-${fresh()}`, email: f.tenant.admin.email, email_verified: true });
    const seen: string[] = [];
    const problems: string[] = [];
    for (const [path, item] of Object.entries(document.paths)) {
      for (const method of Object.keys(item).filter((m) => ["get", "post", "put", "patch", "delete"].includes(m))) {
        const verb = method.toUpperCase();
        const variants: Array<(s: Sample) => Sample> = [(s) => s];
        if (verb === "GET") variants.push((s) => ({ ...s, key: undefined, token }));
        if (verb === "POST") variants.push((s) => ({ ...s, headers: { ...s.headers, "Idempotency-Key": fresh() } }));
        for (const [n, variant] of variants.entries()) {
          const request = variant(await sample(f, verb, path));
          subject.takeMost();
          const response = await call(app, verb, request.path, request);
          const most = subject.takeMost();
          const label = `${verb} ${path} (${["key", verb === "GET" ? "bearer" : "idempotency-key"][n]})`;
          seen.push(label);
          if (most > 1) problems.push(`${label}: ${most} connections at once`);
          if (response.status >= 500 || !(request.ok ?? [200, 201]).includes(response.status)) {
            problems.push(`${label}: ${response.status} ${JSON.stringify(response.body).slice(0, 200)}`);
          }
        }
      }
    }
    expect(problems).toEqual([]);
    expect(seen.length).toBeGreaterThan(50);
  });
});
