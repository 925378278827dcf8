import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addCampStructure, type CampStructure } from "./support/camp-structure.ts";
import { takeViolations } from "./support/contract.ts";
import { useTestDatabase } from "./support/database.ts";
import { newTenant, type TestTenant } from "./support/fixtures.ts";
import { type ServerProcess, startServerProcess } from "./support/server-process.ts";

/**
 * A workload over every operation of the served document, through the
 * validating proxy in front of a real server process (tests/support/
 * validating-proxy.ts): each operation is called on its error paths (no
 * credential, a read-only key, an unknown query parameter, a record that does
 * not exist, a body of the wrong type) and every GET on its success path too.
 * Each answer is held to the document; this test also checks that every
 * operation was answered, so a new route is covered the day it is declared.
 * (Success paths of writes are held to the document by every other HTTP test.)
 */

const t = useTestDatabase();
let server: ServerProcess;
let tenant: TestTenant;
let readOnlyKey: string;
let camp: CampStructure;
let participant: string;
// biome-ignore lint/suspicious/noExplicitAny: the document is plain JSON here
let document: any;

const MISSING = "00000000-0000-4000-8000-000000000000";
const METHODS = ["get", "post", "put", "patch", "delete"];

beforeAll(async () => {
  server = await startServerProcess({ DATABASE_URL: t().url });
  tenant = await newTenant(t().db);
  camp = await addCampStructure(t(), tenant.tenantId);
  const reader = await tenant.addUser("staff", { withKey: false });
  const issued = await fetch(`${server.url}/api/v1/api-keys/generate`, {
    method: "POST",
    headers: { "X-API-Key": tenant.admin.key, "Content-Type": "application/json" },
    body: JSON.stringify({ email: reader.email, scopes: ["read"] }),
  });
  readOnlyKey = ((await issued.json()) as { data: { key: string } }).data.key;
  const created = await fetch(`${server.url}/api/v1/participants`, {
    method: "POST",
    headers: { "X-API-Key": tenant.admin.key, "Content-Type": "application/json" },
    body: JSON.stringify({ user_id: "workload-1", instance_id: camp.instanceId, first_name: "Ada", surname: "Lovelace" }),
  });
  participant = ((await created.json()) as { data: { id: string } }).data.id;
  document = await (await fetch(`${server.url}/api/v1/openapi.json`)).json();
}, 120_000);

afterAll(async () => {
  await server?.stop();
});

/** A live record for each path parameter, by the collection it follows. */
function realPath(template: string): string {
  const ids: Record<string, string> = {
    instances: camp.instanceId,
    supergroups: camp.supergroupId,
    subgroups: camp.subgroupId,
    blocks: camp.blockId,
    rooms: camp.roomId,
    participants: participant,
    user: participant,
    users: tenant.admin.userId,
  };
  const parts = template.split("/");
  return parts.map((part, i) => (/^\{.+\}$/.test(part) ? (ids[parts[i - 1] ?? ""] ?? MISSING) : part)).join("/");
}

const missingPath = (template: string) => template.replace(/\{[^}]+\}/g, MISSING);

async function send(method: string, path: string, init: { key?: string; headers?: Record<string, string>; body?: string } = {}) {
  const headers: Record<string, string> = { ...init.headers };
  if (init.key) headers["X-API-Key"] = init.key;
  const res = await fetch(`${server.url}${path}`, { method: method.toUpperCase(), headers, body: init.body });
  await res.arrayBuffer();
  return res.status;
}

describe("a workload over every operation of the document, through the validating proxy", () => {
  it("gets only answers the document allows, on error paths and every GET's success path", { timeout: 300_000 }, async () => {
    const answered = new Map<string, Set<number>>();
    const note = (operation: string, status: number) => {
      answered.set(operation, (answered.get(operation) ?? new Set()).add(status));
    };
    for (const [template, item] of Object.entries(document.paths) as Array<[string, Record<string, { security?: unknown[] }>]>) {
      for (const method of METHODS.filter((m) => item[m])) {
        const operation = `${method.toUpperCase()} ${template}`;
        const authenticated = (item[method]?.security ?? []).length > 0;
        const path = realPath(template);
        const body = method === "get" || method === "delete" ? undefined : "{}";
        const json: Record<string, string> = body ? { "Content-Type": "application/json" } : {};
        // No credential: 401 (or, on a public operation, its answer).
        note(operation, await send(method, path, { headers: json, body }));
        // An unknown query parameter: 400, whoever asks.
        note(operation, await send(method, `${path}?no_such_parameter=1`, { key: tenant.admin.key, headers: json, body }));
        if (!authenticated) continue;
        // A record that does not exist.
        if (template.includes("{")) {
          note(operation, await send(method, missingPath(template), { key: tenant.admin.key, headers: json, body }));
        }
        if (method === "get") {
          note(operation, await send(method, path, { key: tenant.admin.key }));
          note(operation, await send("head", path, { key: tenant.admin.key }));
        } else {
          // A read-only key may not write (it may rotate or revoke itself: not sent here).
          if (!/\/api-keys\/(regenerate|revoke)$/.test(template)) {
            note(operation, await send(method, path, { key: readOnlyKey, headers: json, body }));
          }
          // A body of a type the operation does not take.
          note(
            operation,
            await send(method, path, { key: tenant.admin.key, headers: { "Content-Type": "text/plain" }, body: "x" }),
          );
        }
      }
    }
    // Every answer above went through the proxy; any the document does not allow is listed here.
    expect(takeViolations()).toEqual([]);
    const operations = Object.entries(document.paths).flatMap(([template, item]) =>
      METHODS.filter((m) => (item as object)[m as keyof object]).map((m) => `${m.toUpperCase()} ${template}`),
    );
    expect(operations.filter((operation) => !answered.has(operation))).toEqual([]);
    expect(operations.length).toBeGreaterThan(50);
    // Error paths were reached: 401, 400, 403, 404 and 415 each on some operation.
    const statuses = new Set([...answered.values()].flatMap((set) => [...set]));
    for (const status of [200, 400, 401, 403, 404, 415]) expect(statuses.has(status), String(status)).toBe(true);
  });
});
