import { randomBytes, randomUUID } from "node:crypto";
import type { AddressInfo } from "node:net";
import { createAdaptorServer } from "@hono/node-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../functions/app.ts";
import { loadConfig } from "../functions/config.ts";
import { fromPgError } from "../functions/db/pg-errors.ts";
import { MemoryPhotoStore } from "../functions/photos/memory-store.ts";
import { addCampStructure } from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { newTenant, signToken, TEST_JWT_SECRET, type TestTenant } from "./support/fixtures.ts";
import { image } from "./support/images.ts";
import { multipart } from "./support/photos.ts";
import { run } from "./support/processes.ts";

/**
 * Erasure cannot be outrun (issue 38, sql/migrations/*_erasure_holds.sql; on site, issue 41):
 * over HTTP, every write that hangs data on a participant is sent while
 * `POST /participants/{id}/erase` runs, many times, with and without an
 * Idempotency-Key. Each write must either commit first (and be erased with
 * the person) or be refused (404; 400 naming the field when the participant
 * is in the body); afterwards a `pg_dump --data-only` and the photo store
 * hold nothing of anyone erased (no movement, code, presence, mark or place
 * in a roll call either), and no keyed retry gets an answer about the person
 * back. The on-site paths run fewer rounds, to keep the file fast.
 */

const t = useTestDatabase();
const store = new MemoryPhotoStore();
const tag = randomBytes(3).toString("hex");
let base: string;
let server: ReturnType<typeof createAdaptorServer>;
let tenant: TestTenant;
let instanceId: string;
let token: string;
let photo: Buffer;

beforeAll(async () => {
  const app = createApp({
    db: t().db,
    config: loadConfig({ AUTH_JWT_SECRET: TEST_JWT_SECRET, RATE_LIMIT_PER_MINUTE: "0" }),
    photoStore: store,
  });
  server = createAdaptorServer({ fetch: app.fetch });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  tenant = await newTenant(t().db);
  instanceId = (await addCampStructure(t(), tenant.tenantId)).instanceId;
  token = await signToken({ sub: `sub-${tenant.admin.email}`, email: tenant.admin.email, email_verified: true });
  photo = await image("png");
});

afterAll(async () => {
  await new Promise((done) => server.close(done));
});

interface Sent {
  status: number;
  body: string;
}

async function send(method: string, path: string, options: { json?: unknown; key?: string; raw?: RequestInit } = {}) {
  const headers: Record<string, string> = { Authorization: `Bearer ${token}` };
  if (options.key) headers["Idempotency-Key"] = options.key;
  let body: BodyInit | undefined;
  if (options.json !== undefined) {
    headers["Content-Type"] = "application/json";
    body = JSON.stringify(options.json);
  }
  const init: RequestInit = { method, headers, body, ...options.raw };
  if (options.raw?.headers) init.headers = { ...headers, ...(options.raw.headers as Record<string, string>) };
  const response = await fetch(`${base}/api/v1${path}`, init);
  return { status: response.status, body: await response.text() } satisfies Sent;
}

/** A write racing the erase: its request (with an Idempotency-Key or not), and what to set up first. */
interface Path {
  name: string;
  prepare?: (id: string, mark: string) => Promise<string | undefined>;
  write: (id: string, mark: string, prepared: string | undefined, key: string | undefined) => Promise<Sent>;
  /** Whether it is a POST (only POSTs store an answer under an Idempotency-Key). */
  post: boolean;
  /** Over how many milliseconds after the write the erase is sent, round by round (default 8). */
  spreadMs?: number;
  /** Rounds of this path (default ROUNDS). */
  rounds?: number;
  /**
   * The field a refusal names when the participant is in the body, not the path: an erased
   * participant is then as unknown as any other (400 naming it), or 404 when the erase
   * commits while the write waits on the participant's row.
   */
  bodyField?: string;
  /** A write about many participants, which a single one's erasure must not refuse. */
  neverRefused?: boolean;
}

const ATTENDANCE_ROUNDS = 6;

/** An authorised pickup of the participant; its id. */
async function addPickup(id: string, mark: string): Promise<string> {
  const created = await send("POST", `/participants/${id}/contacts`, {
    json: { name: `${mark}pickup`, authorised_pickup: true },
  });
  expect(created.status, created.body).toBe(201);
  return (JSON.parse(created.body) as { data: { id: string } }).data.id;
}

async function checkIn(id: string): Promise<undefined> {
  const checkedIn = await send("POST", "/attendance", { json: { participant_id: id, direction: "in" } });
  expect(checkedIn.status, checkedIn.body).toBe(201);
  return undefined;
}

const photoUpload = (id: string, key: string | undefined) => {
  const { body, contentType } = multipart([{ name: "photo", data: photo, filename: "p.png", type: "image/png" }]);
  return send("POST", `/photos/user/${id}`, {
    key,
    raw: { body: new Uint8Array(body), headers: { "Content-Type": contentType } },
  });
};

const PATHS: Path[] = [
  {
    name: "contact create",
    post: true,
    write: (id, mark, _, key) =>
      send("POST", `/participants/${id}/contacts`, { key, json: { name: mark, phone: "+44 20 7946 0958", notes: mark } }),
  },
  {
    name: "contact update",
    post: false,
    prepare: async (id, mark) => {
      const created = await send("POST", `/participants/${id}/contacts`, { json: { name: `${mark}first` } });
      expect(created.status, created.body).toBe(201);
      return (JSON.parse(created.body) as { data: { id: string } }).data.id;
    },
    write: (id, mark, contact) => send("PATCH", `/participants/${id}/contacts/${contact}`, { json: { notes: mark } }),
  },
  {
    name: "care record PUT",
    post: false,
    write: (id, mark) =>
      send("PUT", `/participants/${id}/care`, {
        json: { care_notes: mark, allergies: [{ name: `${mark}nut`, severity: "severe" }] },
      }),
  },
  {
    name: "care record PATCH over an existing record",
    post: false,
    prepare: async (id, mark) => {
      const put = await send("PUT", `/participants/${id}/care`, { json: { dietary_requirements: `${mark}first` } });
      expect(put.status, put.body).toBe(200);
      return undefined;
    },
    write: (id, mark) => send("PATCH", `/participants/${id}/care`, { json: { medical_conditions: mark } }),
  },
  {
    name: "consents PUT (granted)",
    post: false,
    write: (id, mark) => send("PUT", `/participants/${id}/consents`, { json: { photo: "granted", note: mark } }),
  },
  {
    name: "consents PUT (photo refused, with a photo stored)",
    post: false,
    prepare: async (id) => {
      const uploaded = await photoUpload(id, undefined);
      expect(uploaded.status, uploaded.body).toBe(200);
      return undefined;
    },
    write: (id, mark) => send("PUT", `/participants/${id}/consents`, { json: { photo: "refused", note: mark } }),
  },
  {
    // Held by the care gate's lock on the participant (medications pass private.care_gate).
    name: "medication create",
    post: true,
    write: (id, mark, _, key) =>
      send("POST", `/participants/${id}/medications`, {
        key,
        json: { name: mark, dose: "250 mg", instructions: mark, times: ["08:00"], start_date: "2026-07-01" },
      }),
  },
  {
    // The incident door locks the participants named before writing its links (private.incident_report_gate).
    name: "incident report",
    post: true,
    bodyField: "participant_ids",
    write: (id, mark, _, key) =>
      send("POST", "/incidents", {
        key,
        json: {
          instance_id: instanceId,
          occurred_at: "2026-07-14T10:00:00Z",
          location: mark,
          category: "injury",
          severity: "minor",
          participant_ids: [id],
          description: `${mark} slipped`,
          actions_taken: mark,
        },
      }),
  },
  { name: "photo upload", post: true, spreadMs: 60, write: (id, _, __, key) => photoUpload(id, key) },
  {
    name: "participant PATCH",
    post: false,
    write: (id, mark) => send("PATCH", `/participants/${id}`, { json: { unit_name: mark, school_institute: mark } }),
  },
  // On site (issue 41): movements, their codes and presence, roll call marks and places in expected.
  {
    name: "check-in",
    post: true,
    rounds: ATTENDANCE_ROUNDS,
    bodyField: "participant_id",
    write: (id, mark, _, key) =>
      send("POST", "/attendance", { key, json: { participant_id: id, direction: "in", location: mark } }),
  },
  {
    name: "check-out to an authorised pickup",
    post: true,
    rounds: ATTENDANCE_ROUNDS,
    bodyField: "participant_id",
    prepare: async (id, mark) => {
      const pickup = await addPickup(id, mark);
      const checkedIn = await send("POST", "/attendance", {
        json: { participant_id: id, direction: "in", location: `${mark}in` },
      });
      expect(checkedIn.status, checkedIn.body).toBe(201);
      return pickup;
    },
    write: (id, mark, pickup, key) =>
      send("POST", "/attendance", {
        key,
        json: { participant_id: id, direction: "out", pickup_contact_id: pickup, location: mark },
      }),
  },
  {
    // Never refused as a whole: each record is accepted, or invalid once the participant is gone.
    name: "offline sync of an in and an out",
    post: true,
    rounds: ATTENDANCE_ROUNDS,
    prepare: (id, mark) => addPickup(id, mark),
    write: (id, mark, pickup, key) => {
      const at = Date.now() - 60_000;
      const record = (direction: string, ms: number) => ({
        participant_id: id,
        direction,
        recorded_at: new Date(at + ms).toISOString(),
        nonce: randomUUID(),
        location: mark,
        ...(direction === "out" ? { pickup_contact_id: pickup } : {}),
      });
      return send("POST", "/attendance/sync", { key, json: { records: [record("in", 0), record("out", 1000)] } });
    },
  },
  {
    name: "roll call marks",
    post: false,
    rounds: ATTENDANCE_ROUNDS,
    bodyField: "marks[0].participant_id",
    prepare: async (id) => {
      await checkIn(id);
      const opened = await send("POST", "/roll-calls", { json: { instance_id: instanceId } });
      expect(opened.status, opened.body).toBe(201);
      return (JSON.parse(opened.body) as { data: { id: string } }).data.id;
    },
    write: (id, _, rollCall) =>
      send("PUT", `/roll-calls/${rollCall}/marks`, { json: { marks: [{ participant_id: id, mark: "present" }] } }),
  },
  {
    // The erase may find the child among a roll call's expected, or the roll call may find it
    // gone; either way the roll call opens (a roll call of a whole camp is not refused for one child).
    name: "roll call opened over a present child",
    post: true,
    neverRefused: true,
    rounds: ATTENDANCE_ROUNDS,
    prepare: (id) => checkIn(id),
    write: (_, __, ___, key) => send("POST", "/roll-calls", { key, json: { instance_id: instanceId } }),
  },
];

const ROUNDS = 12;

async function dump(): Promise<string> {
  const result = await run("pg_dump", ["--data-only", "--no-owner", t().url], {});
  expect(result.code, result.stderr).toBe(0);
  return result.stdout;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("erasure racing every write that hangs data on a participant", () => {
  it("keeps nothing of the person: each write commits first and is erased, or is refused", {
    timeout: 300_000,
  }, async () => {
    const marks: string[] = [];
    const erased: string[] = [];
    const replays: Array<{ path: string; id: string; mark: string; key: string; write: () => Promise<Sent> }> = [];
    const outcomes: Record<string, Record<string, number>> = {};

    for (const path of PATHS) {
      const counts: Record<string, number> = {};
      outcomes[path.name] = counts;
      const rounds = path.rounds ?? ROUNDS;
      for (let round = 0; round < rounds; round++) {
        const mark = `Mk${tag}${path.name.replace(/\W/g, "").slice(0, 12)}${round}x`;
        const created = await send("POST", "/participants", {
          json: { instance_id: instanceId, user_id: `race-${mark}`, first_name: mark, surname: mark },
        });
        expect(created.status, created.body).toBe(201);
        const id = (JSON.parse(created.body) as { data: { id: string } }).data.id;
        marks.push(mark);
        erased.push(id);
        const prepared = await path.prepare?.(id, mark);
        const key = path.post && round % 2 === 1 ? `race-${randomBytes(6).toString("hex")}` : undefined;
        const write = () => path.write(id, mark, prepared, key);
        // The write first, the erase a moment later (spread over the write's own time), so either may take the row first.
        const [written, erasing] = await Promise.all([
          write(),
          sleep(Math.floor((round * (path.spreadMs ?? 8)) / rounds)).then(() => send("POST", `/participants/${id}/erase`)),
        ]);
        expect(erasing.status, erasing.body).toBe(200);
        const refusals = path.neverRefused ? [] : path.bodyField ? [400, 404] : [404];
        expect([200, 201, ...refusals], `${path.name}: ${written.status} ${written.body}`).toContain(written.status);
        if (written.status === 400) expect(JSON.parse(written.body).error.details?.[0]?.field, written.body).toBe(path.bodyField);
        counts[written.status] = (counts[written.status] ?? 0) + 1;
        if (key) replays.push({ path: path.name, id, mark, key, write });
        // Nothing can erase twice, so what the race left stays for good.
        expect((await send("POST", `/participants/${id}/erase`)).status).toBe(404);
      }
    }
    // It was a race: writes both committed first and were refused, over all paths.
    const statuses = Object.values(outcomes).flatMap((c) => Object.entries(c));
    const total = (wanted: (status: number) => boolean) =>
      statuses.filter(([s]) => wanted(Number(s))).reduce((sum, [, n]) => sum + n, 0);
    expect(
      total((s) => s >= 400),
      JSON.stringify(outcomes),
    ).toBeGreaterThan(0);
    expect(
      total((s) => s < 400),
      JSON.stringify(outcomes),
    ).toBeGreaterThan(0);

    // A keyed retry gets no answer about the person back: 409 (its copy was withheld), 404 or
    // 400 (refused, and runs again refused), or a stored answer that names neither the person
    // nor anything it held (a sync's outcomes by nonce, a roll call opened after the erase).
    for (const replay of replays) {
      const again = await replay.write();
      if (again.status < 400) {
        expect(again.body, replay.path).not.toContain(replay.id);
        expect(again.body, replay.path).not.toContain(replay.mark);
      } else {
        expect([400, 404, 409], `${replay.path} replay: ${again.status} ${again.body}`).toContain(again.status);
      }
    }

    const after = await dump();
    expect(marks.filter((m) => after.includes(m))).toEqual([]);
    // The photo store: nothing under any erased participant's prefix.
    const left = [...store.objects.keys()].filter((k) => erased.some((id) => k.includes(`/${id}/`)));
    expect(left).toEqual([]);
    // No care row of anyone erased.
    const care = await t().admin(
      `select (select count(*) from public.participant_contacts where participant_id = any ($1))::int as contacts,
                (select count(*) from public.participant_care where id = any ($1))::int as care,
                (select count(*) from public.participant_consents where participant_id = any ($1))::int as consents,
                (select count(*) from public.participant_medications where participant_id = any ($1))::int as medications,
                (select count(*) from public.incident_participants where participant_id = any ($1))::int as incidents,
                (select count(*) from public.photo_uploads where key like any (select '%' || x || '%' from unnest($1::text[]) x))::int as uploads`,
      [erased],
    );
    expect(care.rows[0]).toEqual({ contacts: 0, care: 0, consents: 0, medications: 0, incidents: 0, uploads: 0 });
    // Nothing on site of anyone erased: movements, codes, presence, marks, places in expected.
    const onSite = await t().admin(
      `select (select count(*) from public.attendance_movements where participant_id = any ($1))::int as movements,
              (select count(*) from public.attendance_codes c join public.attendance_movements m on m.id = c.movement_id
                where m.participant_id = any ($1))::int as codes,
              (select count(*) from public.attendance_present_codes where participant_id = any ($1))::int as present_codes,
              (select count(*) from public.participants where id = any ($1) and (presence is not null or presence_since is not null))::int as presence,
              (select count(*) from public.roll_call_marks where participant_id = any ($1))::int as marks,
              (select count(*) from public.roll_call_expected where participant_id = any ($1))::int as expected`,
      [erased],
    );
    expect(onSite.rows[0]).toEqual({ movements: 0, codes: 0, present_codes: 0, presence: 0, marks: 0, expected: 0 });
  });
});

describe("private.hold_live_participant", () => {
  it("refuses a row for an erased participant, even written by hand, and the API reads that as 404 participant", async () => {
    const created = await send("POST", "/participants", {
      json: { instance_id: instanceId, user_id: `hold-${tag}`, first_name: "Hold", surname: "Me" },
    });
    const id = (JSON.parse(created.body) as { data: { id: string } }).data.id;
    expect((await send("POST", `/participants/${id}/erase`)).status).toBe(200);
    const attempts = [
      ["insert into public.participant_contacts (tenant_id, participant_id, name) values ($1, $2, 'X')", [tenant.tenantId, id]],
      ["insert into public.participant_care (tenant_id, id, care_notes) values ($1, $2, 'X')", [tenant.tenantId, id]],
      [
        "insert into public.participant_consents (tenant_id, participant_id, kind, status) values ($1, $2, 'photo', 'granted')",
        [tenant.tenantId, id],
      ],
    ] as const;
    for (const [text, values] of attempts) {
      const error = await t()
        .admin(text, [...values])
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(error, text).toMatchObject({ code: "CA404", constraint: "live_participant" });
      expect(fromPgError(error)).toMatchObject({ code: "NOT_FOUND", message: "participant not found" });
    }
    // Another tenant's participant is as good as absent.
    const other = await newTenant(t().db);
    const live = await send("POST", "/participants", {
      json: { instance_id: instanceId, user_id: `hold-live-${tag}`, first_name: "Hold", surname: "Live" },
    });
    const liveId = (JSON.parse(live.body) as { data: { id: string } }).data.id;
    const crossed = await t()
      .admin("insert into public.participant_care (tenant_id, id) values ($1, $2)", [other.tenantId, liveId])
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(crossed).toMatchObject({ code: "CA404", constraint: "live_participant" });
  });
});
