import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { dumpSchema, SCHEMA_FILE } from "../scripts/schema-dump.ts";
import { useTestDatabase } from "./support/database.ts";
import { ROOT } from "./support/processes.ts";

/**
 * sql/schema.sql is the schema the migrations build, where a reader looks an
 * object up. This file's database is a copy of the migrated template, so
 * its schema is what the migrations make of an empty database.
 */
const t = useTestDatabase();

/**
 * Where two dumps part, to say what changed without printing thousands of
 * lines: the first differing line of the body (past the header, which names
 * the last migration and so differs after any new one), else of the header.
 */
function firstDifference(committed: string, built: string): string {
  const split = (text: string) => {
    const lines = text.split("\n");
    const body = lines.indexOf("");
    return { header: lines.slice(0, body), body: lines.slice(body) };
  };
  const a = split(committed);
  const b = split(built);
  const part = (x: string[], y: string[], offset: number) => {
    let i = 0;
    while (i < x.length && i < y.length && x[i] === y[i]) i++;
    if (i === x.length && i === y.length) return undefined;
    const around = (lines: string[]) => lines.slice(Math.max(0, i - 2), i + 3).join("\n");
    return `line ${offset + i + 1}:\n--- ${SCHEMA_FILE}\n${around(x)}\n--- what the migrations build\n${around(y)}`;
  };
  return part(a.body, b.body, a.header.length) ?? part(a.header, b.header, 0) ?? "";
}

describe("sql/schema.sql", () => {
  it("is what the migrations build (else run npm run db:schema)", async () => {
    const committed = readFileSync(`${ROOT}${SCHEMA_FILE}`, "utf8");
    const built = await dumpSchema(t().url);
    expect(
      built === committed,
      `${SCHEMA_FILE} is stale: run npm run db:schema and commit it. ${firstDifference(committed, built)}`,
    ).toBe(true);
  });

  it("comes out the same twice, with no owner but the ones that matter and no pg_dump session lines", async () => {
    const first = await dumpSchema(t().url);
    expect(await dumpSchema(t().url)).toBe(first);
    expect(first).not.toMatch(/^\\(un)?restrict/m);
    expect(first).not.toMatch(/owner to postgres;/);
    expect(first).not.toMatch(/^set /im);
    // The care functions run as camp_care (security definer): their owner is part of the security model.
    expect(first).toMatch(/^alter function private\.care_record\(p_participant uuid\) owner to camp_care;$/m);
  });

  it("tells a changed schema apart: a table, a grant or a function body that a migration adds", async () => {
    const before = await dumpSchema(t().url);
    try {
      await t().admin("create table public.schema_probe (id uuid primary key, note text not null default 'x')");
      const withTable = await dumpSchema(t().url);
      expect(withTable).not.toBe(before);
      expect(withTable).toContain("create table public.schema_probe (");
      await t().admin("grant select (note) on public.schema_probe to camp_api");
      expect(await dumpSchema(t().url)).toContain("grant select (note) on table public.schema_probe to camp_api;");
      await t().admin("create function private.schema_probe() returns int language sql as 'select 1'");
      const withFunction = await dumpSchema(t().url);
      await t().admin("create or replace function private.schema_probe() returns int language sql as 'select 2'");
      expect(await dumpSchema(t().url)).not.toBe(withFunction);
    } finally {
      await t().admin("drop table if exists public.schema_probe; drop function if exists private.schema_probe()");
    }
    expect(await dumpSchema(t().url)).toBe(before);
  });
});
