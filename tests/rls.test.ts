import type pg from "pg";
import { beforeAll, describe, expect, it } from "vitest";
import { useTestDatabase } from "./support/database.ts";

/**
 * Tenant isolation at the SQL level, as the API role: with tenant A's claims,
 * tenant B's rows in every table are invisible and cannot be inserted, updated
 * or deleted. The table list is read from the catalog, so a new table without
 * RLS, without a policy, or missing from this matrix fails here.
 */

const t = useTestDatabase();

interface Seeded {
  tenant: string;
  user: string;
  instance: string;
  supergroup: string;
  subgroup: string;
  block: string;
  room: string;
}

async function seedTenant(label: string): Promise<Seeded> {
  const q = async (text: string, values: unknown[] = []) => (await t().admin(text, values)).rows[0]?.id as string;
  const tenant = await q("insert into tenants (name) values ($1) returning id", [label]);
  const user = await q("insert into users (tenant_id, email, role) values ($1, $2, 'admin') returning id", [
    tenant,
    `${label}@example.test`,
  ]);
  await t().admin(
    "insert into api_keys (tenant_id, user_id, key_hash, key_prefix) values ($1, $2, sha256($3::bytea), 'camp_test')",
    [tenant, user, label],
  );
  const instance = await q("insert into instances (tenant_id, name) values ($1, 'Camp') returning id", [tenant]);
  const supergroup = await q("insert into supergroups (tenant_id, instance_id, name) values ($1, $2, 'Red') returning id", [
    tenant,
    instance,
  ]);
  const subgroup = await q(
    "insert into subgroups (tenant_id, instance_id, parent_supergroup_id, name) values ($1, $2, $3, 'Red 1') returning id",
    [tenant, instance, supergroup],
  );
  const block = await q("insert into blocks (tenant_id, instance_id, name) values ($1, $2, 'North') returning id", [
    tenant,
    instance,
  ]);
  const room = await q(
    "insert into rooms (tenant_id, instance_id, block_id, room_number) values ($1, $2, $3, '101') returning id",
    [tenant, instance, block],
  );
  const participant = await q(
    `insert into participants (tenant_id, instance_id, user_id, first_name, surname, super_group_id, sub_group_id, block_id, room_id)
     values ($1, $2, 'u1', 'Ada', 'Lovelace', $3, $4, $5, $6) returning id`,
    [tenant, instance, supergroup, subgroup, block, room],
  );
  const movement = await q(
    `insert into attendance_movements (tenant_id, instance_id, participant_id, direction, recorded_at, nonce)
     values ($1, $2, $3, 'in', now(), gen_random_uuid()) returning id`,
    [tenant, instance, participant],
  );
  const rollCall = await q("insert into roll_calls (tenant_id, instance_id) values ($1, $2) returning id", [tenant, instance]);
  await t().admin("insert into roll_call_expected (tenant_id, roll_call_id, participant_id) values ($1, $2, $3)", [
    tenant,
    rollCall,
    participant,
  ]);
  await t().admin("insert into roll_call_marks (tenant_id, roll_call_id, participant_id, mark) values ($1, $2, $3, 'present')", [
    tenant,
    rollCall,
    participant,
  ]);
  await t().admin("insert into attendance_codes (tenant_id, movement_id, code) values ($1, $2, 'ABCD')", [tenant, movement]);
  await t().admin(
    "insert into attendance_present_codes (tenant_id, instance_id, participant_id, movement_id, code) values ($1, $2, $3, $4, 'ABCD')",
    [tenant, instance, participant, movement],
  );
  await t().admin("insert into photo_uploads (tenant_id, key) values ($1, $2)", [tenant, `${tenant}/upload-in-progress`]);
  await t().admin(
    "insert into idempotency_keys (tenant_id, user_id, key, request_hash, status, body) values ($1, $2, 'retry-1', 'h', 201, '{}')",
    [tenant, user],
  );
  const endpoint = await q(
    "insert into webhook_endpoints (tenant_id, url) values ($1, 'https://example.org/hook') returning id",
    [tenant],
  );
  const delivery = await q(
    `insert into webhook_deliveries (tenant_id, endpoint_id, event_id, event_type, resource_id, occurred_at)
     values ($1, $2, 1, 'instance.created', $3, now()) returning id`,
    [tenant, endpoint, instance],
  );
  await t().admin("insert into webhook_attempts (tenant_id, delivery_id, started_at, status_code) values ($1, $2, now(), 200)", [
    tenant,
    delivery,
  ]);
  return { tenant, user, instance, supergroup, subgroup, block, room };
}

/** Tables of care data: tested in tests/care-sql.test.ts and tests/incidents.test.ts (camp_api holds no privilege on them). */
const CARE_TABLES = [
  "incident_amendments",
  "incident_participants",
  "incidents",
  "medication_administrations",
  "participant_care",
  "participant_consents",
  "participant_contacts",
  "participant_medications",
];

/**
 * Tables only the attendance doors reach (security codes): RLS on, and no
 * privilege at all for camp_api, which reaches them through
 * private.attendance_record only (tests/attendance*.test.ts).
 */
const DOOR_TABLES = ["attendance_codes", "attendance_present_codes"];

/** For each table: a column to touch in updates, and an insert of a row into tenant `s`. */
const MATRIX: Record<string, { column: string; insert: (s: Seeded) => [string, unknown[]] }> = {
  tenants: { column: "name", insert: () => ["insert into tenants (name) values ('Intruder')", []] },
  users: {
    column: "email",
    insert: (s) => ["insert into users (tenant_id, email) values ($1, 'x@example.test')", [s.tenant]],
  },
  api_keys: {
    column: "revoked_at",
    insert: (s) => [
      "insert into api_keys (tenant_id, user_id, key_hash, key_prefix) values ($1, $2, sha256('x'::bytea), 'camp_x')",
      [s.tenant, s.user],
    ],
  },
  instances: { column: "name", insert: (s) => ["insert into instances (tenant_id, name) values ($1, 'X')", [s.tenant]] },
  supergroups: {
    column: "name",
    insert: (s) => ["insert into supergroups (tenant_id, instance_id, name) values ($1, $2, 'X')", [s.tenant, s.instance]],
  },
  subgroups: {
    column: "name",
    insert: (s) => [
      "insert into subgroups (tenant_id, instance_id, parent_supergroup_id, name) values ($1, $2, $3, 'X')",
      [s.tenant, s.instance, s.supergroup],
    ],
  },
  blocks: {
    column: "name",
    insert: (s) => ["insert into blocks (tenant_id, instance_id, name) values ($1, $2, 'X')", [s.tenant, s.instance]],
  },
  rooms: {
    column: "room_number",
    insert: (s) => [
      "insert into rooms (tenant_id, instance_id, block_id, room_number) values ($1, $2, $3, 'X')",
      [s.tenant, s.instance, s.block],
    ],
  },
  audit_events: {
    column: "action",
    insert: (s) => [
      "insert into audit_events (tenant_id, actor_via, action, resource_type, resource_id) values ($1, 'operator', 'create', 'x', gen_random_uuid())",
      [s.tenant],
    ],
  },
  events: {
    column: "type",
    insert: (s) => [
      "insert into events (tenant_id, xact_id, id, type, resource_id, occurred_at) values ($1, pg_current_xact_id(), 1, 'x', gen_random_uuid(), now())",
      [s.tenant],
    ],
  },
  webhook_endpoints: {
    column: "url",
    insert: (s) => ["insert into webhook_endpoints (tenant_id, url) values ($1, 'https://example.org/x')", [s.tenant]],
  },
  webhook_deliveries: {
    column: "status",
    insert: (s) => [
      `insert into webhook_deliveries (tenant_id, endpoint_id, event_id, event_type, resource_id, occurred_at)
       select $1, id, 99, 'instance.created', gen_random_uuid(), now() from webhook_endpoints limit 1`,
      [s.tenant],
    ],
  },
  webhook_attempts: {
    column: "error",
    insert: (s) => [
      "insert into webhook_attempts (tenant_id, delivery_id, started_at) select $1, id, now() from webhook_deliveries limit 1",
      [s.tenant],
    ],
  },
  idempotency_keys: {
    column: "expires_at",
    insert: (s) => [
      "insert into idempotency_keys (tenant_id, user_id, key, request_hash, status, body) values ($1, $2, 'intruder', 'h', 201, '{}')",
      [s.tenant, s.user],
    ],
  },
  photo_uploads: {
    column: "started_at",
    insert: (s) => ["insert into photo_uploads (tenant_id, key) values ($1, $2)", [s.tenant, `${s.tenant}/intruder`]],
  },
  attendance_movements: {
    column: "location",
    insert: (s) => [
      "insert into attendance_movements (tenant_id, instance_id, participant_id, direction, recorded_at, nonce) select $1, instance_id, id, 'in', now(), gen_random_uuid() from participants limit 1",
      [s.tenant],
    ],
  },
  roll_calls: {
    column: "name",
    insert: (s) => ["insert into roll_calls (tenant_id, instance_id) values ($1, $2)", [s.tenant, s.instance]],
  },
  roll_call_expected: {
    column: "participant_id",
    insert: (s) => [
      "insert into roll_call_expected (tenant_id, roll_call_id, participant_id) select $1, r.id, p.id from roll_calls r, participants p limit 1",
      [s.tenant],
    ],
  },
  roll_call_marks: {
    column: "mark",
    insert: (s) => [
      "insert into roll_call_marks (tenant_id, roll_call_id, participant_id, mark) select $1, r.id, p.id, 'present' from roll_calls r, participants p limit 1",
      [s.tenant],
    ],
  },
  participants: {
    column: "first_name",
    insert: (s) => [
      "insert into participants (tenant_id, instance_id, user_id, first_name, surname) values ($1, $2, 'x', 'X', 'Y')",
      [s.tenant, s.instance],
    ],
  },
};

/** Runs `work` as camp_api with `tenant`'s claims, in a transaction that is always rolled back. */
async function asApi<T>(tenant: string, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await t().db.pool.connect();
  try {
    await client.query("begin");
    await client.query("set local role camp_api");
    // An admin's claims: the most an API caller can be (some tables are for admins only).
    await client.query("select set_config('request.jwt.claims', $1, true)", [
      JSON.stringify({ tenant_id: tenant, app_role: "admin" }),
    ]);
    return await work(client);
  } finally {
    await client.query("rollback");
    client.release();
  }
}

/** The error a statement raises as camp_api, or undefined when it succeeds. */
async function errorOf(tenant: string, text: string, values: unknown[]): Promise<string | undefined> {
  return asApi(tenant, async (client) => {
    try {
      await client.query(text, values);
      return undefined;
    } catch (error) {
      return (error as { code?: string }).code;
    }
  });
}

let a: Seeded;
let b: Seeded;

beforeAll(async () => {
  a = await seedTenant("tenant-a");
  b = await seedTenant("tenant-b");
});

describe("row-level security as the API role", () => {
  it("is enabled, with a policy for camp_api, on every table in public — and every table is in this matrix", async () => {
    const tables = await t().admin(
      `select c.relname, c.relrowsecurity,
              exists (select from pg_policy p where p.polrelid = c.oid
                      and $1::regrole = any (p.polroles)) as has_api_policy
       from pg_class c where c.relnamespace = 'public'::regnamespace and c.relkind in ('r', 'p') order by 1`,
      ["camp_api"],
    );
    // The care tables have no camp_api policy: camp_api holds no privilege on them at all, and the
    // care functions that are its only way in run as camp_care, whose policies tests/care-sql.test.ts holds.
    const careRole = await t().admin(
      `select c.relname from pg_class c where c.relnamespace = 'public'::regnamespace and c.relrowsecurity
         and exists (select from pg_policy p where p.polrelid = c.oid and 'camp_care'::regrole = any (p.polroles))
       order by 1`,
    );
    const care = careRole.rows.map((r) => r.relname);
    expect(care).toEqual(CARE_TABLES);
    for (const table of DOOR_TABLES) {
      const door = await t().admin(
        `select c.relrowsecurity as rls,
                has_table_privilege('camp_api', c.oid, 'select, insert, update, delete') as api_privilege
         from pg_class c where c.oid = ('public.' || $1)::regclass`,
        [table],
      );
      expect({ table, ...door.rows[0] }).toEqual({ table, rls: true, api_privilege: false });
    }
    for (const row of tables.rows.filter((r) => !care.includes(r.relname) && !DOOR_TABLES.includes(r.relname))) {
      expect({ table: row.relname, rls: row.relrowsecurity, policy: row.has_api_policy }).toEqual({
        table: row.relname,
        rls: true,
        policy: true,
      });
    }
    expect(tables.rows.map((r) => r.relname).sort()).toEqual([...Object.keys(MATRIX), ...CARE_TABLES, ...DOOR_TABLES].sort());
  });

  it("never bypasses RLS: camp_api is not a superuser, has no BYPASSRLS and cannot log in", async () => {
    const role = await t().admin("select rolsuper, rolbypassrls, rolcanlogin from pg_roles where rolname = 'camp_api'");
    expect(role.rows[0]).toEqual({ rolsuper: false, rolbypassrls: false, rolcanlogin: false });
  });

  for (const [table, spec] of Object.entries(MATRIX)) {
    describe(table, () => {
      it("shows tenant A its own rows and none of tenant B's", async () => {
        const tenantColumn = table === "tenants" ? "id" : "tenant_id";
        const seen = await asApi(a.tenant, async (client) =>
          (await client.query(`select distinct ${tenantColumn}::text as t from public.${table}`)).rows.map((r) => r.t),
        );
        expect(seen).toEqual([a.tenant]);
      });

      it("sees nothing at all without tenant claims", async () => {
        const client = await t().db.pool.connect();
        try {
          await client.query("begin; set local role camp_api");
          const rows = await client.query(`select count(*)::int as n from public.${table}`);
          expect(rows.rows[0].n).toBe(0);
        } finally {
          await client.query("rollback");
          client.release();
        }
      });

      it("refuses to insert a row into tenant B", async () => {
        const [text, values] = spec.insert(b);
        // 42501: the new row violates the policy (or there is no insert grant at all).
        // CA400: a guard trigger, which runs before the policy check, found B's
        // instance or parent invisible. Either way nothing is written.
        expect(["42501", "CA400"]).toContain(await errorOf(a.tenant, text, values));
      });

      it("updates none of tenant B's rows", async () => {
        const tenantColumn = table === "tenants" ? "id" : "tenant_id";
        const outcome = await asApi(a.tenant, async (client) => {
          try {
            const result = await client.query(
              `update public.${table} set ${spec.column} = ${spec.column} where ${tenantColumn} = $1`,
              [b.tenant],
            );
            return `updated ${result.rowCount}`;
          } catch (error) {
            return `error ${(error as { code?: string }).code}`;
          }
        });
        expect(["updated 0", "error 42501"]).toContain(outcome);
      });

      it("deletes none of tenant B's rows", async () => {
        const tenantColumn = table === "tenants" ? "id" : "tenant_id";
        const outcome = await asApi(a.tenant, async (client) => {
          try {
            const result = await client.query(`delete from public.${table} where ${tenantColumn} = $1`, [b.tenant]);
            return `deleted ${result.rowCount}`;
          } catch (error) {
            return `error ${(error as { code?: string }).code}`;
          }
        });
        expect(["deleted 0", "error 42501"]).toContain(outcome);
        const left = await t().admin(`select count(*)::int as n from public.${table} where ${tenantColumn} = $1`, [b.tenant]);
        expect(left.rows[0].n).toBeGreaterThan(0);
      });
    });
  }

  it("cannot move its own row into tenant B", async () => {
    expect(await errorOf(a.tenant, "update public.instances set tenant_id = $1 where id = $2", [b.tenant, a.instance])).toBe(
      "42501",
    );
  });

  it("cannot point a row of tenant A at tenant B's instance, group, block or room", async () => {
    const attempts: Array<[string, unknown[]]> = [
      ["insert into supergroups (instance_id, name) values ($1, 'X')", [b.instance]],
      ["insert into participants (instance_id, user_id, first_name, surname) values ($1, 'z', 'Z', 'Z')", [b.instance]],
      ["update participants set super_group_id = $1, sub_group_id = null where instance_id = $2", [b.supergroup, a.instance]],
      ["update participants set room_id = $1 where instance_id = $2", [b.room, a.instance]],
    ];
    for (const [text, values] of attempts) {
      // CA400 from the rules' own checks (the row is invisible) or 23503 from the composite keys.
      expect(["CA400", "23503"]).toContain(await errorOf(a.tenant, text, values));
    }
  });

  it("cannot read key hashes, even of its own tenant", async () => {
    expect(await errorOf(a.tenant, "select key_hash from public.api_keys", [])).toBe("42501");
  });
});
