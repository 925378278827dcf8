import { beforeAll, describe, expect, it } from "vitest";
import { addBlock, addCampStructure, addRoom } from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { type CallOptions, call, newTenant, signToken, type TestApp, type TestTenant, testApp } from "./support/fixtures.ts";
import { useLogCapture } from "./support/logs.ts";

/**
 * The import's classes of problems one by one, its options, mode=upsert, the
 * safeguarding columns and their gate, and the export that reads back.
 */

const t = useTestDatabase();
const logs = useLogCapture();

let app: TestApp;
let tenant: TestTenant;
/** The admin's own key: read and write, no care scope. */
let adminKey: string;
const admin: CallOptions = {};
const careWriter: CallOptions = {};
const careReader: CallOptions = {};
const writerWithoutCareScope: CallOptions = {};

/** Words that must never come back in an error, an event or a log line: care values of the files below. */
const SECRETS = ["Quentin Carefield", "not-an-address", "07911 123456", "zanzibar-nut", "kept-secret-diet"];

let tags = 0;
async function freshCamp() {
  const tag = `U${++tags}`;
  return { ...(await addCampStructure(t(), tenant.tenantId, tag)), tag };
}

function importCsv(instanceId: string, csv: string, query: Record<string, string> = {}, as: CallOptions = { key: adminKey }) {
  const bytes = new TextEncoder().encode(csv);
  const params = new URLSearchParams({ instance_id: instanceId, ...query });
  return call(app, "POST", `/api/v1/participants/import?${params}`, {
    ...as,
    raw: bytes,
    headers: { "Content-Type": "text/csv", "Content-Length": String(bytes.length) },
  });
}

interface Detail {
  field: string;
  column?: string;
  issue: string;
  line?: number;
  count?: number;
  samples?: string[];
}
const lineIssues = (res: { body: { error: { details: Detail[] } } }) =>
  res.body.error.details.filter((d) => d.line !== undefined).map(({ line, field, issue }) => ({ line, field, issue }));

async function staffKey(care: "none" | "read" | "write", scopes: string[]): Promise<string> {
  const user = await tenant.addUser("staff", { withKey: false });
  const changed = await call(app, "PATCH", `/api/v1/users/${user.userId}`, { ...admin, body: { care_access: care } });
  expect(changed.status).toBe(200);
  const issued = await call(app, "POST", "/api/v1/api-keys/generate", { ...admin, body: { email: user.email, scopes } });
  expect(issued.status).toBe(201);
  return issued.body.data.key;
}

async function count(sql: string, values: unknown[]): Promise<number> {
  return (await t().admin(sql, values)).rows[0].n;
}

beforeAll(async () => {
  app = testApp(t().db);
  tenant = await newTenant(t().db);
  adminKey = tenant.admin.key as string;
  admin.token = await signToken({ sub: `sub-${tenant.admin.email}`, email: tenant.admin.email, email_verified: true });
  careWriter.key = await staffKey("write", ["read", "write", "care"]);
  careReader.key = await staffKey("read", ["read", "write", "care"]);
  writerWithoutCareScope.key = await staffKey("write", ["read", "write"]);
});

describe("every class of problem, in one answer", () => {
  it("field errors, unknown names, pair breaks and duplicates in the file and in the instance", async () => {
    const camp = await freshCamp();
    await importCsv(camp.instanceId, "user_id,first_name,surname\nold1,Ada,Lovelace\n");
    const otherBlock = await addBlock(t(), tenant.tenantId, camp.instanceId, `South${camp.tag}`);
    await addRoom(t(), tenant.tenantId, camp.instanceId, otherBlock, "7", null);
    const csv = [
      "user_id,first_name,surname,gender,date_of_birth,supergroup,subgroup,block,room",
      `a1,Ada,Lovelace,robot,2012-02-30,Eagles${camp.tag},,,`, // 2: field errors
      `a2,Alan,Turing,,,Hawks,Nest${camp.tag},,`, // 3: unknown supergroup (and so the subgroup is looked for in no supergroup)
      `a3,Grace,Hopper,,,,,Nowhere,`, // 4: unknown block
      `a4,Edsger,Dijkstra,,,,,North${camp.tag},7`, // 5: a room of the other block: the pair breaks
      "a1,Barbara,Liskov,,,,,,", // 6: a1 again
      "old1,Ada,Lovelace,,,,,,", // 7: already in the instance
    ].join("\n");
    const res = await importCsv(camp.instanceId, csv, { dry_run: "true" });
    expect(res.status).toBe(400);
    expect(lineIssues(res)).toEqual([
      { line: 2, field: "gender", issue: "must be one of Male, Female, Other" },
      { line: 2, field: "date_of_birth", issue: "is not a calendar date" },
      { line: 3, field: "supergroup", issue: "no supergroup called 'Hawks' in this instance" },
      { line: 4, field: "block", issue: "no block called 'Nowhere' in this instance" },
      { line: 5, field: "room", issue: "no room called '7' in that block" },
      { line: 6, field: "user_id", issue: "is used twice in this batch (also line 2)" },
      { line: 7, field: "user_id", issue: "is already used by a participant of this instance" },
    ]);
    expect(res.body.error.message).toBe("6 of 6 lines are invalid; nothing was imported");
  });

  it("a pair rule broken by ids: the subgroup of another supergroup", async () => {
    const camp = await freshCamp();
    const other = await freshCamp();
    const csv = `user_id,first_name,surname,super_group_id,sub_group_id\np1,Ada,Lovelace,${camp.supergroupId},${other.subgroupId}\n`;
    const res = await importCsv(camp.instanceId, csv, { dry_run: "true" });
    expect(lineIssues(res)).toEqual([{ line: 2, field: "sub_group_id", issue: "does not belong to instance_id" }]);
  });

  it("a room that would overflow: 409 naming its block, number, capacity and the lines that fill it", async () => {
    const camp = await freshCamp();
    const south = await addBlock(t(), tenant.tenantId, camp.instanceId, `South${camp.tag}`);
    const south8 = await addRoom(t(), tenant.tenantId, camp.instanceId, south, "8", null);
    const north = await addBlock(t(), tenant.tenantId, camp.instanceId, `Northern${camp.tag}`);
    await addRoom(t(), tenant.tenantId, camp.instanceId, north, "8", null);
    await t().admin("update rooms set capacity = 2 where block_id = $1 or block_id = $2", [south, north]);
    await importCsv(camp.instanceId, `user_id,first_name,surname,block,room\nin1,A,B,South${camp.tag},8\n`);
    const csv = [
      "user_id,first_name,surname,block,room",
      `c1,Ada,Lovelace,Northern${camp.tag},8`,
      `c2,Alan,Turing,South${camp.tag},8`,
      `c3,Grace,Hopper,South${camp.tag},8`,
    ].join("\n");
    const res = await importCsv(camp.instanceId, csv, { dry_run: "true" });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe("CONFLICT");
    expect(res.body.error.details).toContainEqual({
      field: "room_id",
      column: "room",
      issue: `room 8 of block South${camp.tag} would hold 3 participants, over its capacity of 2 (lines 3, 4)`,
      room_id: south8,
      room_number: "8",
      block_name: `South${camp.tag}`,
      capacity: 2,
      occupancy: 3,
      lines: [3, 4],
    });
    expect(lineIssues(res).map((d) => d.line)).toEqual([3, 4]);
    // With other problems, the room is listed with them in the same 400.
    const mixed = await importCsv(camp.instanceId, `${csv}\nc4,,Nobody,,`, { dry_run: "true" });
    expect(mixed.status).toBe(400);
    expect(lineIssues(mixed).map((d) => [d.line, d.field])).toEqual([
      [3, "room_id"],
      [4, "room_id"],
      [5, "first_name"],
    ]);
    // Moving someone out in the same file makes room (upsert judges the final state).
    const moved = await importCsv(
      camp.instanceId,
      `user_id,first_name,surname,block,room\nin1,A,B,Northern${camp.tag},8\nc2,Alan,Turing,South${camp.tag},8\nc3,Grace,Hopper,South${camp.tag},8\n`,
      { mode: "upsert" },
    );
    expect(moved.status, JSON.stringify(moved.body)).toBe(201);
    expect(moved.body.data).toMatchObject({ created: 2, updated: 1 });
  });

  it("dates in the given format; one that does not fit names the line and the option", async () => {
    const camp = await freshCamp();
    const csv = "user_id,first_name,surname,DOB,arrival_date\nd1,Ada,Lovelace,05/07/2012,1.8.2026\nd2,Alan,Turing,2012-07-05,\n";
    const res = await importCsv(camp.instanceId, csv, { date_format: "DD/MM/YYYY", dry_run: "true" });
    expect(lineIssues(res)).toEqual([
      { line: 2, field: "arrival_date", issue: "does not match date_format DD/MM/YYYY" },
      { line: 3, field: "date_of_birth", issue: "does not match date_format DD/MM/YYYY" },
    ]);
    const usDates = "user_id,first_name,surname,DOB\nd1,Ada,Lovelace,7/5/2012\n";
    const us = await importCsv(camp.instanceId, usDates, { date_format: "MM/DD/YYYY" });
    expect(us.status).toBe(201);
    const stored = await t().admin("select date_of_birth::text as d from participants where instance_id = $1", [camp.instanceId]);
    expect(stored.rows).toEqual([{ d: "2012-07-05" }]);
    const bad = await importCsv(camp.instanceId, usDates, { date_format: "YY/MM/DD" });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details).toEqual([{ field: "date_format", issue: expect.stringMatching(/DD\/MM\/YYYY/) }]);
    const badMapping = await importCsv(camp.instanceId, usDates, { mapping: '{"columns": {"DOB": 3}}' });
    expect(badMapping.status).toBe(400);
    expect(badMapping.body.error.details[0].field).toBe("mapping.columns.DOB");
    const unknown = await importCsv(camp.instanceId, usDates, { mode: "merge" });
    expect(unknown.status).toBe(400);
  });
});

describe("mode=upsert", () => {
  it("updates by user_id within the instance, leaves absent fields and empty cells as they are, and records only changes", async () => {
    const camp = await freshCamp();
    const created = await importCsv(
      camp.instanceId,
      `user_id,first_name,surname,school_institute,rank,supergroup,subgroup\nu1,Ada,Lovelace,Ealing,Scout,Eagles${camp.tag},Nest${camp.tag}\nu2,Alan,Turing,Park,,,\n`,
    );
    expect(created.status).toBe(201);
    // Another instance's u1 is another participant: not touched.
    const elsewhere = await freshCamp();
    await importCsv(elsewhere.instanceId, "user_id,first_name,surname\nu1,Other,Person\n");
    const [u1] = (await t().admin("select id from participants where instance_id = $1 and user_id = 'u1'", [camp.instanceId]))
      .rows;
    const before = await count("select count(*)::int as n from audit_events where resource_id = $1", [u1.id]);
    const res = await importCsv(camp.instanceId, "user_id,rank,school_institute\nu1,Leader,\nu2,,Park\nu3,,\n", {
      mode: "upsert",
    });
    // u3 is new, and a new participant needs its names.
    expect(res.status).toBe(400);
    expect(lineIssues(res)).toEqual([
      { line: 4, field: "first_name", issue: "is required" },
      { line: 4, field: "surname", issue: "is required" },
    ]);
    const ok = await importCsv(camp.instanceId, "user_id,rank,school_institute\nu1,Leader,\nu2,,Park\n", { mode: "upsert" });
    expect(ok.status).toBe(201);
    expect(ok.body.data).toMatchObject({ mode: "upsert", created: 0, updated: 1, unchanged: 1 });
    expect(ok.body.data.outcomes).toEqual([
      { line: 2, outcome: "updated" },
      { line: 3, outcome: "unchanged" },
    ]);
    const stored = await t().admin(
      "select user_id, first_name, rank, school_institute, sub_group_id is not null as grouped from participants where instance_id = $1 order by user_id",
      [camp.instanceId],
    );
    expect(stored.rows).toEqual([
      { user_id: "u1", first_name: "Ada", rank: "Leader", school_institute: "Ealing", grouped: true },
      { user_id: "u2", first_name: "Alan", rank: null, school_institute: "Park", grouped: false },
    ]);
    const events = await t().admin("select action, changes from audit_events where resource_id = $1 order by id", [u1.id]);
    expect(events.rows.length).toBe(before + 1);
    expect(events.rows.at(-1)).toEqual({ action: "update", changes: { rank: ["Scout", "Leader"] } });
    expect((await t().admin("select first_name from participants where instance_id = $1", [elsewhere.instanceId])).rows).toEqual([
      { first_name: "Other" },
    ]);
  });

  it("a subgroup given alone moves the participant to its supergroup; a block given alone keeps a room only within it", async () => {
    const camp = await freshCamp();
    const south = await addBlock(t(), tenant.tenantId, camp.instanceId, `South${camp.tag}`);
    await addRoom(t(), tenant.tenantId, camp.instanceId, south, "1", null);
    await importCsv(camp.instanceId, `user_id,first_name,surname,block,room\nm1,Ada,Lovelace,North${camp.tag},10${camp.tag}\n`);
    const res = await importCsv(camp.instanceId, `user_id,block\nm1,South${camp.tag}\n`, { mode: "upsert", dry_run: "true" });
    expect(lineIssues(res)).toEqual([{ line: 2, field: "room_id", issue: "does not belong to block_id" }]);
    const moved = await importCsv(camp.instanceId, `user_id,block,room\nm1,South${camp.tag},1\n`, { mode: "upsert" });
    expect(moved.status).toBe(201);
    const row = await t().admin("select room_number, block_id from participants where instance_id = $1", [camp.instanceId]);
    expect(row.rows).toEqual([{ room_number: "1", block_id: south }]);
  });
});

describe("safeguarding columns", () => {
  const careCsv = [
    "user_id,first_name,surname,contact_1_name,contact_1_phone,contact_1_emergency,contact_1_authorised_pickup,contact_2_name,contact_2_email,allergies,dietary_requirements,consent_photo",
    "s1,Ada,Lovelace,Quentin Carefield,+44 7911 123456,Y,yes,Second Person,second@example.test,zanzibar-nut:anaphylactic; pollen:mild,kept-secret-diet,N",
    "s2,Alan,Turing,,,,,,,,,",
  ].join("\n");

  it("need care write access and the key's care scope: otherwise 403 naming the columns, nothing imported", async () => {
    for (const caller of [{ key: adminKey }, writerWithoutCareScope, careReader]) {
      const camp = await freshCamp();
      const res = await importCsv(camp.instanceId, careCsv, {}, caller);
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe("FORBIDDEN");
      expect(res.body.error.message).toMatch(
        /contact_1_name, contact_1_phone, contact_1_emergency, contact_1_authorised_pickup, contact_2_name, contact_2_email, allergies, dietary_requirements, consent_photo/,
      );
      expect(await count("select count(*)::int as n from participants where instance_id = $1", [camp.instanceId])).toBe(0);
    }
    // The same file without its care columns is theirs to import.
    const camp = await freshCamp();
    expect((await importCsv(camp.instanceId, "user_id,first_name,surname\nx1,A,B\n", {}, { key: adminKey })).status).toBe(201);
  });

  it("are validated as the care routes validate them, with no value echoed in the answer or the log", async () => {
    const camp = await freshCamp();
    const bad = [
      "user_id,first_name,surname,contact_1_name,contact_1_phone,contact_1_emergency,contact_2_email,allergies,consent_emergency_medical_treatment",
      "b1,Ada,Lovelace,Quentin Carefield,07911 123456,Y,not-an-address,zanzibar-nut,perhaps",
    ].join("\n");
    const res = await importCsv(camp.instanceId, bad, {}, careWriter);
    expect(res.status).toBe(400);
    expect(lineIssues(res).map((d) => d.field)).toEqual([
      "contact_1_phone",
      "contact_2_name",
      "contact_2_email",
      "allergies",
      "consent_emergency_medical_treatment",
    ]);
    const summary = res.body.error.details.filter((d: Detail) => d.count !== undefined);
    expect(summary.every((d: Detail) => d.samples === undefined)).toBe(true);
    const text = JSON.stringify(res.body) + logs.lines.join("\n");
    for (const secret of SECRETS) expect(text).not.toContain(secret);
  });

  it("are written through the care doors, audited, matched by name on upsert, and erased with the person", async () => {
    const camp = await freshCamp();
    const res = await importCsv(camp.instanceId, careCsv, {}, careWriter);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const [s1] = (await t().admin("select id from participants where instance_id = $1 and user_id = 's1'", [camp.instanceId]))
      .rows;
    const contacts = await call(app, "GET", `/api/v1/participants/${s1.id}/contacts`, careWriter);
    expect(
      // Created in one transaction, so they list in id order: compared by name.
      contacts.body.data.map((c: Record<string, unknown>) => [c.name, c.phone, c.email, c.emergency, c.authorised_pickup]).sort(),
    ).toEqual([
      ["Quentin Carefield", "+447911123456", null, true, true],
      ["Second Person", null, "second@example.test", false, false],
    ]);
    const care = await call(app, "GET", `/api/v1/participants/${s1.id}/care`, careWriter);
    expect(care.body.data).toMatchObject({
      allergies: [
        { name: "zanzibar-nut", severity: "anaphylactic" },
        { name: "pollen", severity: "mild" },
      ],
      dietary_requirements: "kept-secret-diet",
    });
    const consents = await call(app, "GET", `/api/v1/participants/${s1.id}/consents`, careWriter);
    expect(consents.body.data.photo.status).toBe("refused");
    const audited = await t().admin(
      "select resource_type, action from audit_events where tenant_id = $1 and resource_type in ('contact', 'care_record', 'consent') and action = 'create' and (resource_id = $2 or resource_id in (select id from participant_contacts where participant_id = $2 union all select id from participant_consents where participant_id = $2))",
      [tenant.tenantId, s1.id],
    );
    expect(audited.rows.map((r) => r.resource_type).sort()).toEqual(["care_record", "consent", "contact", "contact"]);
    // No change event carries care data.
    const events = await t().admin("select type from events where tenant_id = $1 and type ~ '(contact|care|consent)'", [
      tenant.tenantId,
    ]);
    expect(events.rows).toEqual([]);

    // Upsert: the contact is found by its name (any case), its phone changed in place; no second Quentin.
    const update = ["user_id,contact_1_name,contact_1_phone", "s1,quentin carefield,+44 7400 123456", "s2,,"].join("\n");
    const upserted = await importCsv(camp.instanceId, update, { mode: "upsert" }, careWriter);
    expect(upserted.status).toBe(201);
    expect(upserted.body.data).toMatchObject({ updated: 1, unchanged: 1 });
    const after = await call(app, "GET", `/api/v1/participants/${s1.id}/contacts`, careWriter);
    expect(after.body.data.map((c: Record<string, unknown>) => [c.name, c.phone]).sort()).toEqual([
      ["Quentin Carefield", "+447400123456"],
      ["Second Person", null],
    ]);

    const erased = await call(app, "POST", `/api/v1/participants/${s1.id}/erase`, admin);
    expect(erased.status, JSON.stringify(erased.body)).toBe(200);
    for (const table of [
      "participant_contacts where participant_id",
      "participant_care where id",
      "participant_consents where participant_id",
    ]) {
      expect(await count(`select count(*)::int as n from ${table} = $1`, [s1.id])).toBe(0);
    }
  });
});

describe("GET /participants/export.csv reads back", () => {
  it("exported then imported with mode=upsert, every line is unchanged, care columns included when asked for", async () => {
    const camp = await freshCamp();
    const csv = [
      "user_id,first_name,surname,gender,date_of_birth,rank,supergroup,subgroup,block,room,contact_1_name,contact_1_phone,contact_1_emergency,allergies,medical_conditions,consent_photo",
      `e1,Zoë,O'Brien,F,2012-01-02,=formula,Eagles${camp.tag},Nest${camp.tag},North${camp.tag},10${camp.tag},Quentin Carefield,+44 7911 123456,Y,zanzibar-nut:severe,"asthma, mild",Y`,
      `e2,Alan,Turing,M,,,,,,,,,,,,`,
      `e3,Grace,"Hopper, Jr",Non-binary,2011-12-31,,Eagles${camp.tag},,,,Someone Else,,N,,,`,
    ].join("\r\n");
    expect((await importCsv(camp.instanceId, csv, {}, careWriter)).status).toBe(201);

    const plain = await call(app, "GET", `/api/v1/participants/export.csv?instance_id=${camp.instanceId}`, careWriter);
    expect(plain.status).toBe(200);
    expect(String(plain.body)).not.toMatch(/contact_1|Quentin|zanzibar/);
    const again = await importCsv(camp.instanceId, String(plain.body), { mode: "upsert" }, careWriter);
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    expect(again.body.data).toMatchObject({ lines: 3, created: 0, updated: 0, unchanged: 3 });

    const withCare = await call(
      app,
      "GET",
      `/api/v1/participants/export.csv?instance_id=${camp.instanceId}&include_care=true`,
      careWriter,
    );
    expect(withCare.status).toBe(200);
    const text = String(withCare.body);
    expect(text.split("\r\n")[0]).toMatch(
      /,contact_1_name,contact_1_relationship,contact_1_phone,.*,consent_emergency_medical_treatment$/,
    );
    expect(text).toContain("Quentin Carefield");
    const audit = await count("select count(*)::int as n from audit_events where tenant_id = $1 and action <> 'read'", [
      tenant.tenantId,
    ]);
    const back = await importCsv(camp.instanceId, text, { mode: "upsert" }, careWriter);
    expect(back.status, JSON.stringify(back.body)).toBe(201);
    expect(back.body.data).toMatchObject({ lines: 3, created: 0, updated: 0, unchanged: 3 });
    expect(
      await count("select count(*)::int as n from audit_events where tenant_id = $1 and action <> 'read'", [tenant.tenantId]),
    ).toBe(audit);
    // Each exported participant's care read is on the record.
    const reads = await count(
      "select count(*)::int as n from audit_events where tenant_id = $1 and action = 'read' and resource_type = 'care_record' and resource_id in (select id from participants where instance_id = $2)",
      [tenant.tenantId, camp.instanceId],
    );
    expect(reads).toBe(3);
  });

  it("refuses the care columns to a caller without care access (403), and gives the others the plain export", async () => {
    const camp = await freshCamp();
    for (const caller of [{ key: adminKey }, writerWithoutCareScope]) {
      const res = await call(
        app,
        "GET",
        `/api/v1/participants/export.csv?instance_id=${camp.instanceId}&include_care=true`,
        caller,
      );
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe("FORBIDDEN");
    }
    const reader = await call(
      app,
      "GET",
      `/api/v1/participants/export.csv?instance_id=${camp.instanceId}&include_care=true`,
      careReader,
    );
    expect(reader.status).toBe(200);
  });
});
