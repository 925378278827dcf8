import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { generateDatabaseTypes, TYPES_FILE } from "../scripts/database-types.ts";
import { useTestDatabase } from "./support/database.ts";
import { ROOT } from "./support/processes.ts";
import { canRun } from "./support/skips.ts";
import { supabase } from "./support/supabase-cli.ts";

/**
 * The Supabase CLI's view of the migrated schema (this file's database is a
 * copy of the migrated template): the committed types match it, and the
 * linter and the advisors find nothing to complain about.
 */
const t = useTestDatabase();

describe("the Supabase CLI workflow", () => {
  it("the committed database types match the migrations (else run npm run gen:types)", () => {
    const committed = readFileSync(`${ROOT}${TYPES_FILE}`, "utf8");
    expect(generateDatabaseTypes(t().url) === committed, `${TYPES_FILE} is stale: run npm run gen:types`).toBe(true);
  }, 60_000);

  it("supabase db lint finds no error or warning (plpgsql_check over every function)", async (ctx) => {
    const available = await t().admin("select 1 from pg_available_extensions where name = 'plpgsql_check'");
    // The embedded Postgres (no DATABASE_URL) is built without plpgsql_check and cannot load
    // it; a server without the package skips too, saying so, except in CI, which installs it.
    const remedy = process.env.DATABASE_URL
      ? "this Postgres has no plpgsql_check (apt-get install postgresql-15-plpgsql-check; .ci/run does)"
      : "the embedded Postgres has no plpgsql_check (set DATABASE_URL to a Postgres that has it)";
    if (!canRun((available.rowCount ?? 0) > 0, "supabase db lint", remedy)) ctx.skip(remedy);
    expect(available.rowCount, "install the Debian package postgresql-15-plpgsql-check (.ci/run does)").toBe(1);
    const lint = await supabase(["db", "lint", `--remote=${t().url}`, "--level", "warning", "--fail-on", "warning"]);
    expect(lint.code, lint.stdout + lint.stderr).toBe(0);
    expect(lint.stdout + lint.stderr).toMatch(/No schema errors found/);
  }, 60_000);

  it("supabase db advisors report no security or performance issue at level WARN or above", async () => {
    // The schemas config.toml exposes through the Data API, as on a hosted project: the security advisors check those.
    const config = readFileSync(`${ROOT}supabase/config.toml`, "utf8");
    const exposed = [...(/schemas\s*=\s*\[([^\]]*)\]/.exec(config)?.[1]?.matchAll(/"([a-z_]+)"/g) ?? [])]
      .map((m) => m[1] as string)
      .filter((schema) => schema !== "graphql_public");
    expect(exposed).toContain("public");
    const database = new URL(t().url).pathname.slice(1);
    await t().admin(`alter database ${database} set pgrst.db_schemas = '${exposed.join(", ")}'`);
    const advisors = await supabase([
      "db",
      "advisors",
      `--remote=${t().url}`,
      "--type",
      "all",
      "--level",
      "warn",
      "--output-format",
      "json",
    ]);
    expect(advisors.code, advisors.stderr).toBe(0);
    const issues = (JSON.parse(advisors.stdout) as { results: Array<{ level: string; name: string; detail: string }> }).results;
    expect(issues.map((i) => `${i.level} ${i.name}: ${i.detail}`)).toEqual([]);
  }, 60_000);
});
