import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { useTestDatabase } from "./support/database.ts";
import { run, TSX } from "./support/processes.ts";

const t = useTestDatabase();
let out = "";

afterAll(async () => {
  if (out) await rm(out, { recursive: true, force: true });
});

describe("npm run bench -- --smoke and npm run bench:diagnosis -- --smoke", () => {
  it("seeds a scratch database, loads the API, the hand-written server and PostGraphile, each convention on and off, and prints every target", {
    timeout: 240_000,
  }, async () => {
    const peersOut = await mkdtemp(join(tmpdir(), "camp-bench-peers-"));
    try {
      const smoke = await run(
        TSX,
        ["bench/peers/load.ts", "--smoke", "--out", peersOut],
        { ...process.env, DATABASE_URL: t().url },
        230_000,
      );
      expect(smoke.code, smoke.stderr).toBe(0);
      expect(smoke.stdout).toMatch(/targets \(issue 28/);
      const files = await readdir(peersOut);
      expect(files).toHaveLength(1);
      const result = JSON.parse(await readFile(join(peersOut, files[0] as string), "utf8"));
      expect(result.peers.map((s: { scenario: string }) => s.scenario)).toEqual(["list", "get", "write"]);
      for (const scenario of result.peers) {
        expect(scenario.sides.map((s: { label: string }) => s.label)).toEqual(["API", "hand-written", "PostGraphile"]);
        for (const side of scenario.sides) {
          expect(side.requests, side.label).toBeGreaterThan(0);
          expect(side.errors, `${side.label}: ${side.first_error}`).toBe(0);
        }
      }
      expect(result.conventions.map((c: { convention: string }) => c.convention)).toEqual(
        expect.arrayContaining(["rate limits", "request log", "ETag", "key last_used_at", "idempotency lookup"]),
      );
    } finally {
      await rm(peersOut, { recursive: true, force: true });
    }
  });

  it("seeds a scratch database, loads the API, the Node floor and both baselines, and writes the figures", {
    timeout: 180_000,
  }, async () => {
    out = await mkdtemp(join(tmpdir(), "camp-bench-smoke-"));
    const smoke = await run(
      TSX,
      ["bench/peers/diagnosis.ts", "--smoke", "--out", out],
      { ...process.env, DATABASE_URL: t().url },
      170_000,
    );
    expect(smoke.code, smoke.stderr).toBe(0);
    expect(smoke.stdout).toContain("API/raw");
    expect(smoke.stdout).toMatch(/targets \(issue 19/);

    const files = await readdir(out);
    expect(files).toHaveLength(1);
    const result = JSON.parse(await readFile(join(out, files[0] as string), "utf8"));
    expect(result.smoke).toBe(true);
    expect(result.scenarios.map((s: { name: string }) => s.name)).toEqual(["list", "get", "write"]);
    for (const scenario of result.scenarios) {
      expect(scenario.api.requests).toBeGreaterThan(0);
      expect(scenario.floor.requests).toBeGreaterThan(0);
      expect(scenario.floor.errors).toBe(0);
      expect(scenario.raw.requests).toBeGreaterThan(0);
      expect(scenario.raw.errors, scenario.raw.first_error).toBe(0);
      // The one-round-trip baseline does the same work without error.
      expect(scenario.best.requests).toBeGreaterThan(0);
      expect(scenario.best.errors, scenario.best.first_error).toBe(0);
      expect(scenario.best.round_trips).toBe(1);
      // Issue 19: a read in two round trips, a write in three at most.
      expect(scenario.api.round_trips).toBeLessThanOrEqual(scenario.name === "write" ? 3 : 2);
      expect(scenario.statements.length).toBe(scenario.api.round_trips);
    }
  });
});
