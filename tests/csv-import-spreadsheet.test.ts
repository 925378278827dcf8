import { beforeAll, describe, expect, it } from "vitest";
import { addBlock, addInstance, addRoom, addSupergroup } from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { type CallOptions, call, newTenant, signToken, type TestApp, type TestTenant, testApp } from "./support/fixtures.ts";

/**
 * A new organisation's first day: its registration spreadsheet, as a UK camp
 * exports it, imported as it is. The dry run lists every problem of the
 * file at once; the file is then imported with options and a mapping only
 * (the file itself unchanged); importing it again with mode=upsert changes
 * nothing, and a copy with three changed rows updates exactly three.
 */

const t = useTestDatabase();

let app: TestApp;
let tenant: TestTenant;
let instanceId: string;
const admin: CallOptions = {};

const ROWS = 320;
/** Rows already registered before (an earlier import): the file's duplicates of existing participants. */
const EARLIER = 12;
/** Rows put into South room 8 (capacity 4): it overflows by two. */
const SOUTH_8 = [40, 41, 42, 43, 44, 45];
/** Rows whose parent's phone is written the local way, fixed by a value mapping. */
const LOCAL_PHONES = [60, 61];
/** Rows with an allergy written without the care record's severity, fixed by a value mapping. */
const LOOSE_ALLERGY = [70];
/** Rows with the block abbreviated, fixed by a value mapping. */
const ABBREVIATED_BLOCK = [80, 81, 82];

const pad = (n: number) => String(n).padStart(4, "0");

/** One spreadsheet row (its participant number n from 1): messy as registration forms are. */
function row(n: number, changed = false): string[] {
  const sex = ["M", "F", "Non-binary", "male", "FEMALE"][n % 5] as string;
  const day = (n % 28) + 1;
  const month = (n % 12) + 1;
  // Day-first, sometimes with leading zeros, sometimes not.
  const dob = n % 2 === 0 ? `${String(day).padStart(2, "0")}/${String(month).padStart(2, "0")}/2012` : `${day}/${month}/2013`;
  const block = ABBREVIATED_BLOCK.includes(n) ? "N" : SOUTH_8.includes(n) || n % 2 === 0 ? "South" : "North";
  const room = SOUTH_8.includes(n) ? "8" : String((n % 10) + 1);
  const phone = LOCAL_PHONES.includes(n) ? `07911 1${pad(n)}0` : `+44 7911 1${pad(n)}0`;
  const allergies = LOOSE_ALLERGY.includes(n)
    ? "Peanuts - severe"
    : n % 7 === 0
      ? "peanuts:anaphylactic; pollen:mild"
      : n % 11 === 0
        ? "Pollen:Moderate"
        : "";
  return [
    `  R${pad(n)} `,
    n === 100 ? "Zoë" : `First${n}`,
    changed && n === 150 ? `Changed${n}` : n % 13 === 0 ? `O'Brien-Smith ${n}` : `Surname${n}`,
    sex,
    dob,
    changed && n === 200 ? "Another School" : n % 3 === 0 ? "St Mary's, Ealing" : "Park School",
    `Year ${(n % 6) + 3}`,
    n % 2 === 0 ? "Red" : "Blue",
    block,
    room,
    `Parent${n} Family`,
    n % 9 === 0 ? "" : `parent${n}@example.test`,
    phone,
    n % 4 === 0 ? "Y" : "N",
    changed && n === 252 ? "sesame:severe" : allergies,
    n % 17 === 0 ? "vegetarian\nno pork" : "",
    n % 5 === 0 ? "No" : "Yes",
    n % 19 === 0 ? "Arrives late on day 1,\nparent will call" : "",
    ["S", "M", "L"][n % 3] as string,
  ];
}

const HEADER = [
  "Registration ID",
  "First name",
  "Surname",
  "Sex",
  "DOB",
  "School",
  "Year",
  "Group",
  "Block",
  "Room",
  "Parent Name",
  "Parent Email",
  "Parent Phone",
  "Emergency contact",
  "Allergies",
  "Dietary",
  "Photo consent",
  "Notes",
  "Shirt size",
];

const cell = (value: string) => (/[",\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value);

/** The file as the spreadsheet saves it: BOM, CRLF, blank lines here and there, quoted line breaks. */
function spreadsheet(options: { changed?: boolean; only?: number[] } = {}): string {
  const lines = [HEADER.join(",")];
  const numbers = options.only ?? Array.from({ length: ROWS }, (_, i) => i + 1);
  for (const n of numbers) {
    lines.push(row(n, options.changed).map(cell).join(","));
    if (n % 50 === 0) lines.push("");
    if (n % 97 === 0) lines.push(",,,,,,,,,,,,,,,,,,");
  }
  return `\uFEFF${lines.join("\r\n")}\r\n`;
}

/** The spreadsheet row (header = 1) of participant n in the full file, counted as a spreadsheet counts them. */
function rowOf(n: number): number {
  let at = 1;
  for (let i = 1; i <= n; i++) {
    at++;
    if (i === n) return at;
    if (i % 50 === 0) at++;
    if (i % 97 === 0) at++;
  }
  return at;
}

/** What fixes the file: options and a mapping only. */
const MAPPING = {
  columns: { Group: "supergroup", "Emergency contact": "contact_1_emergency" },
  values: {
    block: { N: "North" },
    contact_1_phone: Object.fromEntries(LOCAL_PHONES.map((n) => [`07911 1${pad(n)}0`, `+44 7911 1${pad(n)}0`])),
    allergies: { "Peanuts - severe": "peanuts:severe" },
  },
};
const FIXED = {
  date_format: "DD/MM/YYYY",
  mode: "upsert",
  override_capacity: "true",
  mapping: JSON.stringify(MAPPING),
};

function importCsv(csv: string, query: Record<string, string>) {
  const bytes = new TextEncoder().encode(csv);
  const params = new URLSearchParams({ instance_id: instanceId, ...query });
  return call(app, "POST", `/api/v1/participants/import?${params}`, {
    ...admin,
    raw: bytes,
    headers: { "Content-Type": "text/csv", "Content-Length": String(bytes.length) },
  });
}

async function auditCount(): Promise<number> {
  const res = await t().admin("select count(*)::int as n from audit_events where tenant_id = $1 and action <> 'read'", [
    tenant.tenantId,
  ]);
  return res.rows[0].n;
}

async function eventCount(): Promise<number> {
  const res = await t().admin("select count(*)::int as n from events where tenant_id = $1", [tenant.tenantId]);
  return res.rows[0].n;
}

interface Detail {
  field: string;
  column?: string;
  issue: string;
  line?: number;
  count?: number;
  samples?: string[];
  lines?: number[];
  block_name?: string;
  room_number?: string;
  capacity?: number;
  occupancy?: number;
}

beforeAll(async () => {
  app = testApp(t().db);
  tenant = await newTenant(t().db);
  // The admin's Bearer token: care write access (the contacts and allergies) and an admin's capacity override.
  admin.token = await signToken({ sub: `sub-${tenant.admin.email}`, email: tenant.admin.email, email_verified: true });
  instanceId = await addInstance(t(), tenant.tenantId, "Summer camp");
  await addSupergroup(t(), tenant.tenantId, instanceId, "Red");
  await addSupergroup(t(), tenant.tenantId, instanceId, "Blue");
  for (const name of ["North", "South"]) {
    const block = await addBlock(t(), tenant.tenantId, instanceId, name);
    // Both blocks have rooms 1 to 10: a room is named by its block and number.
    for (let room = 1; room <= 10; room++) await addRoom(t(), tenant.tenantId, instanceId, block, String(room), null);
  }
  await t().admin(
    "update rooms set capacity = 4 where room_number = '8' and block_id = (select id from blocks where instance_id = $1 and name = 'South')",
    [instanceId],
  );
  // An earlier import registered the first few children already.
  const earlier = `user_id,first_name,surname\n${Array.from({ length: EARLIER }, (_, i) => `R${pad(i + 1)},First${i + 1},Surname${i + 1}`).join("\n")}\n`;
  expect((await importCsv(earlier, {})).status).toBe(201);
});

describe("a registration spreadsheet of 320 rows", () => {
  it("dry run: lists every problem of every line at once, with a summary per column and problem", async () => {
    const before = await auditCount();
    const res = await importCsv(spreadsheet(), { dry_run: "true" });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("VALIDATION_ERROR");
    const details = res.body.error.details as Detail[];
    const summary = details.filter((d) => d.count !== undefined);
    const lines = details.filter((d) => d.line !== undefined);
    const entry = (column: string, issue: RegExp) => summary.find((d) => d.column === column && issue.test(d.issue));

    // Every date is day-first: one summary entry for the whole column, with samples, and a line each.
    expect(entry("DOB", /does not match date_format YYYY-MM-DD/)).toMatchObject({
      field: "date_of_birth",
      count: ROWS,
      samples: ["2/2/2013", "03/03/2012", "4/4/2013"],
    });
    expect(lines.filter((d) => d.field === "date_of_birth")).toHaveLength(ROWS);
    // The unknown block, and the duplicates of participants already in the instance.
    expect(entry("Block", /no block of that name/)).toMatchObject({ count: ABBREVIATED_BLOCK.length, samples: ["N"] });
    expect(entry("Registration ID", /already used by a participant/)).toMatchObject({ count: EARLIER });
    // The emergency flag is an unknown column without the mapping: the contacts' own problems still show.
    expect(entry("Parent Phone", /international number/)).toMatchObject({ count: LOCAL_PHONES.length });
    expect(entry("Allergies", /needs a severity/)).toMatchObject({ count: LOOSE_ALLERGY.length });
    // Care values are never echoed: no samples, no words of the cells anywhere in the answer.
    expect(entry("Parent Phone", /./)?.samples).toBeUndefined();
    expect(JSON.stringify(res.body)).not.toMatch(/07911|7911|Peanuts - severe|Parent\d+ Family|@example/);
    // The room that overflows, named by block and room number, with its capacity and the lines that fill it.
    const room = details.find((d) => d.lines !== undefined);
    expect(room).toMatchObject({
      field: "room_id",
      column: "Room",
      block_name: "South",
      room_number: "8",
      capacity: 4,
      occupancy: SOUTH_8.length,
      lines: SOUTH_8.map(rowOf),
    });
    expect(room?.issue).toMatch(/^room 8 of block South would hold 6 participants, over its capacity of 4/);
    expect(lines.filter((d) => d.field === "room_id").map((d) => d.line)).toEqual(SOUTH_8.map(rowOf));
    // Lines as a spreadsheet numbers rows, whatever the blank lines and the quoted line breaks.
    expect(lines.find((d) => d.field === "block")?.line).toBe(rowOf(ABBREVIATED_BLOCK[0] as number));
    expect(lines.find((d) => d.column === "Allergies")?.line).toBe(rowOf(LOOSE_ALLERGY[0] as number));
    expect(lines.filter((d) => d.column === "Parent Phone").map((d) => d.line)).toEqual(LOCAL_PHONES.map(rowOf));
    expect(res.body.error.message).toBe(`${ROWS} of ${ROWS} lines are invalid; nothing was imported`);
    expect(await auditCount()).toBe(before);
  });

  it("reports the unknown columns, with a suggestion where one is close to a field", async () => {
    const unmapped = await importCsv(spreadsheet(), {
      ...FIXED,
      mapping: JSON.stringify({ ...MAPPING, columns: {} }),
      dry_run: "true",
    });
    expect(unmapped.status, JSON.stringify(unmapped.body).slice(0, 2000)).toBe(200);
    expect(unmapped.body.data.ignored_columns).toEqual(["Group", "Emergency contact", "Notes", "Shirt size"]);
    expect(unmapped.body.data.column_suggestions).toEqual([{ column: "Group", did_you_mean: ["supergroup", "subgroup"] }]);
    const mapped = await importCsv(spreadsheet(), { ...FIXED, dry_run: "true" });
    expect(mapped.status).toBe(200);
    expect(mapped.body.data.ignored_columns).toEqual(["Notes", "Shirt size"]);
    expect(mapped.body.data.columns).toContainEqual({ column: "Group", field: "supergroup" });
  });

  it("imports for real with options and a mapping only, then an upsert of the same file changes nothing", async () => {
    const res = await importCsv(spreadsheet(), FIXED);
    expect(res.status, JSON.stringify(res.body).slice(0, 3000)).toBe(201);
    expect(res.body.data).toMatchObject({ mode: "upsert", lines: ROWS, created: ROWS - EARLIER, updated: EARLIER, unchanged: 0 });
    expect(res.body.data.outcomes).toHaveLength(ROWS);
    expect(res.body.data.outcomes[0]).toEqual({ line: 2, outcome: "updated" });

    const stored = await t().admin(
      `select p.user_id, p.gender, p.date_of_birth::text as dob, p.school_institute, sg.name as supergroup, b.name as block, p.room_number
       from participants p join supergroups sg on sg.id = p.super_group_id join blocks b on b.id = p.block_id
       where p.instance_id = $1 and p.user_id in ('R0002', 'R0003', 'R0040', 'R0080') order by p.user_id`,
      [instanceId],
    );
    expect(stored.rows).toEqual([
      {
        user_id: "R0002",
        gender: "Other",
        dob: "2012-03-03",
        school_institute: "Park School",
        supergroup: "Red",
        block: "South",
        room_number: "3",
      },
      {
        user_id: "R0003",
        gender: "Male",
        dob: "2013-04-04",
        school_institute: "St Mary's, Ealing",
        supergroup: "Blue",
        block: "North",
        room_number: "4",
      },
      {
        user_id: "R0040",
        gender: "Male",
        dob: "2012-05-13",
        school_institute: "Park School",
        supergroup: "Red",
        block: "South",
        room_number: "8",
      },
      {
        user_id: "R0080",
        gender: "Male",
        dob: "2012-09-25",
        school_institute: "Park School",
        supergroup: "Red",
        block: "North",
        room_number: "1",
      },
    ]);
    const care = await t().admin(
      `select p.user_id, c.name, c.phone, c.email, c.emergency, r.allergies, r.dietary_requirements,
              (select k.status from participant_consents k where k.participant_id = p.id and k.kind = 'photo' order by k.seq desc limit 1) as photo
       from participants p join participant_contacts c on c.participant_id = p.id left join participant_care r on r.id = p.id
       where p.instance_id = $1 and p.user_id in ('R0017', 'R0060', 'R0070') order by p.user_id`,
      [instanceId],
    );
    expect(care.rows).toEqual([
      {
        user_id: "R0017",
        name: "Parent17 Family",
        phone: "+447911100170",
        email: "parent17@example.test",
        emergency: false,
        allergies: [],
        dietary_requirements: "vegetarian\nno pork",
        photo: "granted",
      },
      {
        user_id: "R0060",
        name: "Parent60 Family",
        phone: "+447911100600",
        email: "parent60@example.test",
        emergency: true,
        allergies: null,
        dietary_requirements: null,
        photo: "refused",
      },
      {
        user_id: "R0070",
        name: "Parent70 Family",
        phone: "+447911100700",
        email: "parent70@example.test",
        emergency: false,
        allergies: [{ name: "peanuts", severity: "severe" }],
        dietary_requirements: null,
        photo: "refused",
      },
    ]);

    const audit = await auditCount();
    const events = await eventCount();
    const again = await importCsv(spreadsheet(), FIXED);
    expect(again.status).toBe(201);
    expect(again.body.data).toMatchObject({ created: 0, updated: 0, unchanged: ROWS });
    expect(again.body.data.outcomes.every((o: { outcome: string }) => o.outcome === "unchanged")).toBe(true);
    // Nothing changed, so nothing was written: no audit event, no change event.
    expect(await auditCount()).toBe(audit);
    expect(await eventCount()).toBe(events);
  });

  it("updates exactly the three changed rows, and records only their changes", async () => {
    const audit = await auditCount();
    const dry = await importCsv(spreadsheet({ changed: true }), { ...FIXED, dry_run: "true" });
    expect(dry.status).toBe(200);
    expect(dry.body.data).toMatchObject({ created: 0, updated: 3, unchanged: ROWS - 3 });
    const res = await importCsv(spreadsheet({ changed: true }), FIXED);
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({ created: 0, updated: 3, unchanged: ROWS - 3 });
    expect(res.body.data.outcomes.filter((o: { outcome: string }) => o.outcome === "updated")).toEqual([
      { line: rowOf(150), outcome: "updated" },
      { line: rowOf(200), outcome: "updated" },
      { line: rowOf(252), outcome: "updated" },
    ]);
    const written = await t().admin(
      `select e.resource_type, e.changes from audit_events e where e.tenant_id = $1 and e.action <> 'read' order by e.id desc limit 3`,
      [tenant.tenantId],
    );
    expect(await auditCount()).toBe(audit + 3);
    expect(written.rows.map((r) => [r.resource_type, Object.keys(r.changes).sort()]).sort()).toEqual([
      ["care_record", ["allergies"]],
      ["participant", ["full_name", "surname"]],
      ["participant", ["school_institute"]],
    ]);
  });
});
