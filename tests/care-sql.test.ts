import type pg from "pg";
import { beforeAll, describe, expect, it } from "vitest";
import { useTestDatabase } from "./support/database.ts";

/**
 * Need to know, held by the database, tested at the SQL level as the API role:
 * camp_api cannot touch the care tables at all; the care functions let a
 * principal in only as far as its user's care_access and its key's scopes
 * (read from users and api_keys by the claims) allow; behind them, camp_care's
 * policies still show a principal without access zero rows and refuse its
 * writes; and every read is in the audit trail of the reading transaction.
 */

const t = useTestDatabase();

const CARE_TABLES = [
  "participant_contacts",
  "participant_care",
  "participant_consents",
  "participant_medications",
  "medication_administrations",
];

interface Tenant {
  tenant: string;
  admin: string;
  staffNone: string;
  staffRead: string;
  participant: string;
  keys: Record<"care" | "noCare" | "readCare" | "revokedCare", string>;
}

async function seed(label: string): Promise<Tenant> {
  const one = async (text: string, values: unknown[] = []) => (await t().admin(text, values)).rows[0]?.id as string;
  const tenant = await one("insert into tenants (name) values ($1) returning id", [label]);
  const user = (email: string, role: string) =>
    one("insert into users (tenant_id, email, role) values ($1, $2, $3) returning id", [tenant, email, role]);
  const admin = await user(`admin-${label}@example.test`, "admin");
  const staffNone = await user(`none-${label}@example.test`, "staff");
  const staffRead = await user(`read-${label}@example.test`, "staff");
  await t().admin("update users set care_access = 'read' where id = $1", [staffRead]);
  const key = (owner: string, scopes: string, revoked = false) =>
    one(
      `insert into api_keys (tenant_id, user_id, key_hash, key_prefix, scopes, revoked_at)
       values ($1, $2, sha256(gen_random_uuid()::text::bytea), 'camp_test', $3, $4) returning id`,
      [tenant, owner, scopes, revoked ? new Date() : null],
    );
  const keys = {
    revokedCare: await key(admin, "{read,write,care}", true),
    care: await key(admin, "{read,write,care}"),
    noCare: await key(staffRead, "{read,write}"),
    readCare: await key(staffNone, "{read,care}"),
  };
  const instance = await one("insert into instances (tenant_id, name) values ($1, 'Camp') returning id", [tenant]);
  const participant = await one(
    "insert into participants (tenant_id, instance_id, user_id, first_name, surname) values ($1, $2, 'u1', 'Ada', 'Lovelace') returning id",
    [tenant, instance],
  );
  await t().admin(
    "insert into participant_contacts (tenant_id, participant_id, name, phone, emergency, emergency_order) values ($1, $2, 'Mum', '+441632960001', true, 1)",
    [tenant, participant],
  );
  await t().admin(
    `insert into participant_care (tenant_id, id, allergies) values ($1, $2, '[{"name": "peanut", "severity": "anaphylactic"}]')`,
    [tenant, participant],
  );
  await t().admin(
    "insert into participant_consents (tenant_id, participant_id, kind, status) values ($1, $2, 'photo', 'granted')",
    [tenant, participant],
  );
  await t().admin(
    "insert into participant_medications (tenant_id, participant_id, name, times) values ($1, $2, 'Insulin', '{08:00}')",
    [tenant, participant],
  );
  await t().admin(
    `insert into medication_administrations (tenant_id, participant_id, medication_name, outcome, administered_at)
     values ($1, $2, 'Insulin', 'given', now())`,
    [tenant, participant],
  );
  return { tenant, admin, staffNone, staffRead, participant, keys };
}

interface Claims {
  tenant_id?: string;
  sub?: string;
  via?: string;
  key_id?: string;
}

/** Runs `work` as `role` with these claims, in a transaction that is always rolled back. */
async function as<T>(role: string, claims: Claims, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await t().db.pool.connect();
  try {
    await client.query("begin");
    await client.query(`set local role ${role}`);
    await client.query("select set_config('request.jwt.claims', $1, true)", [JSON.stringify(claims)]);
    return await work(client);
  } finally {
    await client.query("rollback");
    client.release();
  }
}

/** The SQLSTATE a statement raises as `role`, or "ok". */
async function outcome(role: string, claims: Claims, text: string, values: unknown[] = []): Promise<string> {
  return as(role, claims, async (client) => {
    try {
      await client.query(text, values);
      return "ok";
    } catch (error) {
      return (error as { code?: string }).code ?? "?";
    }
  });
}

let a: Tenant;
let b: Tenant;
const bearer = (tenant: Tenant, user: string): Claims => ({ tenant_id: tenant.tenant, sub: user, via: "bearer" });
const withKey = (tenant: Tenant, user: string, key: string): Claims => ({
  tenant_id: tenant.tenant,
  sub: user,
  via: "api_key",
  key_id: key,
});

beforeAll(async () => {
  a = await seed("care-a");
  b = await seed("care-b");
});

/** Every door: [name, SQL, need]. */
const doors = (p: string): Array<[string, string, "read" | "write"]> => [
  ["list contacts", `select private.care_contacts('${p}', true)`, "read"],
  ["create a contact", `select private.care_contact_create('${p}', '{"name": "Dad"}')`, "write"],
  ["read the care record", `select private.care_record('${p}')`, "read"],
  ["write the care record", `select private.care_record_write('${p}', '{"care_notes": "x"}', false, null)`, "write"],
  ["read consents", `select private.care_consents('${p}')`, "read"],
  ["record consents", `select private.care_consents_record('${p}', '{"photo": "granted"}')`, "write"],
];

describe("care data as the API role", () => {
  it("camp_api holds no privilege on the care tables: even an admin with care access is refused every statement", async () => {
    const claims = bearer(a, a.admin);
    for (const table of CARE_TABLES) {
      for (const text of [
        `select count(*) from public.${table}`,
        `update public.${table} set tenant_id = tenant_id`,
        `delete from public.${table}`,
      ]) {
        expect(`${text}: ${await outcome("camp_api", claims, text)}`).toBe(`${text}: 42501`);
      }
    }
  });

  it("holds no rights of camp_care, the role behind the doors, which is no superuser, bypasses no RLS and cannot log in", async () => {
    const roles = await t().admin(
      `select pg_has_role('camp_api', 'camp_care', 'member') as api_in_care, r.rolsuper, r.rolbypassrls, r.rolcanlogin
       from pg_roles r where r.rolname = 'camp_care'`,
    );
    expect(roles.rows[0]).toEqual({ api_in_care: false, rolsuper: false, rolbypassrls: false, rolcanlogin: false });
  });

  it("lets a user with care_access none in through no door (403), whatever the credential", async () => {
    for (const claims of [bearer(a, a.staffNone), withKey(a, a.staffNone, a.keys.readCare)]) {
      for (const [name, text] of doors(a.participant)) {
        expect(`${name}: ${await outcome("camp_api", claims, text)}`).toBe(`${name}: CA403`);
      }
      expect(await outcome("camp_api", claims, "select * from private.severe_allergy_participants()")).toBe("CA403");
    }
  });

  it("refuses a key without the care scope of a user who has access, and a revoked key", async () => {
    await t().admin("update users set care_access = 'write' where id = $1", [a.staffRead]);
    try {
      for (const claims of [withKey(a, a.staffRead, a.keys.noCare), withKey(a, a.admin, a.keys.revokedCare)]) {
        for (const [name, text] of doors(a.participant)) {
          expect(`${name}: ${await outcome("camp_api", claims, text)}`).toBe(`${name}: CA403`);
        }
      }
    } finally {
      await t().admin("update users set care_access = 'read' where id = $1", [a.staffRead]);
    }
  });

  it("lets care_access read read but not write, and a read-only care key of a writer only read", async () => {
    await t().admin("update users set care_access = 'write' where id = $1", [a.staffNone]);
    try {
      for (const claims of [bearer(a, a.staffRead), withKey(a, a.staffNone, a.keys.readCare)]) {
        for (const [name, text, need] of doors(a.participant)) {
          expect(`${name}: ${await outcome("camp_api", claims, text)}`).toBe(`${name}: ${need === "read" ? "ok" : "CA403"}`);
        }
      }
    } finally {
      await t().admin("update users set care_access = 'none' where id = $1", [a.staffNone]);
    }
  });

  it("lets an admin with a care key through every door of its own tenant", async () => {
    for (const [name, text] of doors(a.participant)) {
      expect(`${name}: ${await outcome("camp_api", withKey(a, a.admin, a.keys.care), text)}`).toBe(`${name}: ok`);
    }
  });

  it("finds no participant of another tenant (404), and no claims reach nothing (403)", async () => {
    for (const [name, text] of doors(b.participant)) {
      expect(`${name}: ${await outcome("camp_api", bearer(a, a.admin), text)}`).toBe(`${name}: CA404`);
      expect(`${name}: ${await outcome("camp_api", {}, text)}`).toBe(`${name}: CA403`);
      // A claim naming tenant B's user while in tenant A is no user at all.
      expect(`${name}: ${await outcome("camp_api", { ...bearer(a, b.admin) }, text)}`).toBe(`${name}: CA403`);
    }
  });

  it("never reaches care data from the participant rows it can read", async () => {
    const row = await as("camp_api", bearer(a, a.staffNone), async (client) =>
      (await client.query("select to_jsonb(p) as row from public.participants p")).rows.map((r) => JSON.stringify(r.row)),
    );
    expect(row.join("")).not.toMatch(/peanut|\+441632960001|Mum/);
  });

  it("records each read in the audit trail of the reading transaction (action read, actor, participant)", async () => {
    const events = await as("camp_api", withKey(a, a.admin, a.keys.care), async (client) => {
      await client.query("select private.care_record($1)", [a.participant]);
      await client.query("select private.care_contacts($1, false)", [a.participant]);
      await client.query("select private.care_consents($1)", [a.participant]);
      return (
        await client.query(
          "select action, resource_type, resource_id, actor_user_id, actor_key_id, changes from public.audit_events where action = 'read' order by id",
        )
      ).rows;
    });
    const actor = { action: "read", resource_id: a.participant, actor_user_id: a.admin, actor_key_id: a.keys.care, changes: {} };
    expect(events).toEqual([
      { ...actor, resource_type: "care_record" },
      { ...actor, resource_type: "contacts" },
      { ...actor, resource_type: "consents" },
    ]);
    // Rolled back with the transaction that read: a refused or failed read leaves no event, a committed one always does.
    expect((await t().admin("select count(*)::int as n from audit_events where action = 'read'")).rows[0].n).toBe(0);
  });

  it("shows events of care resources only to a caller with care access", async () => {
    const seen = (claims: Claims) =>
      as("camp_api", claims, async (client) =>
        (await client.query("select distinct resource_type from public.audit_events order by 1")).rows.map(
          (r) => r.resource_type,
        ),
      );
    expect(await seen(bearer(a, a.admin))).toEqual(
      expect.arrayContaining(["care_record", "consent", "contact", "participant", "user"]),
    );
    const without = await seen(bearer(a, a.staffNone));
    expect(without).toEqual(expect.arrayContaining(["participant", "user"]));
    expect(without.filter((type) => ["care_record", "consent", "contact"].includes(type))).toEqual([]);
    const keyWithoutCare = await seen(withKey(a, a.staffRead, a.keys.noCare));
    expect(keyWithoutCare.filter((type) => ["care_record", "consent", "contact"].includes(type))).toEqual([]);
  });
});

describe("the photo answer's one bit", () => {
  it("is told to any caller of the participant's tenant, and to no other tenant", async () => {
    await t().admin(
      "insert into participant_consents (tenant_id, participant_id, kind, status) values ($1, $2, 'photo', 'refused')",
      [b.tenant, b.participant],
    );
    const refused = (claims: Claims) =>
      as(
        "camp_api",
        claims,
        async (client) =>
          (await client.query("select private.photo_consent_refused($1) as refused", [b.participant])).rows[0].refused,
      );
    expect(await refused(bearer(b, b.staffNone))).toBe(true);
    expect(await refused(bearer(a, a.admin))).toBe(false);
  });
});

describe("behind the door: camp_care's own policies", () => {
  it("show a principal without care access zero rows and refuse its writes", async () => {
    for (const claims of [bearer(a, a.staffNone), withKey(a, a.staffRead, a.keys.noCare), {}]) {
      for (const table of CARE_TABLES) {
        const n = await as(
          "camp_care",
          claims,
          async (client) => (await client.query(`select count(*)::int as n from public.${table}`)).rows[0].n,
        );
        expect(`${table}: ${n}`).toBe(`${table}: 0`);
      }
      expect(
        await outcome("camp_care", claims, "insert into public.participant_contacts (participant_id, name) values ($1, 'X')", [
          a.participant,
        ]),
      ).toBe("42501");
      const updated = await as(
        "camp_care",
        claims,
        async (client) => (await client.query("update public.participant_care set care_notes = 'x'")).rowCount,
      );
      expect(updated).toBe(0);
    }
  });

  it("show a reader its own tenant's rows only, and refuse a write of read access", async () => {
    for (const table of CARE_TABLES) {
      const tenants = await as("camp_care", bearer(a, a.staffRead), async (client) =>
        (await client.query(`select distinct tenant_id::text as t from public.${table}`)).rows.map((r) => r.t),
      );
      expect(tenants).toEqual([a.tenant]);
    }
    expect(
      await outcome(
        "camp_care",
        bearer(a, a.staffRead),
        "insert into public.participant_contacts (participant_id, name) values ($1, 'X')",
        [a.participant],
      ),
    ).toBe("42501");
  });

  it("cannot change or delete a consent answer, even with care write access", async () => {
    const claims = bearer(a, a.admin);
    expect(await outcome("camp_care", claims, "update public.participant_consents set status = 'refused'")).toBe("42501");
    expect(await outcome("camp_care", claims, "delete from public.participant_consents")).toBe("42501");
  });
});

describe("users' care access", () => {
  it("defaults to write for admins and none for staff", async () => {
    const rows = await t().admin("select role, care_access from users where tenant_id = $1 and id in ($2, $3)", [
      a.tenant,
      a.admin,
      a.staffNone,
    ]);
    expect(rows.rows.map((r) => `${r.role}:${r.care_access}`).sort()).toEqual(["admin:write", "staff:none"]);
  });

  it("can be changed by an admin, never by a staff user (not even their own)", async () => {
    const change = "update public.users set care_access = 'write' where id = $1";
    expect(await outcome("camp_api", bearer(a, a.staffNone), change, [a.staffNone])).toBe("CA403");
    expect(await outcome("camp_api", bearer(a, a.admin), change, [a.staffNone])).toBe("ok");
  });
});
