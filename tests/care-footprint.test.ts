import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryPhotoStore } from "../functions/photos/memory-store.ts";
import { connectionDetails, grantReportingRole, revokeReportingRole } from "../functions/reporting/roles.ts";
import { addCampStructure } from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { feedUntil } from "./support/events.ts";
import { type CallOptions, call, newTenant, signToken, type TestTenant } from "./support/fixtures.ts";
import { image } from "./support/images.ts";
import { useLogCapture } from "./support/logs.ts";
import { download, type PhotoApp, photoApp, upload } from "./support/photos.ts";
import { run, TSX } from "./support/processes.ts";

/**
 * Where care data goes and where it never goes: not into participant reads,
 * lists, the CSV export, bulk or CSV import, the audit trail of a caller
 * without care access, or a reporting role not granted --care; a refused
 * photo consent takes the photo away; and erasure leaves no care value in a
 * full dump of the database.
 */

const t = useTestDatabase();
const logs = useLogCapture();
const RUN = `care_${randomBytes(4).toString("hex")}`;

/** Values that must appear only where care data may. */
const MARKS = {
  contact: "Quentin Carefield",
  phone: "+442079460958",
  allergy: "zanzibar-nut",
  medication: "Marklovir",
  notes: "care-note-7731",
  consentNote: "consent-note-5519",
};
const leaked = (text: string) => Object.values(MARKS).filter((mark) => text.includes(mark));

let app: PhotoApp;
let store: MemoryPhotoStore;
let tenant: TestTenant;
let instanceId: string;
let participant: string;
const admin: CallOptions = {};
/** An admin of the same tenant whose care_access is none, and a staff key without access. */
const adminWithoutCare: CallOptions = {};
let staffKey: string;
const reportingClients: pg.Client[] = [];
const roles: string[] = [];

beforeAll(async () => {
  store = new MemoryPhotoStore();
  app = photoApp(t().db, store);
  tenant = await newTenant(t().db);
  instanceId = (await addCampStructure(t(), tenant.tenantId)).instanceId;
  admin.token = await signToken({ sub: `sub-${tenant.admin.email}`, email: tenant.admin.email, email_verified: true });
  const second = await tenant.addUser("admin", { withKey: false });
  expect((await call(app, "PATCH", `/api/v1/users/${second.userId}`, { ...admin, body: { care_access: "none" } })).status).toBe(
    200,
  );
  adminWithoutCare.token = await signToken({ sub: `sub-${second.email}`, email: second.email, email_verified: true });
  staffKey = (await tenant.addUser("staff")).key as string;

  const created = await call(app, "POST", "/api/v1/participants", {
    ...admin,
    body: { instance_id: instanceId, user_id: "care-1", first_name: "Ada", surname: "Lovelace" },
  });
  participant = created.body.data.id;
  const base = `/api/v1/participants/${participant}`;
  const writes = [
    await call(app, "POST", `${base}/contacts`, {
      ...admin,
      body: { name: MARKS.contact, phone: "+44 20 7946 0958", emergency: true, emergency_order: 1, notes: MARKS.notes },
    }),
    await call(app, "PUT", `${base}/care`, {
      ...admin,
      body: {
        allergies: [{ name: MARKS.allergy, severity: "anaphylactic" }],
        care_notes: MARKS.notes,
      },
    }),
    await call(app, "POST", `${base}/medications`, {
      ...admin,
      body: { name: MARKS.medication, dose: "1 tablet", instructions: "morning", times: ["08:00"] },
    }),
    await call(app, "PATCH", `${base}/care`, { ...admin, body: { dietary_requirements: `no ${MARKS.allergy}` } }),
    await call(app, "PUT", `${base}/consents`, {
      ...admin,
      body: { emergency_medical_treatment: "granted", note: MARKS.consentNote },
    }),
    // Its 201 is kept for 24 hours as the key's stored answer.
    await call(app, "POST", `${base}/contacts`, {
      ...admin,
      body: { name: "Second contact", relationship: MARKS.contact },
      headers: { "Idempotency-Key": `care-${RUN}` },
    }),
  ];
  expect(writes.map((w) => w.status)).toEqual([201, 200, 201, 200, 200, 201]);
});

afterAll(async () => {
  for (const client of reportingClients) await client.end().catch(() => {});
  for (const role of roles) await revokeReportingRole(t().db, role).catch(() => {});
});

describe("care data stays out of", () => {
  it("participant reads and lists, for anyone", async () => {
    for (const caller of [admin, { key: staffKey }]) {
      for (const path of [
        `/api/v1/participants/${participant}`,
        "/api/v1/participants",
        `/api/v1/participants?instance_id=${instanceId}&include_deleted=true`,
        "/api/v1/participants?q=ada",
      ]) {
        const answer = await call(app, "GET", path, caller);
        expect(answer.status).toBe(200);
        expect(leaked(JSON.stringify(answer.body))).toEqual([]);
      }
    }
  });

  it("the event feed (and so webhooks, which send its events): no care event, no care value", async () => {
    // The feed serves a write once no older transaction is open anywhere on the server (another
    // test file's may be): wait for the fixture's participant events rather than read it once.
    const { events } = await feedUntil(app, tenant.admin.key, (served) => served.some((e) => e.type.startsWith("participant.")));
    expect(events.length).toBeGreaterThan(0);
    expect(events.filter((e) => /contact|care|consent/.test(e.type))).toEqual([]);
    expect(leaked(JSON.stringify(events))).toEqual([]);
  });

  it("the CSV export, which also takes no care filter", async () => {
    const csv = await call(app, "GET", "/api/v1/participants/export.csv", admin);
    expect(csv.status).toBe(200);
    expect(String(csv.body)).toContain("Lovelace");
    expect(leaked(String(csv.body))).toEqual([]);
    expect(String(csv.body).split("\r\n")[0]).not.toMatch(/allerg|contact|consent|medic|care/);
    const filtered = await call(app, "GET", "/api/v1/participants/export.csv?severe_allergy=true", admin);
    expect(filtered.status).toBe(400);
  });

  it("the audit trail of an admin without care access (no care events, no values), while one with access sees them", async () => {
    const without = await call(app, "GET", "/api/v1/audit-events?limit=1000", adminWithoutCare);
    expect(without.status).toBe(200);
    expect(leaked(JSON.stringify(without.body))).toEqual([]);
    const careTypes = [
      "contact",
      "care_record",
      "consent",
      "contacts",
      "consents",
      "care_flag",
      "medication",
      "medications",
      "medication_administration",
      "medication_administrations",
      "incident",
    ];
    expect(without.body.data.filter((e: { resource_type: string }) => careTypes.includes(e.resource_type))).toEqual([]);
    expect(without.body.data.length).toBeGreaterThan(0);
    // Asked for care events by name, it is refused (403), never answered an empty list (issue 38).
    for (const query of [...careTypes.map((type) => `resource_type=${type}`), "action=read"]) {
      const filtered = await call(app, "GET", `/api/v1/audit-events?${query}`, adminWithoutCare);
      expect(`${query}: ${filtered.status} ${filtered.body.error?.code}`).toBe(`${query}: 403 FORBIDDEN`);
      expect((await call(app, "GET", `/api/v1/audit-events?${query}`, admin)).status).toBe(200);
    }
    const withAccess = await call(app, "GET", "/api/v1/audit-events?limit=1000", admin);
    expect(leaked(JSON.stringify(withAccess.body)).sort()).toEqual(Object.values(MARKS).sort());
  });

  it("bulk create, which takes no care fields, and a CSV import whose care cells are invalid", async () => {
    const bulk = await call(app, "POST", "/api/v1/participants/bulk", {
      ...admin,
      body: {
        participants: [
          { instance_id: instanceId, user_id: "bulk-care", first_name: "B", surname: "C", allergies: [{ name: MARKS.allergy }] },
        ],
      },
    });
    const csv = `user_id,first_name,surname,allergies,emergency_contact_phone\r\ncsv-care,C,D,${MARKS.allergy},${MARKS.phone}\r\n`;
    const imported = await call(app, "POST", `/api/v1/participants/import?instance_id=${instanceId}`, {
      ...admin,
      raw: csv,
      headers: { "Content-Type": "text/csv", "Content-Length": String(Buffer.byteLength(csv)) },
    });
    // Refused (400: an allergy without its severity) or the unknown fields dropped; either way nothing of them is stored anywhere.
    expect([201, 400]).toContain(bulk.status);
    expect([200, 201, 400]).toContain(imported.status);
    const care = await t().admin(
      "select count(*)::int as n from participant_care c join participants p on p.id = c.id where p.user_id in ('bulk-care', 'csv-care')",
    );
    expect(care.rows[0].n).toBe(0);
    const rows = await t().admin(
      "select to_jsonb(p)::text as row from participants p where p.user_id in ('bulk-care', 'csv-care')",
    );
    expect(leaked(rows.rows.map((r) => r.row).join(""))).toEqual([]);
  });

  it("reporting roles not granted --care are refused the care views and tables (permission denied) and see no care events; granted, they read it", async () => {
    const connect = async (care: boolean) => {
      const role = `${RUN}_${care ? "care" : "plain"}`;
      roles.push(role);
      const grant = await grantReportingRole(t().db, tenant.tenantId, role, {
        connectionLimit: 2,
        connectionBudget: 10_000,
        care,
      });
      expect(grant.care).toBe(care);
      const client = new pg.Client({ connectionString: connectionDetails(t().url, grant).url });
      client.on("error", () => {});
      await client.connect();
      reportingClients.push(client);
      return client;
    };
    const plain = await connect(false);
    // Refused, not an empty answer: an allergy report must not silently say "nobody" (issue 38).
    const refusal = (text: string) =>
      plain.query(text).then(
        () => "answered",
        (error: { code?: string }) => error.code,
      );
    for (const view of [
      "participant_contacts",
      "participant_care",
      "participant_consents",
      "participant_medications",
      "medication_administrations",
    ]) {
      expect(`${view}: ${await refusal(`select count(*)::int as n from ${view}`)}`).toBe(`${view}: 42501`);
    }
    const events = await plain.query("select resource_type, changes::text from audit_events");
    expect(events.rows.length).toBeGreaterThan(0);
    expect(leaked(JSON.stringify(events.rows))).toEqual([]);
    expect(events.rows.filter((e) => ["contact", "care_record", "consent"].includes(e.resource_type))).toEqual([]);
    // Not by the base tables either, not by setting claims.
    await plain.query(`select set_config('request.jwt.claims', '{"tenant_id": "${tenant.tenantId}"}', false)`);
    for (const table of [
      "participant_contacts",
      "participant_care",
      "participant_consents",
      "participant_medications",
      "medication_administrations",
    ]) {
      expect(`${table}: ${await refusal(`select count(*) from public.${table}`)}`).toBe(`${table}: 42501`);
    }

    const careRole = await connect(true);
    const record = await careRole.query("select allergies, severe_allergy from participant_care where participant_id = $1", [
      participant,
    ]);
    expect(record.rows).toEqual([{ allergies: [{ name: MARKS.allergy, severity: "anaphylactic" }], severe_allergy: true }]);
    expect((await careRole.query("select name, phone from participant_contacts order by emergency_order")).rows).toEqual([
      { name: MARKS.contact, phone: MARKS.phone },
      { name: "Second contact", phone: null },
    ]);
    expect((await careRole.query("select kind, status, current from participant_consents")).rows).toEqual([
      { kind: "emergency_medical_treatment", status: "granted", current: true },
    ]);
    const list = await run(TSX, ["cli/main.ts", "reporting", "list"], { DATABASE_URL: t().url });
    const listed = list.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line))
      .filter((r: { role: string }) => r.role.startsWith(RUN));
    expect(listed.map((r: { role: string; care: boolean }) => `${r.role}:${r.care}`).sort()).toEqual([
      `${RUN}_care:true`,
      `${RUN}_plain:false`,
    ]);
    // A role granted care is still one `camp reporting revoke` drops.
    expect((await revokeReportingRole(t().db, `${RUN}_care`)).dropped).toBe(true);
  });
});

describe("the log", () => {
  it("holds no care value from any request of this file, at debug level, errors included", async () => {
    const refused = await call(app, "POST", `/api/v1/participants/${participant}/contacts`, {
      ...adminWithoutCare,
      body: { name: MARKS.contact, phone: "+44 20 7946 0958", notes: MARKS.notes },
    });
    expect(refused.status).toBe(403);
    const invalid = await call(app, "PATCH", `/api/v1/participants/${participant}/care`, {
      ...admin,
      body: { allergies: [{ name: MARKS.allergy, severity: "deadly" }] },
    });
    expect(invalid.status).toBe(400);
    expect(logs.lines.length).toBeGreaterThan(10);
    expect(leaked(logs.lines.join("\n"))).toEqual([]);
  });
});

describe("a refused photo consent", () => {
  it("removes the stored photo and link, makes upload 409 until consent is given again", async () => {
    const created = await call(app, "POST", "/api/v1/participants", {
      ...admin,
      body: { instance_id: instanceId, user_id: "photo-1", first_name: "Pia", surname: "Photo" },
    });
    const id = created.body.data.id;
    const key = tenant.admin.key;
    const jpeg = await image("jpeg");
    expect((await upload(app, key, id, jpeg)).status).toBe(200);
    const stored = (await t().admin("select photo_key from participants where id = $1", [id])).rows[0].photo_key;
    expect(store.objects.has(stored)).toBe(true);

    const refused = await call(app, "PUT", `/api/v1/participants/${id}/consents`, { ...admin, body: { photo: "refused" } });
    expect(refused.status).toBe(200);
    expect(refused.body.data.photo.status).toBe("refused");
    expect(refused.body.data).not.toHaveProperty("removed_photo_key");
    expect(store.objects.has(stored)).toBe(false);
    const row = (await t().admin("select photo_key, photo_link from participants where id = $1", [id])).rows[0];
    expect(row).toEqual({ photo_key: null, photo_link: null });
    expect((await download(app, key, id)).status).toBe(404);

    const again = await upload(app, key, id, jpeg);
    expect(again.status).toBe(409);
    expect(again.body.error.details).toEqual([{ field: "photo", issue: "photo consent is refused" }]);
    const linked = await call(app, "PUT", `/api/v1/participants/${id}`, {
      ...admin,
      body: { photo_link: "https://photos.example.org/pia.jpg" },
    });
    expect(linked.status).toBe(409);
    expect(store.objects.size).toBe(0);

    expect((await call(app, "PUT", `/api/v1/participants/${id}/consents`, { ...admin, body: { photo: "granted" } })).status).toBe(
      200,
    );
    expect((await upload(app, key, id, jpeg)).status).toBe(200);
  });

  it("reads as any photo removal in the feed and the trail: a refusal tells staff without care access nothing (issue 38)", async () => {
    const key = tenant.admin.key;
    const jpeg = await image("jpeg");
    const ids: string[] = [];
    for (const name of ["Removed", "Refused"]) {
      const created = await call(app, "POST", "/api/v1/participants", {
        ...admin,
        body: { instance_id: instanceId, user_id: `photo-${name}`, first_name: name, surname: "Photo" },
      });
      ids.push(created.body.data.id);
      expect((await upload(app, key, created.body.data.id, jpeg)).status).toBe(200);
    }
    const [removed, refused] = ids as [string, string];
    const storedKey = (await t().admin("select photo_key from participants where id = $1", [removed])).rows[0].photo_key;
    const lastEvent = (await t().admin("select coalesce(max(id), 0)::bigint as id from public.events")).rows[0].id;
    // Staff without care access remove one photo; a refusal takes the other.
    const deleted = await call(app, "DELETE", `/api/v1/photos/user/${removed}`, { key: staffKey });
    expect(deleted.status, JSON.stringify(deleted.body)).toBe(200);
    expect(store.objects.has(storedKey)).toBe(false);
    expect((await download(app, key, removed)).status).toBe(404);
    expect((await call(app, "DELETE", `/api/v1/photos/user/${removed}`, { key: staffKey })).status).toBe(404);
    expect(
      (await call(app, "PUT", `/api/v1/participants/${refused}/consents`, { ...admin, body: { photo: "refused" } })).status,
    ).toBe(200);

    // What the feed and webhooks serve (public.events, read here directly: the feed serves a commit only once no
    // older transaction on the shared cluster is open, which other test runs may hold for a while).
    const events = (
      await t().admin("select type, resource_id::text as id from public.events where resource_id = any ($1) and id > $2", [
        ids,
        lastEvent,
      ])
    ).rows as Array<{ type: string; id: string }>;
    const typeOf = (id: string) => events.filter((e) => e.id === id).map((e) => e.type);
    expect(typeOf(removed)).toEqual(["photo.removed"]);
    expect(typeOf(refused)).toEqual(typeOf(removed));
    // The trail an admin without care access reads: the same fields changed, the same way.
    const trail = await call(app, "GET", "/api/v1/audit-events?resource_type=participant&limit=1000", adminWithoutCare);
    const changesOf = (id: string) =>
      trail.body.data
        .filter((e: { resource_id: string; action: string }) => e.resource_id === id && e.action === "update")
        .slice(0, 1)
        .map((e: { changes: Record<string, unknown> }) => e.changes);
    expect(changesOf(refused)).toEqual([expect.any(Object)]);
    expect(Object.keys(changesOf(refused)[0]).sort()).toEqual(Object.keys(changesOf(removed)[0]).sort());
  });

  it("is also refused by the database when a refusal lands after the upload's check", async () => {
    const created = await call(app, "POST", "/api/v1/participants", {
      ...admin,
      body: { instance_id: instanceId, user_id: "photo-2", first_name: "Rae", surname: "Race" },
    });
    const id = created.body.data.id;
    await call(app, "PUT", `/api/v1/participants/${id}/consents`, { ...admin, body: { photo: "refused" } });
    const attempt = await t()
      .admin("update participants set photo_link = 'https://photos.example.org/x.jpg' where id = $1", [id])
      .catch((error: { code: string }) => error.code);
    expect(attempt).toBe("CA409");
  });
});

describe("erasure", () => {
  it("removes contacts, care record and consents, and their audit values: a full data dump holds none of them", async () => {
    const before = await run("pg_dump", ["--data-only", "--no-owner", t().url], {});
    expect(leaked(before.stdout).sort()).toEqual(Object.values(MARKS).sort());
    const erased = await call(app, "POST", `/api/v1/participants/${participant}/erase`, admin);
    expect(erased.status).toBe(200);
    const dump = await run("pg_dump", ["--data-only", "--no-owner", t().url], {});
    expect(dump.code).toBe(0);
    expect(leaked(dump.stdout)).toEqual([]);
    for (const table of ["participant_contacts", "participant_consents"]) {
      expect(
        (await t().admin(`select count(*)::int as n from ${table} where participant_id = $1`, [participant])).rows[0].n,
      ).toBe(0);
    }
    expect((await t().admin("select count(*)::int as n from participant_care where id = $1", [participant])).rows[0].n).toBe(0);
    // The reads stay on the record, without values.
    const reads = await call(app, "GET", `/api/v1/audit-events?action=read&resource_id=${participant}`, admin);
    expect(reads.status).toBe(200);
  });
});
