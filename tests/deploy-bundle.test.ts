import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useTestDatabase } from "./support/database.ts";
import { DENO, DENO_CONFIG, DENO_DIR, ENTRY, type RunningFunction, startFunction } from "./support/deno.ts";
import { type CapturedDeploy, type DeployCapture, startDeployCapture } from "./support/deploy-capture.ts";
import { newTenant } from "./support/fixtures.ts";
import { ROOT, run } from "./support/processes.ts";
import { SUPABASE } from "./support/supabase-cli.ts";

/**
 * The deploy bundle, proven without an account: the real `supabase functions
 * deploy --use-api` (the CLI's Docker-free mode, the one its issue 3467 is
 * about) uploads to a local capture of the Management API; the test checks that
 * every module of the entry's graph was uploaded, then runs the entry from a
 * directory that holds only the uploaded files.
 */
const t = useTestDatabase();
const PROJECT_REF = "campdeploybundletest";
let capture: DeployCapture;
let deploy: CapturedDeploy;
let output = "";
let shipped = "";

beforeAll(async () => {
  capture = await startDeployCapture();
  const home = mkdtempSync(join(tmpdir(), "camp-deploy-"));
  const profile = join(home, "profile.yaml");
  writeFileSync(
    profile,
    [
      `name: deploy-capture`,
      `api_url: ${capture.url}`,
      `dashboard_url: ${capture.url}/dashboard`,
      "project_host: localhost",
      "",
    ].join("\n"),
  );
  const result = await run(
    SUPABASE,
    ["functions", "deploy", "api", "--use-api", `--remote=${PROJECT_REF}`, "--profile", profile, "--yes"],
    {
      // A made-up token in the Management API's format; only the capture sees it.
      SUPABASE_ACCESS_TOKEN: `sbp_${"0".repeat(40)}`,
      SUPABASE_TELEMETRY_DISABLED: "1",
      SUPABASE_NO_UPDATE_NOTIFIER: "1",
      HOME: home,
    },
    120_000,
  );
  output = result.stdout + result.stderr;
  expect(result.code, output).toBe(0);
  deploy = capture.deploys[0] as CapturedDeploy;

  shipped = mkdtempSync(join(tmpdir(), "camp-shipped-"));
  for (const [path, text] of deploy.files) {
    mkdirSync(dirname(join(shipped, path)), { recursive: true });
    writeFileSync(join(shipped, path), text);
  }
  rmSync(home, { recursive: true, force: true });
}, 180_000);

afterAll(async () => {
  await capture?.close();
  if (shipped) rmSync(shipped, { recursive: true, force: true });
});

describe("supabase functions deploy api", () => {
  it("deploys one function with its entry, its deno.json and the gateway's JWT check off", () => {
    expect(capture.deploys).toHaveLength(1);
    expect(deploy.metadata).toMatchObject({
      name: "api",
      entrypoint_path: ENTRY,
      import_map_path: DENO_CONFIG,
      verify_jwt: false,
    });
    // The CLI warns, and ships the function without it, for an import it cannot read.
    expect(output).not.toMatch(/WARN/);
  });

  it("uploads every module of the entry's graph, the shared functions/ code included", async () => {
    const info = await run(
      DENO,
      ["info", "--json", "--node-modules-dir=none", "--config", DENO_CONFIG, ENTRY],
      { DENO_DIR, NO_COLOR: "1" },
      180_000,
    );
    expect(info.code, info.stderr.slice(-2000)).toBe(0);
    const graph = (JSON.parse(info.stdout) as { modules: Array<{ specifier: string }> }).modules
      .map((m) => m.specifier)
      .filter((s) => s.startsWith(`file://${ROOT}`))
      .map((s) => s.slice(`file://${ROOT}`.length));
    expect(graph).toContain("functions/app.ts");
    expect(graph).toContain("functions/docs/assets.generated.ts");
    expect(graph.filter((path) => !deploy.files.has(path))).toEqual([]);
  });

  it("runs from the uploaded files alone", async () => {
    const tenant = await newTenant(t().db);
    let fn: RunningFunction | undefined;
    try {
      fn = await startFunction({ DATABASE_URL: t().url }, { cwd: shipped });
      const health = await fetch(`${fn.origin}/functions/v1/api/health`);
      expect(health.status).toBe(200);
      const list = await fetch(`${fn.origin}/api/api/v1/participants`, { headers: { "X-API-Key": tenant.admin.key } });
      expect(list.status).toBe(200);
      expect(await list.json()).toMatchObject({ success: true, data: [], meta: { total: 0 } });
      const docs = await fetch(`${fn.origin}/api/docs/assets/swagger-ui-bundle.js`);
      expect(docs.status).toBe(200);
    } finally {
      await fn?.stop();
    }
  }, 180_000);
});
