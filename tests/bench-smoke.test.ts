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

describe("npm run bench:attendance -- --morning, shortened", () => {
  it("paces check-ins, check-outs, leaders' reads and offline syncs against the real server, and reports CPU, memory and load", {
    timeout: 120_000,
  }, async () => {
    const dir = await mkdtemp(join(tmpdir(), "camp-bench-morning-"));
    try {
      const smoke = await run(
        TSX,
        ["bench/features/attendance.ts", "--morning", "--minutes", "0.03", "--check-ins", "50", "--out", dir],
        { ...process.env, DATABASE_URL: t().url },
        110_000,
      );
      expect(smoke.code, smoke.stderr).toBe(0);
      const files = await readdir(dir);
      expect(files).toHaveLength(1);
      const result = JSON.parse(await readFile(join(dir, files[0] as string), "utf8")).morning_paced;
      expect(result.errors, JSON.stringify(result.first_errors)).toBe(0);
      expect(result.check_ins).toEqual({ online: 44, offline: 6, total: 50 });
      expect(result.latency.check_in.n).toBe(44);
      expect(result.latency.check_out.n).toBeGreaterThan(0);
      expect(result.latency.roster.n).toBe(12);
      expect(result.latency.presence.n).toBeGreaterThanOrEqual(12);
      // Each device's second upload resends its first: duplicates, no conflicts.
      type Counts = { accepted: number; duplicate: number; conflict: number; invalid: number };
      const counts: Counts[] = result.syncs.map((s: { counts: Counts }) => s.counts);
      expect(counts.reduce((n, c) => n + c.accepted, 0)).toBe(6);
      expect(counts.some((c) => c.duplicate > 0)).toBe(true);
      expect(counts.every((c) => c.conflict === 0 && c.invalid === 0)).toBe(true);
      expect(result.present_at_end).toBe(50 - result.check_outs);
      expect(result.cpu.server_ms).toBeGreaterThan(0);
      expect(result.cpu.postgres_ms).toBeGreaterThan(0);
      expect(result.memory.server_peak_rss_mb).toBeGreaterThan(0);
      expect(smoke.stdout).toMatch(/of one core/);
      expect(smoke.stdout).toMatch(/load average/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
