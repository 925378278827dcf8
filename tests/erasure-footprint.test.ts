import { randomBytes } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../functions/app.ts";
import { loadConfig } from "../functions/config.ts";
import { MemoryPhotoStore } from "../functions/photos/memory-store.ts";
import { addCampStructure } from "./support/camp-structure.ts";
import { validated } from "./support/contract.ts";
import { useTestDatabase } from "./support/database.ts";
import { type CallOptions, call, newTenant, signToken, TEST_JWT_SECRET, type TestTenant } from "./support/fixtures.ts";
import { image } from "./support/images.ts";
import { useLogCapture } from "./support/logs.ts";
import { multipart } from "./support/photos.ts";
import { run } from "./support/processes.ts";
import { startReceiver } from "./support/receiver.ts";
import { testWorker } from "./support/webhooks.ts";

/**
 * The right to erasure, proved on the whole database: people are written
 * through every write path (single, bulk and CSV create, PATCH, photo upload,
 * contacts, care record, consents, check-in and check-out, an incident report), each with and without Idempotency-Key,
 * with events dispatched to a webhook endpoint; after their erasure a full
 * data dump (pg_dump --data-only), the photo store and the log hold none of
 * their names, dates of birth, schools, notes or photo bytes
 * (docs/security.md, "Copies of a child's data and of secrets").
 */

const t = useTestDatabase();
const logs = useLogCapture();
const store = new MemoryPhotoStore();
let app: ReturnType<typeof validated<ReturnType<typeof createApp>>>;
let tenant: TestTenant;
let instanceId: string;

/** Text found nowhere else: one first name for everyone, a surname, school and notes per write path. */
const tag = randomBytes(3).toString("hex");
const FIRST = `Zephyrine${tag}`;
const DOB = "2011-03-17";
const mark = (what: string) => `${what}${tag}`;

beforeAll(async () => {
  app = validated(
    createApp({
      db: t().db,
      config: loadConfig({
        AUTH_JWT_SECRET: TEST_JWT_SECRET,
        RATE_LIMIT_PER_MINUTE: "0",
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true",
      }),
      photoStore: store,
    }),
  );
  tenant = await newTenant(t().db);
  instanceId = (await addCampStructure(t(), tenant.tenantId)).instanceId;
  token = await signToken({ sub: `sub-${tenant.admin.email}`, email: tenant.admin.email, email_verified: true });
});

/** The admin's Bearer token: an admin's care access is write, and a token carries every scope. */
let token: string;
const admin = (): CallOptions => ({ token });
const keyed = (key: string | undefined, options: CallOptions): CallOptions =>
  key === undefined ? options : { ...options, headers: { ...options.headers, "Idempotency-Key": key } };

const person = (path: string) => ({
  instance_id: instanceId,
  user_id: `erase-${path}-${tag}`,
  first_name: FIRST,
  surname: mark(`Quill${path}`),
  date_of_birth: DOB,
  school_institute: mark(`School${path}`),
});

async function dump(): Promise<string> {
  const result = await run("pg_dump", ["--data-only", "--no-owner", t().url], {});
  expect(result.code, result.stderr).toBe(0);
  return result.stdout;
}

/** Which of the marks the text holds. */
function found(text: string, marks: string[]): string[] {
  return marks.filter((m) => text.includes(m));
}

describe("erasure", () => {
  it("leaves no copy of the person in the database, the photo store or the log, whichever path wrote them", async () => {
    const hook = await startReceiver();
    const endpoint = await call(app, "POST", "/api/v1/webhook-endpoints", { ...admin(), body: { url: hook.url } });
    expect(endpoint.status).toBe(201);

    const ids: string[] = [];
    const marks = [FIRST];
    for (const withKey of [false, true]) {
      const k = (name: string) => (withKey ? `${name}-${tag}` : undefined);
      const suffix = withKey ? "K" : "N";

      // Single create.
      const single = person(`Single${suffix}`);
      marks.push(single.surname, single.school_institute);
      const one = await call(app, "POST", "/api/v1/participants", keyed(k("single"), { ...admin(), body: single }));
      expect(one.status, JSON.stringify(one.body)).toBe(201);
      ids.push(one.body.data.id);

      // Bulk create.
      const bulkRows = [person(`BulkA${suffix}`), person(`BulkB${suffix}`)];
      for (const row of bulkRows) marks.push(row.surname, row.school_institute);
      const bulk = await call(
        app,
        "POST",
        "/api/v1/participants/bulk",
        keyed(k("bulk"), { ...admin(), body: { participants: bulkRows } }),
      );
      expect(bulk.status, JSON.stringify(bulk.body)).toBe(201);
      ids.push(...bulk.body.data.map((p: { id: string }) => p.id));

      // CSV import, a dry run first.
      const csvRow = person(`Csv${suffix}`);
      marks.push(csvRow.surname, csvRow.school_institute);
      const csv = `user_id,first_name,surname,date_of_birth,school_institute\n${csvRow.user_id},${csvRow.first_name},${csvRow.surname},${csvRow.date_of_birth},${csvRow.school_institute}\n`;
      for (const dryRun of [true, false]) {
        const imported = await call(
          app,
          "POST",
          `/api/v1/participants/import?instance_id=${instanceId}${dryRun ? "&dry_run=true" : ""}`,
          keyed(k(dryRun ? "dry" : "import"), { ...admin(), raw: csv, headers: { "Content-Type": "text/csv" } }),
        );
        expect(imported.status, JSON.stringify(imported.body)).toBe(dryRun ? 200 : 201);
      }
      const [csvCreated] = (
        await t().admin("select id from public.participants where tenant_id = $1 and user_id = $2", [
          tenant.tenantId,
          csvRow.user_id,
        ])
      ).rows;
      ids.push(csvCreated.id);
    }

    // Every person is then changed, photographed and given care records, with and without a key.
    const photo = await image("png");
    for (const [n, id] of ids.entries()) {
      for (const withKey of [false, true]) {
        const k = (name: string) => (withKey ? `${name}-${n}-${tag}` : undefined);
        const suffix = `${n}${withKey ? "K" : "N"}`;
        const changed = mark(`Patched${suffix}`);
        marks.push(changed);
        const patch = await call(
          app,
          "PATCH",
          `/api/v1/participants/${id}`,
          keyed(k("patch"), { ...admin(), body: { unit_name: changed } }),
        );
        expect(patch.status, JSON.stringify(patch.body)).toBe(200);

        const { body, contentType } = multipart([{ name: "photo", data: photo, filename: "p.png", type: "image/png" }]);
        const uploaded = await call(
          app,
          "POST",
          `/api/v1/photos/user/${id}`,
          keyed(k("photo"), {
            ...admin(),
            raw: new Uint8Array(body),
            headers: { "Content-Type": contentType, "Content-Length": String(body.length) },
          }),
        );
        expect(uploaded.status, JSON.stringify(uploaded.body)).toBe(200);

        const guardian = mark(`Guardian${suffix}`);
        marks.push(guardian);
        const contact = await call(
          app,
          "POST",
          `/api/v1/participants/${id}/contacts`,
          keyed(k("contact"), { ...admin(), body: { name: guardian, phone: "+44 20 7946 0958" } }),
        );
        expect(contact.status, JSON.stringify(contact.body)).toBe(201);

        const notes = mark(`CareNote${suffix}`);
        marks.push(notes);
        const care = await call(
          app,
          "PUT",
          `/api/v1/participants/${id}/care`,
          keyed(k("care"), { ...admin(), body: { care_notes: notes } }),
        );
        expect(care.status, JSON.stringify(care.body)).toBe(200);
        const consents = await call(
          app,
          "PUT",
          `/api/v1/participants/${id}/consents`,
          keyed(k("consent"), { ...admin(), body: { photo: "granted" } }),
        );
        expect(consents.status, JSON.stringify(consents.body)).toBe(200);

        // On site: a check-in where, and a check-out an admin overrode, why.
        const gate = mark(`Gate${suffix}`);
        const why = mark(`Why${suffix}`);
        marks.push(gate, why);
        const checkIn = await call(app, "POST", "/api/v1/attendance", {
          ...admin(),
          body: { participant_id: id, direction: "in", location: gate },
        });
        expect(checkIn.status, JSON.stringify(checkIn.body)).toBe(201);
        const checkOut = await call(app, "POST", "/api/v1/attendance", {
          ...admin(),
          body: { participant_id: id, direction: "out", override_reason: why },
        });
        expect(checkOut.status, JSON.stringify(checkOut.body)).toBe(201);

        // The health centre: an incident naming only this child, its text with a mark (it goes with the child).
        const happened = mark(`Incident${suffix}`);
        marks.push(happened);
        const reported = await call(
          app,
          "POST",
          "/api/v1/incidents",
          keyed(k("incident"), {
            ...admin(),
            body: {
              instance_id: instanceId,
              occurred_at: new Date(Date.now() - 3_600_000).toISOString(),
              location: "Pool",
              category: "injury",
              severity: "minor",
              participant_ids: [id],
              description: happened,
              actions_taken: "first aid",
            },
          }),
        );
        expect(reported.status, JSON.stringify(reported.body)).toBe(201);
      }
    }
    // The events reach the webhook queue (its deliveries are in the dump too).
    await testWorker(t().db).drain(5_000);
    hook.close();

    const storedPhotos = [...store.objects.values()].map((o) => Buffer.from(o.bytes));
    expect(storedPhotos.length).toBe(ids.length);
    // A replaced photo whose delete failed (photos/service.ts discard) is left under the participant's prefix.
    const [first] = [...store.objects.keys()];
    await store.put(`${first?.split("/").slice(0, 2).join("/")}/${"0".repeat(64)}.png`, photo, "image/png");
    const before = await dump();
    expect(found(before, [...marks, DOB]).sort()).toEqual([...marks, DOB].sort());
    // Keyed: create, bulk, dry run and import in each round, a photo, a contact and an incident per person (PATCH and PUT store none).
    const keyedAnswers = 4 + 3 * ids.length;
    const stored = await t().admin("select count(*)::int as n from public.idempotency_keys where tenant_id = $1", [
      tenant.tenantId,
    ]);
    expect(stored.rows[0].n).toBe(keyedAnswers);

    for (const id of ids) {
      const erased = await call(app, "POST", `/api/v1/participants/${id}/erase`, admin());
      expect(erased.status, JSON.stringify(erased.body)).toBe(200);
    }

    const after = await dump();
    expect(found(after, [...marks, DOB])).toEqual([]);
    for (const id of ids) expect(after).toContain(id);
    // The photo store: no object left, nor any with the bytes stored or sent.
    expect(store.objects.size).toBe(0);
    for (const bytes of [photo, ...storedPhotos]) expect(after).not.toContain(bytes.subarray(0, 48).toString("hex"));
    expect(logs.lines.length).toBeGreaterThan(0);
    expect(found(logs.lines.join("\n"), [...marks, DOB])).toEqual([]);
    // The stored answers that named them are kept only as a marker; the import's reports (counts, columns) name no one.
    const answers = await t().admin(
      "select withheld, count(*)::int as n from public.idempotency_keys where tenant_id = $1 group by withheld order by withheld",
      [tenant.tenantId],
    );
    expect(answers.rows).toEqual([
      { withheld: "erased", n: keyedAnswers - 2 },
      { withheld: null, n: 2 },
    ]);
  }, 120_000);
});
