import { readdirSync, readFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { type CampStructure, tenantWithCamp } from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { type CallOptions, call, signToken, type TestApp, type TestTenant, testApp } from "./support/fixtures.ts";
import { ROOT } from "./support/processes.ts";
import { testWorker } from "./support/webhooks.ts";

/**
 * What a replay of a stored answer may return (docs/api.md, "Safe retries"):
 * an answer holding a secret is never stored, a replay is given only to a
 * caller who may still do the operation, an erased participant is in no
 * stored answer, and stored answers go after 24 hours.
 */

const t = useTestDatabase();
let app: TestApp;
let tenant: TestTenant;
let camp: CampStructure;

beforeAll(async () => {
  ({ tenant, camp } = await tenantWithCamp(t()));
  app = testApp(t().db, { WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true" });
});

const keyed = (key: string, options: CallOptions): CallOptions => ({
  ...options,
  headers: { ...options.headers, "Idempotency-Key": key },
});

/** Every stored answer of the database, as text: what an attacker with a copy of the table reads. */
async function storedAnswers(): Promise<string> {
  const { rows } = await t().admin("select coalesce(string_agg(k::text, E'\\n'), '') as text from public.idempotency_keys k");
  return rows[0].text as string;
}

const bearerOf = (email: string) => signToken({ sub: `sub-${email}`, email, email_verified: true });

describe("an answer holding a secret", () => {
  it("of generate is not stored; a retry answers 409 saying the secret is shown once, and issues no other key", async () => {
    const user = await tenant.addUser("staff", { withKey: false });
    const admin = { key: tenant.admin.key };
    const first = await call(app, "POST", "/api/v1/api-keys/generate", keyed("gen-1", { ...admin, body: { email: user.email } }));
    expect(first.status).toBe(201);
    const secret: string = first.body.data.key;
    expect(await storedAnswers()).not.toContain(secret);
    expect(await storedAnswers()).not.toContain(secret.slice(5));

    const retry = await call(app, "POST", "/api/v1/api-keys/generate", keyed("gen-1", { ...admin, body: { email: user.email } }));
    expect(retry.status).toBe(409);
    expect(retry.body.error.message).toMatch(/secret.*shown only once/);
    expect(JSON.stringify(retry.body)).not.toContain(secret);
    const keys = await t().admin("select count(*)::int as n from public.api_keys where user_id = $1", [user.userId]);
    expect(keys.rows[0].n).toBe(1);
    // The same key with another body is still the usual conflict.
    const other = await call(
      app,
      "POST",
      "/api/v1/api-keys/generate",
      keyed("gen-1", { ...admin, body: { email: tenant.admin.email } }),
    );
    expect(other.status).toBe(409);
    expect(other.body.error.message).toMatch(/different request/);
  });

  it("of regenerate is not stored, by key or by Bearer token", async () => {
    const user = await tenant.addUser("staff");
    const viaKey = await call(app, "POST", "/api/v1/api-keys/regenerate", keyed("regen-1", { key: user.key }));
    expect(viaKey.status).toBe(200);
    const token = await bearerOf(user.email);
    const viaToken = await call(app, "POST", "/api/v1/api-keys/regenerate", keyed("regen-2", { token }));
    expect(viaToken.status).toBe(200);
    const stored = await storedAnswers();
    for (const secret of [viaKey.body.data.key, viaToken.body.data.key]) expect(stored).not.toContain(secret.slice(5));
    const retry = await call(app, "POST", "/api/v1/api-keys/regenerate", keyed("regen-2", { token }));
    expect(retry.status).toBe(409);
    expect(retry.body.error.message).toMatch(/shown only once/);
    // The retry rotated nothing: the key the first regenerate gave still works.
    expect((await call(app, "GET", "/api/v1/api-keys/my-key", { key: viaToken.body.data.key })).status).toBe(200);
  });

  it("of a webhook endpoint's create and rotate-secret is not stored", async () => {
    const admin = { key: tenant.admin.key };
    const body = { url: "https://hooks.example.org/camp" };
    const created = await call(app, "POST", "/api/v1/webhook-endpoints", keyed("hook-1", { ...admin, body }));
    expect(created.status).toBe(201);
    const rotated = await call(
      app,
      "POST",
      `/api/v1/webhook-endpoints/${created.body.data.id}/rotate-secret`,
      keyed("hook-2", { ...admin, body: {} }),
    );
    expect(rotated.status).toBe(200);
    const stored = await storedAnswers();
    for (const secret of [created.body.data.secret, rotated.body.data.secret]) {
      expect(secret).toMatch(/^whsec_/);
      expect(stored).not.toContain(secret.slice(6));
    }
    const again = await call(app, "POST", "/api/v1/webhook-endpoints", keyed("hook-1", { ...admin, body }));
    expect(again.status).toBe(409);
    expect(again.body.error.message).toMatch(/shown only once/);
    const endpoints = await t().admin("select count(*)::int as n from public.webhook_endpoints where tenant_id = $1", [
      tenant.tenantId,
    ]);
    expect(endpoints.rows[0].n).toBe(1);
  });
});

describe("a replay", () => {
  /** A second admin of the tenant, so the first may be demoted. */
  async function demotable() {
    const admin = await tenant.addUser("admin");
    return {
      admin,
      demote: async () => {
        const res = await call(app, "PATCH", `/api/v1/users/${admin.userId}`, {
          key: tenant.admin.key,
          body: { role: "staff" },
        });
        expect(res.status, JSON.stringify(res.body)).toBe(200);
      },
    };
  }

  it("is refused (403) to an admin demoted to staff since: another user's key is not handed out again", async () => {
    const { admin, demote } = await demotable();
    const user = await tenant.addUser("staff", { withKey: false });
    const first = await call(
      app,
      "POST",
      "/api/v1/api-keys/generate",
      keyed("demoted-1", { key: admin.key, body: { email: user.email } }),
    );
    expect(first.status).toBe(201);
    await demote();
    const retry = await call(
      app,
      "POST",
      "/api/v1/api-keys/generate",
      keyed("demoted-1", { key: admin.key, body: { email: user.email } }),
    );
    expect(retry.status).toBe(403);
    expect(JSON.stringify(retry.body)).not.toContain(first.body.data.key);
  });

  it("of an admin's operation is refused once the caller is no admin, and given while they are", async () => {
    const { admin, demote } = await demotable();
    const body = { email: `new-${Date.now()}@example.test`, role: "staff" };
    const first = await call(app, "POST", "/api/v1/users", keyed("user-1", { key: admin.key, body }));
    expect(first.status).toBe(201);
    const replayed = await call(app, "POST", "/api/v1/users", keyed("user-1", { key: admin.key, body }));
    expect(replayed.status).toBe(201);
    expect(replayed.headers.get("idempotent-replayed")).toBe("true");
    await demote();
    const refused = await call(app, "POST", "/api/v1/users", keyed("user-1", { key: admin.key, body }));
    expect(refused.status).toBe(403);
    expect(refused.body.error.message).toMatch(/admin/);
    expect(JSON.stringify(refused.body)).not.toContain(body.email);
  });

  it("of a create that overrode room capacity (an admin's right the database checks) is refused once the caller is no admin", async () => {
    const { admin, demote } = await demotable();
    const path = "/api/v1/participants?override_capacity=true";
    const body = { instance_id: camp.instanceId, user_id: `over-${Date.now()}`, first_name: "Ova", surname: "Full" };
    expect((await call(app, "POST", path, keyed("override-1", { key: admin.key, body }))).status).toBe(201);
    await demote();
    expect((await call(app, "POST", path, keyed("override-1", { key: admin.key, body }))).status).toBe(403);
  });

  it("of a staff operation is still given after the caller was demoted (only the rights it used count)", async () => {
    const { admin, demote } = await demotable();
    const body = { name: `Camp ${Date.now()}` };
    expect((await call(app, "POST", "/api/v1/instances", keyed("instance-1", { key: admin.key, body }))).status).toBe(201);
    await demote();
    const replayed = await call(app, "POST", "/api/v1/instances", keyed("instance-1", { key: admin.key, body }));
    expect(replayed.status).toBe(201);
    expect(replayed.headers.get("idempotent-replayed")).toBe("true");
  });

  it("of a care write is refused once the caller's care access is gone", async () => {
    const user = await tenant.addUser("staff", { withKey: false });
    const admin = { key: tenant.admin.key };
    expect((await call(app, "PATCH", `/api/v1/users/${user.userId}`, { ...admin, body: { care_access: "write" } })).status).toBe(
      200,
    );
    const issued = await call(app, "POST", "/api/v1/api-keys/generate", {
      ...admin,
      body: { email: user.email, scopes: ["read", "write", "care"] },
    });
    const carer = { key: issued.body.data.key as string };
    const participant = await call(app, "POST", "/api/v1/participants", {
      ...admin,
      body: { instance_id: camp.instanceId, user_id: `care-${Date.now()}`, first_name: "Cy", surname: "Care" },
    });
    const path = `/api/v1/participants/${participant.body.data.id}/contacts`;
    const body = { name: "Mum Careful", phone: "+44 20 7946 0958" };
    expect((await call(app, "POST", path, keyed("contact-1", { ...carer, body }))).status).toBe(201);
    expect((await call(app, "POST", path, keyed("contact-1", { ...carer, body }))).status).toBe(201);
    expect((await call(app, "PATCH", `/api/v1/users/${user.userId}`, { ...admin, body: { care_access: "none" } })).status).toBe(
      200,
    );
    const refused = await call(app, "POST", path, keyed("contact-1", { ...carer, body }));
    expect(refused.status).toBe(403);
    expect(JSON.stringify(refused.body)).not.toContain("Mum Careful");
  });

  it("is checked for every admin-only operation: role checks go through requireAdmin, which records the right", () => {
    // A GET is never stored, so a read that shows more to admins may compare the role itself.
    const found: string[] = [];
    for (const file of readdirSync(`${ROOT}functions`, { recursive: true, encoding: "utf8" })) {
      if (!file.endsWith(".ts")) continue;
      const source = readFileSync(`${ROOT}functions/${file}`, "utf8");
      const uses = source.match(/\.role\s*[!=]==?\s*["']admin["']/g) ?? [];
      if (uses.length === 0 || file === "http/replay-rules.ts") continue;
      const isByIdRead =
        file === "api-keys/routes.ts" && uses.length === 1 && /\.openapi\(byId,[\s\S]*?principal\.role !== "admin"/.test(source);
      if (!isByIdRead) found.push(`${file} (${uses.length})`);
    }
    expect(found).toEqual([]);
  });

  it("is refused to a deactivated user, as every request is", async () => {
    const user = await tenant.addUser("staff");
    const body = { name: `Camp ${Date.now()}` };
    expect((await call(app, "POST", "/api/v1/instances", keyed("inactive-1", { key: user.key, body }))).status).toBe(201);
    await t().admin("update public.users set active = false where id = $1", [user.userId]);
    expect((await call(app, "POST", "/api/v1/instances", keyed("inactive-1", { key: user.key, body }))).status).toBe(401);
  });
});

describe("an erased participant", () => {
  it("is in no stored answer: a retry of its create answers 409 and creates no one again", async () => {
    const admin = { key: tenant.admin.key };
    const body = { instance_id: camp.instanceId, user_id: "erase-replay-1", first_name: "Rowan", surname: "Forgotten" };
    const first = await call(app, "POST", "/api/v1/participants", keyed("erase-1", { ...admin, body }));
    expect(first.status).toBe(201);
    expect(await storedAnswers()).toContain("Forgotten");
    expect((await call(app, "POST", `/api/v1/participants/${first.body.data.id}/erase`, admin)).status).toBe(200);
    expect(await storedAnswers()).not.toContain("Forgotten");
    const retry = await call(app, "POST", "/api/v1/participants", keyed("erase-1", { ...admin, body }));
    expect(retry.status).toBe(409);
    expect(retry.body.error.message).toMatch(/erased/);
    const again = await t().admin("select count(*)::int as n from public.participants where user_id = $1", ["erase-replay-1"]);
    expect(again.rows[0].n).toBe(0);
  });
});

describe("retention", () => {
  it("removes stored answers past their 24 hours in the workers' hourly housekeeping, whichever tenant wrote them", async () => {
    const admin = { key: tenant.admin.key };
    for (const key of ["old-1", "old-2", "fresh-1"]) {
      expect((await call(app, "POST", "/api/v1/instances", keyed(key, { ...admin, body: { name: `Camp ${key}` } }))).status).toBe(
        201,
      );
    }
    await t().admin(
      "update public.idempotency_keys set created_at = now() - interval '25 hours', expires_at = now() - interval '1 hour' where key like 'old-%'",
    );
    await t().admin("update private.webhook_housekeeping set last_run = '-infinity'");
    const worker = testWorker(t().db);
    await worker.drain(1_000);
    const left = await t().admin(
      "select key from public.idempotency_keys where key in ('old-1', 'old-2', 'fresh-1') order by key",
    );
    expect(left.rows.map((r: { key: string }) => r.key)).toEqual(["fresh-1"]);
  });
});
