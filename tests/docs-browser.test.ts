import { existsSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useTestDatabase } from "./support/database.ts";
import { testApp } from "./support/fixtures.ts";
import { run } from "./support/processes.ts";

/**
 * A person's view of /docs: Debian's headless Chromium loads the page from a
 * running server, runs Swagger UI (served by the service, no CDN) and the DOM
 * it leaves must list the participant endpoints. .ci/run installs chromium; the
 * check is left out only when CAMP_BROWSER_CHECK=skip says no browser can be had.
 */
const CHROMIUM = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find((path) => existsSync(path));
const skipBrowser = process.env.CAMP_BROWSER_CHECK === "skip";

const t = useTestDatabase();
let server: ReturnType<typeof serve> | undefined;
let base = "";

beforeAll(async () => {
  const app = testApp(t().db);
  await new Promise<void>((ready) => {
    server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, (info: AddressInfo) => {
      base = `http://127.0.0.1:${info.port}`;
      ready();
    });
  });
});

afterAll(async () => {
  await new Promise<void>((done) => (server ? server.close(() => done()) : done()));
});

describe.skipIf(skipBrowser)("GET /docs in headless Chromium", () => {
  it("renders the reference with the participant endpoints", async () => {
    if (!CHROMIUM) throw new Error("chromium not found: apt-get install -y chromium (or set CAMP_BROWSER_CHECK=skip)");
    const result = await run(
      CHROMIUM,
      [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        // Lets the page's scripts and its fetch of openapi.json finish before the DOM is taken.
        "--virtual-time-budget=15000",
        "--dump-dom",
        `${base}/docs`,
      ],
      {},
      60_000,
    );
    expect(result.code, result.stderr.slice(-2000)).toBe(0);
    const paths = [...result.stdout.matchAll(/data-path="([^"]+)"/g)].map((m) => m[1]);
    expect(paths).toContain("/api/v1/participants");
    expect(paths).toContain("/api/v1/participants/{id}");
    expect(result.stdout).toContain("Camp Administration Service API");
    // A filter over the operations, and the authentication section says where a key comes from.
    expect(result.stdout).toMatch(/class="operation-filter-input"/);
    expect(result.stdout).toContain("keys issue");
    expect(result.stdout).toContain("/api/v1/api-keys/generate");
  }, 90_000);
});
