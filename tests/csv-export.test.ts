import { parse } from "csv-parse/sync";
import { beforeAll, describe, expect, it } from "vitest";
import { EXPORT_COLUMNS } from "../functions/participants-bulk/csv-export.ts";
import { addCampStructure, type CampStructure, tenantWithCamp } from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { call, newTenant, type TestApp, type TestTenant } from "./support/fixtures.ts";

const t = useTestDatabase();
const EXPORT = "/api/v1/participants/export.csv";

let app: TestApp;
let tenant: TestTenant;
let key: string;
let camp: CampStructure;
let counter = 0;

beforeAll(async () => {
  ({ app, tenant, camp } = await tenantWithCamp(t(), "A"));
  key = tenant.admin.key;
});

function row(overrides: Record<string, unknown> = {}) {
  return { user_id: `e-${++counter}`, instance_id: camp.instanceId, first_name: "Ada", surname: "Lovelace", ...overrides };
}

async function bulk(participants: Array<Record<string, unknown>>, as = key) {
  const res = await call(app, "POST", "/api/v1/participants/bulk", { key: as, body: { participants } });
  expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(201);
  return res.body.data as Array<Record<string, unknown>>;
}

/** The export's records as objects keyed by the header (fetch's text() has already dropped the BOM). */
function records(body: string): Array<Record<string, string>> {
  return parse(body, { bom: true, columns: true, record_delimiter: "\r\n" }) as Array<Record<string, string>>;
}

async function exported(query = "", as = key) {
  const res = await call(app, "GET", `${EXPORT}${query}`, { key: as });
  expect(res.status, String(res.body).slice(0, 300)).toBe(200);
  return records(res.body as string);
}

describe("GET /api/v1/participants/export.csv", () => {
  it("sends a CSV attachment whose header names every participant field and the computed names", async () => {
    const instance = (await addCampStructure(t(), tenant.tenantId, "Head")).instanceId;
    const res = await app.request(`${EXPORT}?instance_id=${instance}`, { headers: { "X-API-Key": key } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/csv; charset=utf-8");
    expect(res.headers.get("content-disposition")).toBe('attachment; filename="participants.csv"');
    const bytes = new Uint8Array(await res.arrayBuffer());
    // A byte-order mark first, so that spreadsheets read the file as UTF-8; then the header and nothing else.
    expect([...bytes.slice(0, 3)]).toEqual([0xef, 0xbb, 0xbf]);
    expect(new TextDecoder().decode(bytes)).toBe(`${EXPORT_COLUMNS.join(",")}\r\n`);
    expect(EXPORT_COLUMNS.slice(-4)).toEqual(["supergroup_name", "subgroup_name", "block_name", "room_name"]);
  });

  it("writes each participant as the API returns it", async () => {
    const instance = await addCampStructure(t(), tenant.tenantId, "Same");
    const [stored] = await bulk([
      row({
        instance_id: instance.instanceId,
        sub_group_id: instance.subgroupId,
        room_id: instance.roomId,
        gender: "Other",
        date_of_birth: "2011-05-06",
      }),
    ]);
    const [line] = await exported(`?instance_id=${instance.instanceId}`);
    const expected = Object.fromEntries(
      EXPORT_COLUMNS.map((c) => {
        const value = (stored as Record<string, unknown>)[c];
        return [c, value === null ? "" : String(value)];
      }),
    );
    expect(line).toEqual(expected);
    expect(line?.subgroup_name).toBe("NestSame");
  });

  it("neutralises cells that a spreadsheet would run as formulas", async () => {
    const instance = (await addCampStructure(t(), tenant.tenantId, "Formula")).instanceId;
    const dangerous = ['=HYPERLINK("http://evil")', "+1+2", "-3", "@SUM(A1)", "=1;2", "\uFF1D1+1"];
    await bulk(dangerous.map((value, i) => row({ instance_id: instance, user_id: `f-${i}`, first_name: value, rank: value })));
    const lines = await exported(`?instance_id=${instance}`);
    expect(lines.map((l) => l.first_name)).toEqual(dangerous.map((v) => `'${v}`));
    expect(lines.map((l) => l.rank)).toEqual(dangerous.map((v) => `'${v}`));
    // The API trims names, but other writers (SQL) may store a leading tab or carriage return.
    await t().admin(
      `insert into participants (tenant_id, instance_id, user_id, first_name, surname, rank)
       values ($1, $2, 'tab', E'\\tTab', 'X', E'\\rCR')`,
      [tenant.tenantId, instance],
    );
    const tab = (await exported(`?instance_id=${instance}&q=tab`))[0];
    expect(tab).toMatchObject({ first_name: "'\tTab", rank: "'\rCR" });
    // Harmless values are left alone.
    await bulk([row({ instance_id: instance, user_id: "plain", first_name: "Anne-Marie", surname: "A=B" })]);
    const plain = (await exported(`?instance_id=${instance}&q=plain`))[0];
    expect(plain).toMatchObject({ first_name: "Anne-Marie", surname: "A=B" });
  });

  it("quotes cells holding commas, quotes or line breaks, so that they read back unchanged", async () => {
    const instance = (await addCampStructure(t(), tenant.tenantId, "Quotes")).instanceId;
    await bulk([row({ instance_id: instance, user_id: "q-1", first_name: 'Ann "Nan"', surname: "Smith, Jr.", rank: 'a,b"c' })]);
    // Line breaks do not come through the API's trimmed fields, but SQL writers may store them.
    await t().admin(
      `insert into participants (tenant_id, instance_id, user_id, first_name, surname, unit_name, school_institute)
       values ($1, $2, 'q-2', 'Two', 'Lines', E'first\\r\\nsecond', E'one\\ntwo, three')`,
      [tenant.tenantId, instance],
    );
    const lines = await exported(`?instance_id=${instance}`);
    expect(lines.map((l) => [l.user_id, l.first_name, l.surname, l.rank, l.unit_name, l.school_institute])).toEqual([
      ["q-1", 'Ann "Nan"', "Smith, Jr.", 'a,b"c', "", ""],
      ["q-2", "Two", "Lines", "", "first\r\nsecond", "one\ntwo, three"],
    ]);
  });

  it("applies the list's filters and returns the list's rows in the list's order", async () => {
    const instance = await addCampStructure(t(), tenant.tenantId, "Filter");
    await bulk([
      row({ instance_id: instance.instanceId, first_name: "Maya", status: "inactive" }),
      row({ instance_id: instance.instanceId, first_name: "Noor", sub_group_id: instance.subgroupId }),
      row({ instance_id: instance.instanceId, first_name: "Maya", room_id: instance.roomId }),
      row({ first_name: "Maya" }),
    ]);
    const queries = [
      `?instance_id=${instance.instanceId}`,
      `?instance_id=${instance.instanceId}&status=active`,
      `?instance_id=${instance.instanceId}&q=maya`,
      `?super_group_id=${instance.supergroupId}`,
      `?room_id=${instance.roomId}`,
      "?q=maya",
    ];
    for (const query of queries) {
      const list = await call(app, "GET", `/api/v1/participants${query}${query ? "&" : "?"}limit=1000`, { key });
      expect(list.status).toBe(200);
      const ids = (await exported(query)).map((l) => l.id);
      expect({ query, ids }).toEqual({ query, ids: list.body.data.map((p: { id: string }) => p.id) });
    }
  });

  it("streams a list of several pages in order, each row once, without deleted participants", async () => {
    const instance = (await addCampStructure(t(), tenant.tenantId, "Pages")).instanceId;
    for (let batch = 0; batch < 3; batch++) {
      await bulk(Array.from({ length: 900 }, (_, i) => row({ instance_id: instance, user_id: `p-${batch}-${i}` })));
    }
    await t().admin("update participants set deleted_at = now() where instance_id = $1 and user_id = 'p-1-5'", [instance]);
    const res = await app.request(`${EXPORT}?instance_id=${instance}`, { headers: { "X-API-Key": key } });
    expect(res.status).toBe(200);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = "";
    let chunks = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks++;
      text += decoder.decode(value, { stream: true });
    }
    expect(chunks).toBeGreaterThan(2);
    const lines = records(text);
    expect(lines).toHaveLength(2699);
    expect(new Set(lines.map((l) => l.id)).size).toBe(2699);
    const expected = [0, 1, 2].flatMap((b) => Array.from({ length: 900 }, (_, i) => `p-${b}-${i}`)).filter((u) => u !== "p-1-5");
    expect(lines.map((l) => l.user_id)).toEqual(expected);
  });

  it("never shows another tenant's participants, even filtered by their instance", async () => {
    const stranger = await newTenant(t().db);
    const theirs = await addCampStructure(t(), stranger.tenantId, "T");
    await bulk([row({ instance_id: theirs.instanceId, first_name: "Secret" })], stranger.admin.key);
    expect(await exported(`?instance_id=${theirs.instanceId}`)).toEqual([]);
    expect((await exported("?q=Secret")).length).toBe(0);
    expect((await exported("?q=Secret", stranger.admin.key)).length).toBe(1);
  });

  it("answers 400 for a bad filter and 401 without a credential, with the error envelope", async () => {
    const bad = await call(app, "GET", `${EXPORT}?status=asleep`, { key });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe("VALIDATION_ERROR");
    const anonymous = await call(app, "GET", EXPORT);
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.error.code).toBe("UNAUTHORIZED");
  });
});
