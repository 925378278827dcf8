import { parse } from "csv-parse/sync";
import { beforeAll, describe, expect, it } from "vitest";
import { addCampStructure, addSubgroup, addSupergroup, type CampStructure } from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { call, newTenant, type TestApp, type TestTenant, testApp } from "./support/fixtures.ts";

const t = useTestDatabase();

let app: TestApp;
let tenant: TestTenant;
let key: string;

beforeAll(async () => {
  app = testApp(t().db);
  tenant = await newTenant(t().db);
  key = tenant.admin.key;
});

let tags = 0;
/** A fresh instance with one of everything, named `EaglesN`, `NestN`, `NorthN`, room `10N` called `LakeviewN`. */
async function freshCamp(tenantId = tenant.tenantId): Promise<CampStructure & { tag: string }> {
  const tag = String(++tags);
  return { ...(await addCampStructure(t(), tenantId, tag)), tag };
}

function importCsv(
  instanceId: string,
  body: string | Uint8Array<ArrayBuffer>,
  options: { dryRun?: boolean; as?: string; type?: string } = {},
) {
  const query = `?instance_id=${instanceId}${options.dryRun ? "&dry_run=true" : ""}`;
  const bytes = typeof body === "string" ? new TextEncoder().encode(body) : body;
  // Content-Length as a real client sends it: the body policy decides by it.
  return call(app, "POST", `/api/v1/participants/import${query}`, {
    key: options.as ?? key,
    raw: bytes,
    headers: { "Content-Type": options.type ?? "text/csv", "Content-Length": String(bytes.length) },
  });
}

/** A rejection's problems line by line (the details after the summary and the rooms). */
const lineIssues = (res: { body: { error: { details: Array<{ line?: number }> } } }) =>
  res.body.error.details.filter((d) => d.line !== undefined);

async function stored(instanceId: string) {
  const res = await call(app, "GET", `/api/v1/participants?instance_id=${instanceId}&limit=1000`, { key });
  expect(res.status).toBe(200);
  return res.body.data as Array<Record<string, string | null>>;
}

async function exportOf(instanceId: string) {
  const res = await call(app, "GET", `/api/v1/participants/export.csv?instance_id=${instanceId}`, { key });
  expect(res.status).toBe(200);
  return parse(res.body as string, { bom: true, columns: true }) as Array<Record<string, string>>;
}

describe("POST /api/v1/participants/import", () => {
  it("maps headers by field name or alias, whatever their case, and reports what it did", async () => {
    const camp = await freshCamp();
    const csv = [
      "Participant ID,Forename,Last Name,DOB,Sex,Status,School,Notes",
      "p1,Ada,Lovelace,2011-12-10,female,Active,Ealing,likes maths",
      "p2,Alan,Turing,2012-06-23,MALE,inactive,,",
    ].join("\n");
    const res = await importCsv(camp.instanceId, csv);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.data).toEqual({
      instance_id: camp.instanceId,
      dry_run: false,
      mode: "create",
      lines: 2,
      created: 2,
      updated: 0,
      unchanged: 0,
      columns: [
        { column: "Participant ID", field: "user_id" },
        { column: "Forename", field: "first_name" },
        { column: "Last Name", field: "surname" },
        { column: "DOB", field: "date_of_birth" },
        { column: "Sex", field: "gender" },
        { column: "Status", field: "status" },
        { column: "School", field: "school_institute" },
      ],
      ignored_columns: ["Notes"],
      column_suggestions: [],
      outcomes: [
        { line: 2, outcome: "created" },
        { line: 3, outcome: "created" },
      ],
    });
    const rows = await stored(camp.instanceId);
    expect(rows.map((r) => [r.user_id, r.full_name, r.date_of_birth, r.gender, r.status, r.school_institute])).toEqual([
      ["p1", "Ada Lovelace", "2011-12-10", "Female", "active", "Ealing"],
      ["p2", "Alan Turing", "2012-06-23", "Male", "inactive", null],
    ]);
  });

  it("resolves supergroup, subgroup, block and room by name (or room number) within the instance", async () => {
    const camp = await freshCamp();
    const csv = [
      "user_id,first_name,surname,supergroup,subgroup,block,room",
      `n1,Ada,Lovelace,  eagles${camp.tag} ,NEST${camp.tag},North${camp.tag},10${camp.tag}`,
      `n2,Alan,Turing,,Nest${camp.tag},,Lakeview${camp.tag}`,
      `n3,Grace,Hopper,Eagles${camp.tag},,North${camp.tag},`,
    ].join("\r\n");
    const res = await importCsv(camp.instanceId, csv);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const [n1, n2, n3] = await stored(camp.instanceId);
    const everything = {
      super_group_id: camp.supergroupId,
      sub_group_id: camp.subgroupId,
      block_id: camp.blockId,
      room_id: camp.roomId,
      room_number: `10${camp.tag}`,
    };
    expect(n1).toMatchObject(everything);
    // Without the parents, the subgroup brings its supergroup and the room its block, as on single creates.
    expect(n2).toMatchObject(everything);
    expect(n3).toMatchObject({ super_group_id: camp.supergroupId, sub_group_id: null, block_id: camp.blockId, room_id: null });
  });

  it("asks for the parent when a subgroup or room name is not unique in the instance", async () => {
    const camp = await freshCamp();
    const hawks = await addSupergroup(t(), tenant.tenantId, camp.instanceId, "Hawks");
    await addSubgroup(t(), tenant.tenantId, camp.instanceId, hawks, `Nest${camp.tag}`);
    const csv = [
      "user_id,first_name,surname,supergroup,subgroup",
      `a1,Ada,Lovelace,,Nest${camp.tag}`,
      `a2,Alan,Turing,Hawks,Nest${camp.tag}`,
      "a3,Grace,Hopper,Owls,",
    ].join("\n");
    const res = await importCsv(camp.instanceId, csv);
    expect(res.status).toBe(400);
    expect(lineIssues(res)).toEqual([
      {
        line: 2,
        column: "subgroup",
        field: "subgroup",
        issue: `several subgroups in this instance are called 'Nest${camp.tag}'; give the supergroup too`,
      },
      { line: 4, column: "supergroup", field: "supergroup", issue: "no supergroup called 'Owls' in this instance" },
    ]);
    expect(await stored(camp.instanceId)).toEqual([]);
  });

  it("never resolves names or ids of another tenant or another instance", async () => {
    const camp = await freshCamp();
    const sibling = await freshCamp();
    const stranger = await newTenant(t().db);
    const theirs = await freshCamp(stranger.tenantId);
    const csv = [
      "user_id,first_name,surname,supergroup,block,room,sub_group_id",
      `x1,Ada,Lovelace,Eagles${theirs.tag},,,`,
      `x2,Ada,Lovelace,Eagles${sibling.tag},North${sibling.tag},,`,
      `x3,Ada,Lovelace,,,,${theirs.subgroupId}`,
      `x4,Ada,Lovelace,,,,${sibling.subgroupId}`,
      `x5,Ada,Lovelace,,,Lakeview${theirs.tag},`,
    ].join("\n");
    const res = await importCsv(camp.instanceId, csv);
    expect(res.status).toBe(400);
    expect(lineIssues(res)).toEqual([
      {
        line: 2,
        column: "supergroup",
        field: "supergroup",
        issue: `no supergroup called 'Eagles${theirs.tag}' in this instance`,
      },
      {
        line: 3,
        column: "supergroup",
        field: "supergroup",
        issue: `no supergroup called 'Eagles${sibling.tag}' in this instance`,
      },
      { line: 3, column: "block", field: "block", issue: `no block called 'North${sibling.tag}' in this instance` },
      { line: 4, column: "sub_group_id", field: "sub_group_id", issue: "does not exist" },
      { line: 5, column: "sub_group_id", field: "sub_group_id", issue: "does not belong to instance_id" },
      { line: 6, column: "room", field: "room", issue: `no room called 'Lakeview${theirs.tag}' in this instance` },
    ]);
    // Another tenant's instance is not a place to import into; to its owner it works.
    const foreign = await importCsv(theirs.instanceId, "user_id,first_name,surname\ny1,Ada,Lovelace\n");
    expect(foreign.status).toBe(400);
    expect(foreign.body.error.details).toEqual([{ field: "instance_id", issue: "does not exist" }]);
    expect(
      (await importCsv(theirs.instanceId, "user_id,first_name,surname\ny1,Ada,Lovelace\n", { as: stranger.admin.key })).status,
    ).toBe(201);
  });

  it("round-trips accents, apostrophes, quotes, commas and emoji through import and export", async () => {
    const camp = await freshCamp();
    const people = [
      ["r1", "Zoë", "O'Brien-Łukasiewicz", 'Ça va, "ami"'],
      ["r2", "José 🏕️", "Nguyễn", "first part; second part"],
      ["r3", "Siobhán", "D'Arcy", "👩🏽‍🚀 rank"],
      ["r4", "Ærøskøbing", "Müller", "=not a formula"],
    ];
    const quote = (v: string) => `"${v.replace(/"/g, '""')}"`;
    const csv = `\uFEFFuser_id,first_name,surname,rank\n${people.map((p) => p.map(quote).join(",")).join("\n")}\n`;
    const res = await importCsv(camp.instanceId, new TextEncoder().encode(csv));
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const exported = await exportOf(camp.instanceId);
    expect(exported.map((r) => [r.user_id, r.first_name, r.surname, r.rank])).toEqual(
      people.map(([u, f, s, r]) => [u, f, s, r === "=not a formula" ? "'=not a formula" : r]),
    );
    // The export reads back as it was: the neutralising quote is dropped again on import.
    const again = await freshCamp();
    const header = "user_id,first_name,surname,rank\n";
    const body =
      header + exported.map((r) => [r.user_id, r.first_name, r.surname, r.rank].map((v) => quote(v ?? "")).join(",")).join("\n");
    expect((await importCsv(again.instanceId, body)).status).toBe(201);
    expect((await stored(again.instanceId)).map((r) => r.rank)).toEqual(people.map((p) => p[3]));
  });

  it("reads its own export back: ids and names agree, so only the taken user_ids are refused", async () => {
    const camp = await freshCamp();
    await importCsv(
      camp.instanceId,
      `user_id,first_name,surname,supergroup,subgroup,block,room\ne1,Ada,Lovelace,Eagles${camp.tag},Nest${camp.tag},North${camp.tag},10${camp.tag}\n`,
    );
    const exported = await call(app, "GET", `/api/v1/participants/export.csv?instance_id=${camp.instanceId}`, { key });
    // The export re-imports into its own instance (the ids and names agree), refused only as a duplicate.
    const same = await importCsv(camp.instanceId, exported.body as string);
    expect(same.status).toBe(400);
    expect(lineIssues(same)).toEqual([
      { line: 2, column: "user_id", field: "user_id", issue: "is already used by a participant of this instance" },
    ]);
  });

  it("lists every problem of every line with its spreadsheet row, column and reason, and imports nothing", async () => {
    const camp = await freshCamp();
    const csv = [
      "user_id,first_name,surname,date_of_birth,arrival_date,departure_date,gender", // row 1
      "ok1,Ada,Lovelace,2011-01-01,,,", // 2
      "bad1,,Turing,2011-02-30,,,", // 3: no first name, no such date
      "", // 4: empty lines are skipped but counted
      'ok2,"Grace', // 5: a quoted cell over two lines (a name may not hold a line break)…
      'Brewster",Hopper,,,,', // …is one row of a spreadsheet
      "ok1,Dup,Licate,,,,", // 6: same user_id as row 2
      "bad2,Alan,Turing,,2026-07-10,2026-07-01,robot", // 7: a bad gender does not hide the dates' order
      "bad3,Too,Many,,,,,,surprise", // 8
    ].join("\n");
    const res = await importCsv(camp.instanceId, csv);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("VALIDATION_ERROR");
    expect(res.body.error.message).toBe("5 of 6 lines are invalid; nothing was imported");
    expect(lineIssues(res)).toEqual([
      { line: 3, column: "first_name", field: "first_name", issue: "is required" },
      { line: 3, column: "date_of_birth", field: "date_of_birth", issue: "is not a calendar date" },
      { line: 5, column: "first_name", field: "first_name", issue: "must not contain control characters" },
      { line: 6, column: "user_id", field: "user_id", issue: "is used twice in this batch (also line 2)" },
      { line: 7, column: "gender", field: "gender", issue: "must be one of Male, Female, Other" },
      { line: 7, column: "departure_date", field: "departure_date", issue: "must not be before arrival_date" },
      { line: 8, field: "line", issue: "has 9 cells, the header has 7" },
    ]);
    // Before the lines: one entry per column and problem, with a count and a few of the values.
    expect(res.body.error.details.filter((d: { count?: number }) => d.count !== undefined)).toContainEqual({
      field: "gender",
      column: "gender",
      issue: "must be one of Male, Female, Other",
      count: 1,
      samples: ["robot"],
    });
    expect(await stored(camp.instanceId)).toEqual([]);
  });

  it("checks without writing on a dry run, then imports the same file for real", async () => {
    const camp = await freshCamp();
    const csv = "user_id;first_name;surname\nd1;Ada;Lovelace\nd2;Alan;Turing\n";
    const dry = await importCsv(camp.instanceId, csv, { dryRun: true });
    expect(dry.status, JSON.stringify(dry.body)).toBe(200);
    // A dry run says what would happen.
    expect(dry.body.data).toMatchObject({ dry_run: true, lines: 2, created: 2, updated: 0, unchanged: 0 });
    expect(await stored(camp.instanceId)).toEqual([]);
    const real = await importCsv(camp.instanceId, csv);
    expect(real.status).toBe(201);
    expect(real.body.data).toMatchObject({ dry_run: false, lines: 2, created: 2 });
    const dryAgain = await importCsv(camp.instanceId, csv, { dryRun: true });
    expect(dryAgain.status).toBe(400);
    expect(lineIssues(dryAgain)).toHaveLength(2);
  });

  it("refuses files it cannot read with a reason for the whole file", async () => {
    const camp = await freshCamp();
    const cases: Array<[string | Uint8Array<ArrayBuffer>, RegExp]> = [
      ["first_name,surname\nAda,Lovelace\n", /no column for user_id/],
      ["user_id,first_name,surname,Surname\n", /'surname' and 'Surname' both mean surname/],
      ["user_id,first_name,surname\n", /no participant lines/],
      ["", /empty/],
      ['user_id,first_name,surname\nu1,"Ada,Lovelace\n', /not valid CSV/],
      [new Uint8Array([0x75, 0x2c, 0x66, 0x2c, 0x73, 0x0a, 0x5a, 0x6f, 0xeb, 0x0a]), /not UTF-8/],
    ];
    for (const [body, message] of cases) {
      const res = await importCsv(camp.instanceId, body);
      expect({ message: res.body.error?.message, status: res.status }).toEqual({
        message: expect.stringMatching(message),
        status: 400,
      });
    }
  });

  it("answers 400 for a missing or malformed instance_id, 409 for an archived instance", async () => {
    const csv = "user_id,first_name,surname\nu1,Ada,Lovelace\n";
    const missing = await call(app, "POST", "/api/v1/participants/import", {
      key,
      raw: csv,
      headers: { "Content-Type": "text/csv" },
    });
    expect(missing.status).toBe(400);
    expect(missing.body.error.details).toEqual([{ field: "instance_id", issue: "is required" }]);
    expect((await importCsv("nope", csv)).status).toBe(400);
    const archived = await freshCamp();
    await t().admin("update instances set status = 'archived' where id = $1", [archived.instanceId]);
    const res = await importCsv(archived.instanceId, csv);
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe("CONFLICT");
  });

  it("answers 415 for other content types or charsets, 413 over 10 MB, 401 without a credential", async () => {
    const camp = await freshCamp();
    const csv = "user_id,first_name,surname\nu1,Ada,Lovelace\n";
    expect((await importCsv(camp.instanceId, csv, { type: "application/json" })).status).toBe(415);
    expect((await importCsv(camp.instanceId, csv, { type: "text/csv; charset=iso-8859-1" })).status).toBe(415);
    expect((await importCsv(camp.instanceId, csv, { type: "text/csv; charset=utf-8" })).status).toBe(201);
    const big = `user_id,first_name,surname\n${"u,Ada,Lovelace\n".repeat(800_000)}`;
    const tooBig = await call(app, "POST", `/api/v1/participants/import?instance_id=${camp.instanceId}`, {
      key,
      raw: big,
      headers: { "Content-Type": "text/csv", "Content-Length": String(big.length) },
    });
    expect(tooBig.status).toBe(413);
    expect(tooBig.body.error.code).toBe("PAYLOAD_TOO_LARGE");
    const anonymous = await call(app, "POST", `/api/v1/participants/import?instance_id=${camp.instanceId}`, {
      raw: csv,
      headers: { "Content-Type": "text/csv" },
    });
    expect(anonymous.status).toBe(401);
  });
});
