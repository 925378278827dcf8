import { existsSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from "vitest";
import { readGuide } from "../node/guides.ts";
import { CHROMIUM_PATH, Chromium, type Page } from "./support/chromium.ts";
import { useTestDatabase } from "./support/database.ts";
import { newTenant, type TestTenant, testApp } from "./support/fixtures.ts";

/**
 * A person's hour on /docs, in Debian's headless Chromium driven over the
 * DevTools protocol (tests/support/chromium.ts): the page loads from a running
 * server with Swagger UI served by the service (no CDN), the filter narrows
 * the operations, a key entered under Authorize survives a reload, and an
 * operation called from the page answers 200 with it. .ci/run installs
 * chromium; the check is left out only when CAMP_BROWSER_CHECK=skip says no
 * browser can be had. Every wait is for a state of the page, never a time.
 */
const CHROMIUM = CHROMIUM_PATH.find((path) => existsSync(path));
const skipBrowser = process.env.CAMP_BROWSER_CHECK === "skip";

const t = useTestDatabase();
let server: ReturnType<typeof serve> | undefined;
let base = "";
let tenant: TestTenant;
let browser: Chromium | undefined;

beforeAll(async () => {
  tenant = await newTenant(t().db);
  const app = testApp(t().db, {}, { readGuide });
  await new Promise<void>((ready) => {
    server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, (info: AddressInfo) => {
      base = `http://127.0.0.1:${info.port}`;
      ready();
    });
  });
});

afterAll(async () => {
  // Here rather than in the test: a test that timed out never reaches its own cleanup.
  await browser?.close();
  await new Promise<void>((done) => (server ? server.close(() => done()) : done()));
});

/** The paths of the operations the page shows. */
const shownPaths = (page: Page) =>
  page.evaluate<string[]>(`[...document.querySelectorAll(".opblock .opblock-summary-path")].map((e) => e.dataset.path)`);

/** Swagger UI has rendered the document: the info block and the operations. */
const rendered = `document.querySelector(".info .title") && document.querySelectorAll(".opblock").length > 50`;

describe.skipIf(skipBrowser)("GET /docs in headless Chromium", () => {
  it("filters operations, keeps the key across a reload, and calls GET /api/v1/me with it", async () => {
    if (!CHROMIUM) throw new Error("chromium not found: apt-get install -y chromium (or set CAMP_BROWSER_CHECK=skip)");
    browser = Chromium.launch(CHROMIUM);
    const page = await browser.newPage();
    // A wait that never ends fails by the test's timeout: say what the page never showed.
    onTestFailed(() => console.error(`the page was waited on for: ${page.waitingFor ?? "nothing"}`));
    await page.goto(`${base}/docs`);
    await page.waitFor(rendered);

    // The reference: every operation, the headers on every answer said once, the guides linked.
    const all = await shownPaths(page);
    expect(all).toContain("/api/v1/participants");
    expect(all).toContain("/api/v1/participants/{id}");
    const info = await page.evaluate<string>(`document.querySelector(".information-container").innerText`);
    expect(info).toContain("Camp Administration Service API");
    expect(info).toContain("Headers on every answer");
    expect(info).toContain("keys issue");
    const guide = await page.evaluate<string>(
      `[...document.querySelectorAll(".information-container a")].find((a) => a.textContent === "api.md")?.href`,
    );
    expect(guide).toBe(`${base}/docs/guides/api.md`);

    // The filter keeps the operations whose method, path, summary or tag hold every word typed.
    await page.type(".operation-filter-input", "get /api/v1/me");
    const filtered = await page.waitFor<string[]>(`(() => {
        const paths = [...document.querySelectorAll(".opblock .opblock-summary-path")].map((e) => e.dataset.path);
        return paths.length > 0 && paths.length < ${all.length} && paths;
      })()`);
    expect(filtered).toContain("/api/v1/me");
    expect(filtered.every((path) => path.startsWith("/api/v1/me"))).toBe(true);

    // Authorize: the ApiKey section says where a key comes from; the key entered is accepted.
    await page.click(".auth-wrapper .authorize");
    await page.waitFor(`document.querySelector(".modal-ux .auth-container input")`);
    const section = await page.evaluate<string>(`(() => {
        const box = [...document.querySelectorAll(".modal-ux .auth-container")].find((b) => b.textContent.includes("X-API-Key"));
        box.querySelector("input").setAttribute("data-test", "api-key");
        box.querySelector('[aria-label="Apply credentials"]').setAttribute("data-test", "api-key-authorize");
        return box.innerText;
      })()`);
    expect(section).toContain("npm start");
    expect(section).toContain("keys issue");
    expect(section).toContain("POST /api/v1/api-keys/generate");
    await page.type(`[data-test="api-key"]`, tenant.admin.key);
    await page.click(`[data-test="api-key-authorize"]`);
    await page.waitFor(`document.querySelector('.modal-ux [aria-label="Remove authorization"]')`);
    await page.click(".modal-ux .btn-done");
    await page.waitFor(`!document.querySelector(".modal-ux")`);

    // Reload: the key is still there (Authorize shows locked), and the page calls GET /api/v1/me with it.
    await page.reload();
    await page.waitFor(rendered);
    await page.waitFor(`document.querySelector(".auth-wrapper .authorize.locked")`);
    const me = "#operations-me-getMe";
    await page.click(`${me} .opblock-summary-control`);
    await page.waitFor(`document.querySelector("${me} .execute")`);

    // Its error statuses take a line each (description and code); the whole answer is a click away.
    const compact = await page.waitFor<string[]>(`(() => {
        const rows = [...document.querySelectorAll("${me} tr.compact-error")].map((row) => row.innerText.replace(/\\s+/g, " "));
        return rows.length > 0 && rows;
      })()`);
    expect(compact).toContainEqual(expect.stringMatching(/^401 .+ Example: UNAUTHORIZED$/));
    expect(compact).toContainEqual(expect.stringMatching(/^500 .+ Example: INTERNAL_ERROR$/));
    await page.evaluate(
      `[...document.querySelectorAll("${me} tr.compact-error")].find((row) => row.innerText.startsWith("401")).querySelector("button.show-error").click()`,
    );
    const whole = await page.waitFor<string>(`(() => {
        const row = [...document.querySelectorAll("${me} .responses-table:not(.live-responses-table) tr.response:not(.compact-error)")]
          .find((r) => r.querySelector(".response-col_status")?.textContent.trim() === "401");
        return row?.querySelector(".model-example")?.innerText;
      })()`);
    expect(whole).toContain('"code": "UNAUTHORIZED"');

    await page.click(`${me} .execute`);
    const status = await page.waitFor<string>(
      `document.querySelector("${me} .live-responses-table tr.response .response-col_status")?.textContent.trim()`,
    );
    expect(status).toBe("200");
    const body = await page.evaluate<string>(
      `document.querySelector("${me} .live-responses-table tr.response .response-col_description").innerText`,
    );
    expect(body).toContain(tenant.admin.email);

    // A guide the description links to opens in the browser as text.
    await page.goto(guide);
    const text = await page.waitFor<string>(`document.body && document.body.innerText`);
    expect(text).toMatch(/^# The API in detail/);
    expect(text).toContain("erDiagram");
  }, 120_000);
});
