import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { addCampStructure, type CampStructure } from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { newTenant, type TestTenant } from "./support/fixtures.ts";
import { run, TSX } from "./support/processes.ts";

const t = useTestDatabase();
const camp = (...args: string[]) => run(TSX, ["cli/main.ts", ...args], { DATABASE_URL: t().url });

const dir = mkdtempSync(join(tmpdir(), "camp-import-"));
let files = 0;
function file(text: string): string {
  const path = join(dir, `participants-${++files}.csv`);
  writeFileSync(path, text);
  return path;
}

let tenant: TestTenant;
let structure: CampStructure;
beforeAll(async () => {
  tenant = await newTenant(t().db);
  structure = await addCampStructure(t(), tenant.tenantId, "C");
});

async function userIds(instanceId: string): Promise<string[]> {
  const res = await t().admin("select user_id from participants where instance_id = $1 order by created_at, id", [instanceId]);
  return res.rows.map((r) => r.user_id);
}

describe("camp participants import", () => {
  it("imports a file into the instance's tenant and prints the report as JSON", async () => {
    const instance = (await addCampStructure(t(), tenant.tenantId, "Cli")).instanceId;
    const csv = file("\uFEFFUser ID,First Name,Surname,Group,Block\nc1,Ada,Lovelace,EaglesCli,NorthCli\nc2,Alan,Turing,,\n");
    const res = await camp("participants", "import", csv, "--instance", instance);
    expect(res.code, res.stderr).toBe(0);
    const report = JSON.parse(res.stdout);
    expect(report).toMatchObject({ instance_id: instance, dry_run: false, lines: 2, created: 2, ignored_columns: ["Group"] });
    expect(await userIds(instance)).toEqual(["c1", "c2"]);
    const tenantOf = await t().admin("select distinct tenant_id from participants where instance_id = $1", [instance]);
    expect(tenantOf.rows).toEqual([{ tenant_id: tenant.tenantId }]);
  });

  it("reads day-first dates and a mapping file, then updates with --mode upsert", async () => {
    const instance = (await addCampStructure(t(), tenant.tenantId, "CliMap")).instanceId;
    const map = join(dir, "mapping.json");
    writeFileSync(map, JSON.stringify({ columns: { "Reg No": "user_id" }, values: { gender: { Lad: "Male" } } }));
    const csv = file("Reg No,First name,Surname,Sex,DOB\nm1,Ada,Lovelace,F,10/12/2011\nm2,Alan,Turing,lad,23/6/2012\n");
    const args = ["participants", "import", csv, "--instance", instance, "--date-format", "DD/MM/YYYY", "--map", map];
    const res = await camp(...args);
    expect(res.code, res.stderr).toBe(0);
    expect(JSON.parse(res.stdout)).toMatchObject({
      created: 2,
      columns: expect.arrayContaining([{ column: "Reg No", field: "user_id" }]),
    });
    const stored = await t().admin(
      "select user_id, gender, date_of_birth::text as dob from participants where instance_id = $1 order by user_id",
      [instance],
    );
    expect(stored.rows).toEqual([
      { user_id: "m1", gender: "Female", dob: "2011-12-10" },
      { user_id: "m2", gender: "Male", dob: "2012-06-23" },
    ]);
    const again = await camp(...args, "--mode", "upsert");
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ mode: "upsert", created: 0, updated: 0, unchanged: 2 });
    const wrong = await camp(...args, "--mode", "merge");
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/--mode must be create or upsert/);
  });

  it("writes nothing with --dry-run", async () => {
    const csv = file("user_id,first_name,surname,supergroup\nd1,Ada,Lovelace,EaglesC\n");
    const res = await camp("participants", "import", csv, "--instance", structure.instanceId, "--dry-run");
    expect(res.code, res.stderr).toBe(0);
    expect(JSON.parse(res.stdout)).toMatchObject({ dry_run: true, lines: 1, created: 1 });
    expect(await userIds(structure.instanceId)).toEqual([]);
  });

  it("lists every rejected line on stderr, imports nothing and exits 1", async () => {
    const csv = file("user_id,first_name,surname,DOB\nr1,Ada,Lovelace,10/12/2011\nr2,,Turing,\nr3,Grace,Hopper,\n");
    const res = await camp("participants", "import", csv, "--instance", structure.instanceId);
    expect(res.code).toBe(1);
    expect(res.stdout).toBe("");
    expect(res.stderr).toContain("line 2: DOB (date_of_birth): does not match date_format YYYY-MM-DD");
    // The summary first: one line per column and problem, with a count and sample values.
    expect(res.stderr).toContain('1 × DOB (date_of_birth): does not match date_format YYYY-MM-DD (e.g. "10/12/2011")');
    expect(res.stderr).toContain("line 3: first_name (first_name): is required");
    expect(res.stderr).toMatch(/camp: 2 of 3 lines are invalid; nothing was imported/);
    expect(await userIds(structure.instanceId)).toEqual([]);
  });

  it("exits 1 with a message for an unknown instance, another tenant's instance or a missing file", async () => {
    const csv = file("user_id,first_name,surname\nu1,Ada,Lovelace\n");
    const other = await newTenant(t().db);
    const cases: Array<[string[], RegExp]> = [
      [[csv, "--instance", "00000000-0000-4000-8000-000000000000"], /instance not found/],
      [[csv, "--instance", structure.instanceId, "--tenant", other.tenantId], /instance in that tenant not found/],
      [[join(dir, "missing.csv"), "--instance", structure.instanceId], /cannot read .*missing\.csv: ENOENT/],
      [[csv, "--instance", "camp-1"], /uuid/],
    ];
    for (const [args, message] of cases) {
      const res = await camp("participants", "import", ...args);
      expect({ args, code: res.code }).toEqual({ args, code: 1 });
      expect(res.stdout).toBe("");
      expect(res.stderr).toMatch(message);
    }
    expect(await userIds(structure.instanceId)).toEqual([]);
  });
});
