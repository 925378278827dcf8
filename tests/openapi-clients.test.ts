import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useTestDatabase } from "./support/database.ts";
import { newTenant, type TestTenant } from "./support/fixtures.ts";
import { ROOT, run, TSX } from "./support/processes.ts";
import { type ServerProcess, startServerProcess } from "./support/server-process.ts";
import { canRun, named } from "./support/skips.ts";

/**
 * The OpenAPI document as client developers take it: Spectral (spectral:oas)
 * and Redocly lint it without an error or a warning; openapi-typescript,
 * @hey-api/openapi-ts and orval, with their default options, turn the served
 * document into clients; the examples/ clients written against them (/me,
 * Idempotency-Key, If-Match with a read's ETag, a photo as a Blob, a 400's
 * details on form fields) type-check and run against a real server. The
 * generators are the examples package's own install (TypeScript 5, which
 * openapi-typescript 7 and @hey-api/openapi-ts need; and tools that want a
 * newer Node than the service does), out of the service's `npm ci`.
 */

const t = useTestDatabase();
/** A tool of the examples package, installed apart from the service's (npm ci --prefix examples). */
const bin = (name: string) => join(ROOT, "examples/node_modules/.bin", name);
const SUITE = "the OpenAPI document for code generators";
const REMEDY = "the examples' tools are not installed (npm ci --prefix examples; .ci/run does)";
const installed = canRun(existsSync(bin("orval")), SUITE, REMEDY);
const QUIET = { REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true", NO_COLOR: "1" };
let server: ServerProcess;
let tenant: TestTenant;
let dir: string;
let documentFile: string;

beforeAll(async () => {
  if (!installed) return;
  server = await startServerProcess({ DATABASE_URL: t().url });
  tenant = await newTenant(t().db);
  dir = await mkdtemp(join(tmpdir(), "camp-openapi-"));
  documentFile = join(ROOT, "examples/generated/openapi.json");
  await mkdir(join(ROOT, "examples/generated"), { recursive: true });
  await writeFile(documentFile, await (await fetch(`${server.url}/api/v1/openapi.json`)).text());
}, 120_000);

afterAll(async () => {
  await server?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe.runIf(installed)(named(SUITE, installed, REMEDY), () => {
  it("passes @redocly/cli lint with no error and no warning", { timeout: 120_000 }, async () => {
    const lint = await run(bin("redocly"), ["lint", documentFile], QUIET, 120_000);
    expect(lint.code, lint.stdout + lint.stderr).toBe(0);
    // Its summary line counts the document's warnings (a notice about the Node version is not one).
    expect(lint.stdout + lint.stderr).toMatch(/Your API description is valid/);
    expect(lint.stdout + lint.stderr).not.toMatch(/You have \d+ warnings?/);
  });

  it("passes Spectral's spectral:oas with no error and no warning", { timeout: 120_000 }, async () => {
    const lint = await run(
      bin("spectral"),
      ["lint", "--ruleset", join(ROOT, ".spectral.yaml"), "--fail-severity", "hint", documentFile],
      QUIET,
      120_000,
    );
    expect(lint.code, lint.stdout + lint.stderr).toBe(0);
    expect(lint.stdout).toMatch(/No results with a severity of 'hint' or higher found/);
  });

  it("names every operation and lists its error codes", async () => {
    const document = JSON.parse(await (await fetch(`${server.url}/api/v1/openapi.json`)).text());
    const ids = new Set<string>();
    for (const item of Object.values(document.paths) as Array<Record<string, { operationId?: string; responses: object }>>) {
      for (const operation of Object.values(item)) {
        expect(operation.operationId).toMatch(/^[a-z][A-Za-z0-9]+$/);
        ids.add(operation.operationId as string);
        expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(["400", "500", "503"]));
      }
    }
    expect(ids.size).toBeGreaterThan(30);
    expect(document.components.schemas.Error.properties.error.properties.code.enum).toEqual(
      expect.arrayContaining(["VALIDATION_ERROR", "PRECONDITION_FAILED", "TOO_MANY_REQUESTS", "SERVICE_UNAVAILABLE"]),
    );
  });

  it("gives openapi-typescript types with which the examples/ client type-checks and runs against the server", {
    timeout: 180_000,
  }, async () => {
    const generated = await run(
      bin("openapi-typescript"),
      [documentFile, "-o", join(ROOT, "examples/generated/api.d.ts")],
      QUIET,
      120_000,
    );
    expect(generated.code, generated.stderr).toBe(0);
    // @hey-api/openapi-ts uses TypeScript's API: TypeScript 5's, wherever npm put the generator.
    const hey = await run(
      bin("openapi-ts"),
      ["-i", documentFile, "-o", join(ROOT, "examples/generated/hey-api")],
      { ...QUIET, NODE_OPTIONS: `--import=${join(ROOT, "examples/typescript-5.mjs")}` },
      120_000,
    );
    expect(hey.code, hey.stdout + hey.stderr).toBe(0);
    const orval = await run(
      bin("orval"),
      ["--config", join(ROOT, "examples/orval.config.cjs")],
      { ...QUIET, CAMP_URL: server.url },
      120_000,
    );
    expect(orval.code, orval.stdout + orval.stderr).toBe(0);
    // Its own TypeScript 5, not the project's.
    const check = await run(bin("tsc"), ["-p", join(ROOT, "examples")], {}, 120_000);
    expect(check.code, check.stdout + check.stderr).toBe(0);

    const example = await run(TSX, [join(ROOT, "examples/quickstart.ts")], {
      CAMP_URL: server.url,
      CAMP_API_KEY: tenant.admin.key,
    });
    expect(example.code, example.stderr).toBe(0);
    expect(example.stdout).toContain("created 5 participants");
    expect(example.stdout).toContain("sorted: Dijkstra, Hopper, Johnson, Lovelace, Turing");
    expect(example.stdout).toMatch(/pronouns she\/her; a second edit with the old ETag: HTTP 412/);
    expect(example.stdout).toMatch(/photo image\/png/);
    const stored = await t().admin("select count(*)::int as n from participants where tenant_id = $1", [tenant.tenantId]);
    expect(stored.rows[0].n).toBe(5);

    // The same safe-form conventions through each generator's client.
    for (const [client, name] of [
      ["client-openapi-fetch.ts", "openapi-fetch"],
      ["client-hey-api.ts", "hey-api"],
      ["client-orval.ts", "orval"],
    ]) {
      const ran = await run(TSX, [join(ROOT, "examples", client as string)], {
        CAMP_URL: server.url,
        CAMP_API_KEY: tenant.admin.key,
      });
      expect(ran.code, `${client}: ${ran.stdout}${ran.stderr}`).toBe(0);
      expect(ran.stdout).toContain(`${name}: ${tenant.admin.email} (admin)`);
      expect(ran.stdout).toContain(`${name}: retried create replayed true`);
      expect(ran.stdout).toContain(
        `${name}: form errors {"name":"must not be empty","end_date":"must not be before start_date"}`,
      );
      expect(ran.stdout).toMatch(new RegExp(`${name}: edit 200, stale edit 412 PRECONDITION_FAILED`));
      expect(ran.stdout).toContain(`${name}: photo image/png`);
    }
  });
});
