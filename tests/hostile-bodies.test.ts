import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_SYNC_RECORDS } from "../functions/attendance/schemas.ts";
import { JSON_BODY_LIMIT } from "../functions/http/body-policy.ts";
import { MAX_JSON_DEPTH, MAX_JSON_VALUES } from "../functions/http/json-shape.ts";
import { MAX_IMPORT_BYTES, MAX_IMPORT_LINES } from "../functions/participants-bulk/csv-import.ts";
import { MAX_LISTED_ISSUES } from "../functions/participants-bulk/import-rejection.ts";
import { MAX_PHOTO_BYTES, MAX_PHOTO_FRAMES, MULTIPART_OVERHEAD_BYTES } from "../functions/photos/limits.ts";
import { type CampStructure, tenantWithCamp } from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import type { TestTenant } from "./support/fixtures.ts";
import { gifOfEmptyComments, pngOfEmptyChunks } from "./support/images.ts";
import { multipart, newParticipant } from "./support/photos.ts";
import { type ServerProcess, startServerProcess } from "./support/server-process.ts";

/**
 * Bounded work per request (issue 27): each worst-case body sent by one
 * tenant to a real server process (as `npm start` runs it) is refused with
 * the right status, the server lives on, and another tenant's requests sent
 * meanwhile are answered. What each costs in memory and time is measured by
 * `npm run bench:hostile`, not asserted here.
 */

const t = useTestDatabase();
let server: ServerProcess;
let hostile: { tenant: TestTenant; camp: CampStructure };
let other: { tenant: TestTenant; camp: CampStructure };
// The photo store (DATA_DIR/photos) of the server, a directory of this test's own.
const dataDir = mkdtempSync(join(tmpdir(), "camp-hostile-"));

beforeAll(async () => {
  hostile = await tenantWithCamp(t(), "hostile");
  other = await tenantWithCamp(t(), "other");
  server = await startServerProcess({ DATABASE_URL: t().url, DATA_DIR: dataDir });
}, 120_000);

afterAll(async () => {
  await server?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

const text = (s: string): Uint8Array<ArrayBuffer> => new TextEncoder().encode(s);

interface Answer {
  status: number;
  body: {
    error?: { code: string; message: string; details: Array<Record<string, unknown>> };
    // biome-ignore lint/suspicious/noExplicitAny: a success's data, whatever the route answers
    data?: any;
  };
}

/**
 * The hostile request, while the other tenant lists its participants one
 * request after another; the hostile answer and the other tenant's statuses.
 */
async function whileOtherTenantWorks(
  method: string,
  path: string,
  body: Uint8Array<ArrayBuffer>,
  type: string,
  key = hostile.tenant.admin.key,
): Promise<{ answer: Answer; others: number[] }> {
  const others = whileOtherTenantWaits();
  try {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: { "X-API-Key": key, "Content-Type": type },
      body,
    });
    const answer = { status: res.status, body: (await res.json()) as Answer["body"] };
    return { answer, others: await others.stop() };
  } finally {
    await others.stop();
  }
}

/**
 * A request with a chunked body, written on a socket of its own straight to
 * the server (no proxy): as a careful client does, it stops writing once the
 * answer comes (a server that refuses a body early may close the connection
 * while the client is still writing, which fetch reports as a reset).
 */
function chunkedRequest(
  method: string,
  path: string,
  type: string,
  pieces: Uint8Array[],
  extraHeaders = "",
): Promise<Answer & { unsent: number }> {
  return new Promise((resolve, reject) => {
    const socket = connect(server.port, "127.0.0.1");
    let received = "";
    let answered = false;
    socket.on("data", (data) => {
      answered = true;
      received += data.toString("utf8");
    });
    // A server that refuses a body early may close while this side still writes: the write
    // fails (EPIPE, a reset) though the answer is already on its way. Judge by what arrived.
    let failure: Error | undefined;
    socket.on("error", (error) => {
      failure = error;
    });
    socket.on("close", () => {
      if (!answered) {
        reject(failure ?? new Error("connection closed without an answer"));
        return;
      }
      const [head = "", ...rest] = received.split("\r\n\r\n");
      const status = Number(/^HTTP\/1\.1 (\d+)/.exec(head)?.[1]);
      const chunkedAnswer = /transfer-encoding: chunked/i.test(head);
      const payload = chunkedAnswer ? rest.join("\r\n\r\n").replace(/(^|\r\n)[0-9a-f]+\r\n/gi, "") : rest.join("\r\n\r\n");
      resolve({ status, body: JSON.parse(payload.trim() || "{}"), unsent: pieces.length - written });
    });
    socket.write(
      `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-Key: ${hostile.tenant.admin.key}\r\n` +
        `Content-Type: ${type}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n${extraHeaders}\r\n`,
    );
    let written = 0;
    const send = (i: number) => {
      written = i;
      if (answered || socket.destroyed) return;
      if (i === pieces.length) {
        socket.write("0\r\n\r\n");
        return;
      }
      const piece = pieces[i] as Uint8Array;
      socket.write(`${piece.length.toString(16)}\r\n`);
      socket.write(piece);
      socket.write("\r\n", () => send(i + 1));
    };
    send(0);
  });
}

/** The other tenant's requests, one after another, until stopped; their statuses. */
function whileOtherTenantWaits(): { stop(): Promise<number[]> } {
  let done = false;
  const others: number[] = [];
  const work = (async () => {
    while (!done || others.length === 0) {
      try {
        const res = await fetch(`${server.url}/api/v1/participants?instance_id=${other.camp.instanceId}`, {
          headers: { "X-API-Key": other.tenant.admin.key },
        });
        await res.arrayBuffer();
        others.push(res.status);
      } catch (error) {
        others.push(0);
        process.stderr.write(
          `other tenant's request failed: ${(error as Error).cause ?? error}\n${server.stderr().slice(-3000)}\n`,
        );
      }
    }
  })();
  return {
    async stop() {
      done = true;
      await work;
      return others;
    },
  };
}

async function expectAlive(others: number[]) {
  expect(others.length).toBeGreaterThan(0);
  expect(others.every((s) => s === 200)).toBe(true);
  expect((await fetch(`${server.url}/health`)).status).toBe(200);
  expect(server.child.exitCode).toBeNull();
}

const importPath = (dryRun = true) =>
  `/api/v1/participants/import?instance_id=${hostile.camp.instanceId}${dryRun ? "&dry_run=true" : ""}`;

describe("a hostile CSV import", () => {
  it("of 10 MB of one-character lines stops at the first line past 20,000", async () => {
    const body = text(`user_id,first_name,surname\n${"a\n".repeat((10_000_000 - 27) / 2)}`);
    const { answer, others } = await whileOtherTenantWorks("POST", importPath(), body, "text/csv");
    expect(answer.status).toBe(400);
    expect(answer.body.error?.code).toBe("VALIDATION_ERROR");
    expect(answer.body.error?.details).toEqual([
      { field: "body", line: MAX_IMPORT_LINES + 2, issue: `more than ${MAX_IMPORT_LINES} lines` },
    ]);
    await expectAlive(others);
  });

  it("of 9.9 MB of commas stops at the first cell past 256", async () => {
    const { answer, others } = await whileOtherTenantWorks("POST", importPath(), text(",".repeat(9_900_000)), "text/csv");
    expect(answer.status).toBe(400);
    expect(answer.body.error?.details).toEqual([{ field: "body", line: 1, issue: "more than 256 cells" }]);
    await expectAlive(others);
  });

  it("of one 10 MB cell, quoted over many lines, stops at the first byte past 64 KB", async () => {
    const body = text(`user_id,first_name,surname\nu,"${"x\n".repeat(4_000_000)}",s\n`);
    const { answer, others } = await whileOtherTenantWorks("POST", importPath(false), body, "text/csv");
    expect(answer.status).toBe(400);
    expect(answer.body.error?.details).toEqual([{ field: "body", line: 32_769, issue: "longer than 65536 bytes" }]);
    await expectAlive(others);
  });

  it("of blank lines stops at the first line past 40,001", async () => {
    const body = text(`user_id,first_name,surname\n${",,\n".repeat(3_400_000)}`);
    const { answer, others } = await whileOtherTenantWorks("POST", importPath(), body, "text/csv");
    expect(answer.status).toBe(400);
    expect(answer.body.error?.details).toEqual([{ field: "body", line: 40_002, issue: "more than 40001 lines" }]);
    await expectAlive(others);
  });

  it("sent without Content-Length stops at the first byte past 10 MB with a 413", async () => {
    // Long lines, so that neither the lines nor the cells limit comes first.
    let n = 0;
    const line = () => `u${n++},Ada,${"x".repeat(1000)}\n`;
    const others = whileOtherTenantWaits();
    const answer = await chunkedRequest("POST", importPath(), "text/csv", [
      text("user_id,first_name,surname\n"),
      ...Array.from({ length: 20 }, () => text(Array.from({ length: 1000 }, line).join(""))),
    ]);
    expect(answer.status, JSON.stringify(answer.body)).toBe(413);
    expect(answer.body.error?.code).toBe("PAYLOAD_TOO_LARGE");
    expect(answer.body.error?.details).toEqual([{ field: "body", issue: `must be at most ${MAX_IMPORT_BYTES} bytes` }]);
    await expectAlive(await others.stop());
  });

  it("sent without Content-Length and with an Idempotency-Key stops at the first byte past 10 MB too", async () => {
    // The idempotency check hashes the whole body: it must not read past the limit either.
    const line = `u,Ada,${"x".repeat(1000)}\n`;
    const piece = text(line.repeat(1000));
    const others = whileOtherTenantWaits();
    const answer = await chunkedRequest(
      "POST",
      importPath(),
      "text/csv",
      [text("user_id,first_name,surname\n"), ...Array.from({ length: 100 }, () => piece)],
      `Idempotency-Key: hostile-${Date.now()}\r\n`,
    );
    expect(answer.status, JSON.stringify(answer.body)).toBe(413);
    expect(answer.body.error?.code).toBe("PAYLOAD_TOO_LARGE");
    // Answered while most of the 100 MB was still to be sent: nothing read it to its end.
    expect(answer.unsent).toBeGreaterThan(50);
    await expectAlive(await others.stop());
  });

  it(`of 20,000 bad lines lists the first ${MAX_LISTED_ISSUES} problems, with their lines`, async () => {
    const lines = Array.from({ length: MAX_IMPORT_LINES }, (_, n) => `u${n},,,2011-02-30,robot`);
    const body = text(`user_id,first_name,surname,date_of_birth,gender\n${lines.join("\n")}\n`);
    const { answer, others } = await whileOtherTenantWorks("POST", importPath(), body, "text/csv");
    expect(answer.status).toBe(400);
    expect(answer.body.error?.message).toBe(
      `20000 of 20000 lines are invalid; nothing was imported (the first ${MAX_LISTED_ISSUES} of 80000 problems are listed)`,
    );
    const details: Array<{ line?: number; count?: number; field?: string }> = answer.body.error?.details ?? [];
    // A summary per column and problem first (issue 40), then the first problems line by line.
    const summary = details.filter((d) => d.line === undefined);
    const listed = details.filter((d) => d.line !== undefined);
    expect(summary.map((d) => [d.field, d.count]).sort()).toEqual([
      ["date_of_birth", 20000],
      ["first_name", 20000],
      ["gender", 20000],
      ["surname", 20000],
    ]);
    expect(listed).toHaveLength(MAX_LISTED_ISSUES);
    expect(listed[0]).toEqual({ line: 2, column: "first_name", field: "first_name", issue: "is required" });
    expect(listed.at(-1)).toMatchObject({ line: 251 });
    await expectAlive(others);
  });
});

describe("a hostile JSON body", () => {
  it("of 5 MB holding an array of 2.6 million zeros is refused before it is parsed", async () => {
    const body = text(`{"participants":[${"0,".repeat(2_600_000)}0]}`);
    const { answer, others } = await whileOtherTenantWorks("POST", "/api/v1/participants/bulk", body, "application/json");
    expect(answer.status).toBe(400);
    expect(answer.body.error?.details).toEqual([{ field: "body", issue: `holds more than ${MAX_JSON_VALUES} values` }]);
    await expectAlive(others);
  });

  it("of 1 MB of nesting is refused before it is parsed", async () => {
    const body = text(`{"name":${"[".repeat(1_048_000)}`);
    const { answer, others } = await whileOtherTenantWorks("POST", "/api/v1/instances", body, "application/json");
    expect(answer.status).toBe(400);
    expect(answer.body.error?.details).toEqual([{ field: "body", issue: `is nested deeper than ${MAX_JSON_DEPTH} levels` }]);
    await expectAlive(others);
  });

  it("sent without Content-Length stops at the first byte past 1 MB with a 413", async () => {
    const others = whileOtherTenantWaits();
    const pieces = [text('{"name":"'), ...Array.from({ length: 20 }, () => text("x".repeat(1_048_576)))];
    const answer = await chunkedRequest("POST", "/api/v1/instances", "application/json", pieces);
    expect(answer.status, JSON.stringify(answer.body)).toBe(413);
    expect(answer.body.error?.details).toEqual([{ field: "body", issue: `must be at most ${JSON_BODY_LIMIT} bytes` }]);
    await expectAlive(await others.stop());
  });

  it("of 1,000 bulk rows with every field wrong is answered with each row's problems", async () => {
    const row = { instance_id: "nope", user_id: "", first_name: "\u0001", surname: "\u0001", gender: "robot" };
    const body = text(JSON.stringify({ participants: Array.from({ length: 1000 }, () => row) }));
    const { answer, others } = await whileOtherTenantWorks("POST", "/api/v1/participants/bulk", body, "application/json");
    expect(answer.status).toBe(400);
    expect(answer.body.error?.details.length).toBeGreaterThanOrEqual(1000);
    await expectAlive(others);
  });
});

describe("a hostile photo upload", () => {
  const photoPath = (userId: string) => `/api/v1/photos/user/${userId}`;
  const newUserId = async () => {
    const userId = `photo-${Date.now()}-${Math.random().toString(16).slice(2)}`;
    await newParticipant(t(), hostile.tenant.tenantId, hostile.camp.instanceId, userId);
    return userId;
  };

  it("sent without Content-Length stops at the first byte past the photo limit with a 413", async () => {
    const userId = await newUserId();
    const { body, contentType } = multipart([
      { name: "photo", data: new Uint8Array(50 * 1_048_576), filename: "photo.png", type: "image/png" },
    ]);
    const pieces = Array.from({ length: 50 }, (_, i) => new Uint8Array(body.subarray(i * 1_048_576, (i + 1) * 1_048_576)));
    pieces.push(new Uint8Array(body.subarray(50 * 1_048_576)));
    const others = whileOtherTenantWaits();
    const answer = await chunkedRequest("POST", photoPath(userId), contentType, pieces);
    expect(answer.status, JSON.stringify(answer.body)).toBe(413);
    expect(answer.body.error?.details).toEqual([
      { field: "body", issue: `must be at most ${MAX_PHOTO_BYTES + MULTIPART_OVERHEAD_BYTES} bytes` },
    ]);
    // Answered while most of the 50 MB was still to be sent: nothing buffered it to its end.
    expect(answer.unsent).toBeGreaterThan(25);
    await expectAlive(await others.stop());
  });

  it("of a 5 MB PNG of 400,000 empty private chunks is stripped of all of them", async () => {
    const userId = await newUserId();
    const { photo, chunks, stripped } = await pngOfEmptyChunks(MAX_PHOTO_BYTES);
    expect(chunks).toBeGreaterThan(400_000);
    const { body, contentType } = multipart([{ name: "photo", data: photo, filename: "photo.png", type: "image/png" }]);
    const { answer, others } = await whileOtherTenantWorks("POST", photoPath(userId), new Uint8Array(body), contentType);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect((answer.body as { data?: { size: number } }).data?.size).toBe(stripped);
    await expectAlive(others);
  });

  it(`of a 5 MB GIF of ${MAX_PHOTO_FRAMES} frames and 1.7 million empty comments is stripped of every comment`, async () => {
    const userId = await newUserId();
    const { photo, comments, stripped } = gifOfEmptyComments(MAX_PHOTO_BYTES, MAX_PHOTO_FRAMES);
    expect(comments).toBeGreaterThan(1_700_000);
    const { body, contentType } = multipart([{ name: "photo", data: photo, filename: "photo.gif", type: "image/gif" }]);
    const { answer, others } = await whileOtherTenantWorks("POST", photoPath(userId), new Uint8Array(body), contentType);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect((answer.body as { data?: { size: number } }).data?.size).toBe(stripped);
    await expectAlive(others);
  });
});

describe("a large CSV export", () => {
  it("of 5,000 participants arrives whole while the other tenant is answered", async () => {
    const instance = await tenantWithCamp(t(), "export");
    // Every text the export carries at its longest (200 characters), so each row is as long as a row can be.
    await t().admin(
      `insert into public.participants (tenant_id, instance_id, user_id, first_name, surname, date_of_birth,
                                        school_year, rank, unit_name, school_institute, room_number)
       select $1, $2, rpad('EXP-' || g || '-', 200, 'u'), rpad('F', 200, 'f'), rpad('S', 200, 's'),
              date '2012-01-01' + (g % 1000), rpad('Y', 200, 'y'), rpad('R', 200, 'r'), rpad('U', 200, 'u'),
              rpad('I', 200, 'i'), rpad('N', 200, 'n')
         from generate_series(1, 5000) g`,
      [instance.tenant.tenantId, instance.camp.instanceId],
    );
    const others = whileOtherTenantWaits();
    const res = await fetch(`${server.url}/api/v1/participants/export.csv?instance_id=${instance.camp.instanceId}`, {
      headers: { "X-API-Key": instance.tenant.admin.key },
    });
    const csv = await res.text();
    expect(res.status).toBe(200);
    const lines = csv.split("\r\n").filter((line) => line !== "");
    expect(lines).toHaveLength(1 + 5000);
    expect(new Set(lines.slice(1).map((line) => /EXP-\d+/.exec(line)?.[0])).size).toBe(5000);
    await expectAlive(await others.stop());
  });
});

describe("a hostile offline sync from a key with the attendance scope", () => {
  let key: string;
  let child: string;
  let pickup: string;
  let theirs: string;
  const movementsOf = async (tenantId: string) =>
    (await t().admin("select count(*)::int as n from public.attendance_movements where tenant_id = $1", [tenantId])).rows[0].n;

  beforeAll(async () => {
    const user = await hostile.tenant.addUser("staff", { withKey: false });
    const issued = await fetch(`${server.url}/api/v1/api-keys/generate`, {
      method: "POST",
      headers: { "X-API-Key": hostile.tenant.admin.key, "Content-Type": "application/json" },
      body: JSON.stringify({ email: user.email, scopes: ["attendance"] }),
    });
    expect(issued.status).toBe(201);
    key = ((await issued.json()) as { data: { key: string } }).data.key;
    child = await newParticipant(t(), hostile.tenant.tenantId, hostile.camp.instanceId);
    pickup = (
      await t().admin(
        "insert into public.participant_contacts (tenant_id, participant_id, name, authorised_pickup) values ($1, $2, 'Pickup', true) returning id",
        [hostile.tenant.tenantId, child],
      )
    ).rows[0].id;
    theirs = await newParticipant(t(), other.tenant.tenantId, other.camp.instanceId);
  });

  it(`of ${MAX_SYNC_RECORDS} movements of one child, shuffled, with the longest locations, is answered record by record`, async () => {
    // The costliest valid sync: every record settles the same child's whole timeline again.
    const start = Date.now() - 86_400_000;
    const records = Array.from({ length: MAX_SYNC_RECORDS }, (_, i) => ({
      participant_id: child,
      direction: i % 2 === 0 ? "in" : "out",
      recorded_at: new Date(start + i * 60_000).toISOString(),
      nonce: randomUUID(),
      location: "\u{1F3D5}".repeat(100),
      ...(i % 2 === 1 ? { pickup_contact_id: pickup } : {}),
    }));
    let seed = 41;
    const shuffled = records
      .map((r) => {
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        return { r, k: seed };
      })
      .sort((a, b) => a.k - b.k)
      .map(({ r }) => r);
    const body = text(JSON.stringify({ records: shuffled }));
    const { answer, others } = await whileOtherTenantWorks("POST", "/api/v1/attendance/sync", body, "application/json", key);
    expect(answer.status, JSON.stringify(answer.body).slice(0, 500)).toBe(200);
    expect(answer.body.data.results).toHaveLength(MAX_SYNC_RECORDS);
    expect(answer.body.data.counts.invalid).toBe(0);
    // Whatever each record was told on arrival, the stored timeline alternates: no conflict, out last.
    const stored = await t().admin(
      `select count(*)::int as n, count(*) filter (where conflict)::int as conflicts,
              (select presence from public.participants where id = $1) as presence
       from public.attendance_movements where participant_id = $1`,
      [child],
    );
    expect(stored.rows[0]).toEqual({ n: MAX_SYNC_RECORDS, conflicts: 0, presence: "out" });
    await expectAlive(others);
  });

  it(`of ${MAX_SYNC_RECORDS} hostile records is answered invalid each, naming the field, and reaches no other tenant`, async () => {
    const before = { ours: await movementsOf(hostile.tenant.tenantId), theirs: await movementsOf(other.tenant.tenantId) };
    const good = () => ({ participant_id: child, direction: "in", recorded_at: new Date().toISOString(), nonce: randomUUID() });
    const kinds: Array<[string, () => Record<string, unknown>]> = [
      ["location", () => ({ ...good(), location: "x".repeat(100_000) })],
      ["participant_id", () => ({ ...good(), participant_id: theirs })],
      ["participant_id", () => ({ ...good(), participant_id: "' or 1=1 --" })],
      ["recorded_at", () => ({ ...good(), recorded_at: "9999-12-31T23:59:59Z" })],
      ["recorded_at", () => ({ ...good(), recorded_at: "yesterday" })],
      ["nonce", () => ({ ...good(), nonce: undefined })],
      ["direction", () => ({ ...good(), direction: "sideways" })],
      ["security_code", () => ({ ...good(), security_code: "ABCD" })],
      ["override_reason", () => ({ ...good(), direction: "out", override_reason: "I say so" })],
      ["constructor", () => ({ ...good(), constructor: { prototype: { polluted: true } } })],
    ];
    // Three locations of 100,000 characters, the rest small: the body stays under the 1 MB limit.
    const records = Array.from({ length: MAX_SYNC_RECORDS }, (_, i) => {
      const [field, make] = kinds[i < 3 ? 0 : 1 + (i % (kinds.length - 1))] as [string, () => Record<string, unknown>];
      return { field, record: make() };
    });
    const body = text(JSON.stringify({ records: records.map((r) => r.record) }));
    expect(body.length).toBeLessThan(1_048_576);
    const { answer, others } = await whileOtherTenantWorks("POST", "/api/v1/attendance/sync", body, "application/json", key);
    expect(answer.status, JSON.stringify(answer.body).slice(0, 500)).toBe(200);
    const results: Array<{ index: number; outcome: string; field?: string; reason?: string }> = answer.body.data.results;
    expect(results.map((r) => r.outcome)).toEqual(records.map(() => "invalid"));
    // Each names what was wrong (an unknown key is named as the record itself), and echoes none of it.
    const named = results.map((r) => r.field);
    records.forEach(({ field }, i) => {
      if (field !== "constructor") expect({ i, field: named[i] }).toEqual({ i, field });
    });
    const echoed = JSON.stringify(answer.body);
    for (const text of ["xxxxxxxxxx", "or 1=1", "polluted", "I say so"]) expect(echoed).not.toContain(text);
    expect(echoed.length).toBeLessThan(200_000);
    // Nothing stored, and nothing of the other tenant's child touched.
    expect({ ours: await movementsOf(hostile.tenant.tenantId), theirs: await movementsOf(other.tenant.tenantId) }).toEqual(
      before,
    );
    const them = await t().admin("select presence, presence_since from public.participants where id = $1", [theirs]);
    expect(them.rows[0]).toEqual({ presence: null, presence_since: null });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    await expectAlive(others);

    // Control characters are the one thing refused for the whole body (docs/api.md, "The contract"), each field named.
    const controls = records
      .slice(0, 40)
      .map((_, i) => ({ ...good(), location: i % 10 === 9 ? "gate\u0000\u001b[31m" : "gate" }));
    const refused = await whileOtherTenantWorks(
      "POST",
      "/api/v1/attendance/sync",
      text(JSON.stringify({ records: controls })),
      "application/json",
      key,
    );
    expect(refused.answer.status).toBe(400);
    expect(refused.answer.body.error?.details.map((d) => d.field)).toEqual([9, 19, 29, 39].map((i) => `records.${i}.location`));
    expect({ ours: await movementsOf(hostile.tenant.tenantId), theirs: await movementsOf(other.tenant.tenantId) }).toEqual(
      before,
    );
    await expectAlive(refused.others);
  });
});
