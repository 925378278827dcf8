import { randomUUID } from "node:crypto";
import { parse } from "csv-parse/sync";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { addCampStructure } from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { type CallOptions, call, newTenant, signToken, type TestApp, testApp } from "./support/fixtures.ts";

/**
 * Every list of the API, every documented filter, sort and paging parameter,
 * combined at random (fast-check, seeded): each answer is 200 (HEAD too) and
 * holds the right rows, in the right order, with the right total. The right
 * rows are computed here, in plain TypeScript, from the fixture's rows as
 * stored (read as the owner, outside the API), never from another answer of
 * the API. The lists are those of the served OpenAPI document: a list without
 * a model below, or a parameter the model does not know, fails the test.
 *
 * Text the lists sort on is lower-case ASCII letters and digits, which every
 * collation orders alike, so the expected order does not depend on the
 * database's locale.
 */

const t = useTestDatabase();
let app: TestApp;
let admin: CallOptions;
let tenantId: string;
// biome-ignore lint/suspicious/noExplicitAny: the document is plain JSON
let document: any;

/** Seeded: the same cases on every run; a failure prints the seed and the shrunk case. */
const RUNS = { seed: 20261125, numRuns: 100 } as const;

type Value = string | number | boolean | null;
type Row = Record<string, Value> & { id: string };
type Query = Record<string, string | undefined>;

/** How a list answers, as a client reads its documentation. */
interface ListModel {
  /** The path, its parameters filled in. */
  path: () => string;
  /** The rows the list draws from, as stored (this tenant's only), with the fields its filters and sorts read. */
  rows: () => Promise<Row[]>;
  /** A generator for each documented query parameter but limit and offset (undefined: the parameter is left out). */
  params: () => Record<string, fc.Arbitrary<string | undefined>>;
  /** Whether a row answers the query's filters. */
  matches: (row: Row, q: Query) => boolean;
  /** The order without `sort`: fields, `-` for descending. */
  order: string[];
  /** Fields `sort` takes (without id), each with how it compares; absent when the list has no `sort`. */
  sortable?: Record<string, "text" | "number">;
  /**
   * Filters often taken together from one row of the list (or left out), so
   * that several filters combine and still find rows.
   */
  anchored?: string[];
  /** Fields that compare as numbers in the default order (a bigint id). */
  numeric?: string[];
}

// Lower-case words with repeats, so that sorts meet ties.
const WORDS = ["ada", "bo", "cyd", "ada", "dee", "bo", "eve", "fin"];
const word = (i: number) => WORDS[i % WORDS.length] as string;

/** A timestamp column as text that sorts as the time does (UTC, microseconds). */
const ts = (column: string) => `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/**
 * A timestamp column as the API writes it, to the millisecond. The contacts
 * list sorts the values it answers with, so two contacts made in the same
 * millisecond tie there and go by id.
 */
const tsMs = (column: string) => `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** Postgres's order for one key: an unset value after every set one when ascending, before when descending. */
function compareValues(a: Value | undefined, b: Value | undefined, kind: "text" | "number"): number {
  const x = a ?? null;
  const y = b ?? null;
  if (x === y) return 0;
  if (x === null) return 1;
  if (y === null) return -1;
  if (kind === "number") return Number(x) < Number(y) ? -1 : Number(x) > Number(y) ? 1 : 0;
  return String(x) < String(y) ? -1 : String(x) > String(y) ? 1 : 0;
}

/** The keys of `sort` (or the default order), then id in the direction of the last key, as docs/api.md says. */
function sortRows(rows: Row[], model: ListModel, sort: string | undefined): Row[] {
  const keys = (sort ? sort.split(",") : model.order).map((part) => ({
    field: part.replace(/^-/, ""),
    descending: part.startsWith("-"),
  }));
  const last = keys[keys.length - 1] as { descending: boolean };
  if (!keys.some((key) => key.field === "id")) keys.push({ field: "id", descending: last.descending });
  const kindOf = (field: string) => model.sortable?.[field] ?? (model.numeric?.includes(field) ? "number" : "text");
  return [...rows].sort((a, b) => {
    for (const { field, descending } of keys) {
      const order = compareValues(a[field], b[field], kindOf(field));
      if (order !== 0) return descending ? -order : order;
    }
    return 0;
  });
}

/** `sort` values: distinct fields of the list, each ascending or descending, id among them now and then. */
function sortArbitrary(fields: string[]): fc.Arbitrary<string | undefined> {
  return maybe(
    fc
      .uniqueArray(fc.constantFrom(...fields, "id"), { minLength: 1, maxLength: 3 })
      .chain((chosen) => fc.tuple(...chosen.map((f) => fc.constantFrom(f, `-${f}`))))
      .map((parts) => parts.join(",")),
  );
}

/** A parameter left out half the time, so that filters combine but do not always exclude everything. */
const maybe = <T>(arbitrary: fc.Arbitrary<T>) => fc.option(arbitrary, { nil: undefined, freq: 2 });

const optional = <T extends string>(...values: T[]) => maybe(fc.constantFrom(...values));

/** A uuid filter: one of `ids`, or an id of nothing. */
const idOf = (ids: () => string[]) => maybe(fc.constantFrom(...ids(), randomUUID()));

/** The sync parameters every structure list and participants take. */
function syncParams(model: { sortable: Record<string, "text" | "number"> }, timestamps: () => string[]) {
  return {
    sort: sortArbitrary(Object.keys(model.sortable)),
    updated_since: maybe(fc.constantFrom(...timestamps())),
    include_deleted: optional("true", "false"),
  };
}

const syncMatches = (row: Row, q: Query) =>
  (q.include_deleted === "true" || row.deleted_at === null) &&
  (q.updated_since === undefined || String(row.updated_at) >= q.updated_since);

/** What `q` compares: lower case, letters and digits only (private.search_key, for the ASCII text here). */
const fold = (text: string) =>
  text
    .normalize("NFKD")
    .replace(/\p{M}/gu, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "");

// The fixture's ids and times, for the generators.
const fixture = {
  instances: [] as string[],
  supergroups: [] as string[],
  subgroups: [] as string[],
  blocks: [] as string[],
  rooms: [] as string[],
  participants: [] as string[],
  users: [] as string[],
  /** A participant with contacts, the endpoint with deliveries. */
  participant: "",
  endpoint: "",
  /** Rows of the other tenant, which no list may show. */
  otherTenant: [] as string[],
  timestamps: [] as string[],
  auditRequestIds: [] as string[],
  auditResources: [] as string[],
  eventIds: [] as string[],
  /** Medications of `participant` (one deleted), and the times the lists of movements and administrations filter on. */
  medications: [] as string[],
  movementTimes: [] as string[],
  administrationTimes: [] as string[],
  /** The times the incidents list filters occurred_at on. */
  incidentTimes: [] as string[],
};

async function owner<R>(text: string, values: unknown[] = []): Promise<R[]> {
  return (await t().admin(text, values)).rows as R[];
}

/** The X-Request-Id a client sends with some of the fixture's writes. */
const CLIENT_REQUEST_ID = "client-sent-1";

const STRUCTURE_SORT = { name: "text", type: "text", created_at: "text", updated_at: "text" } as const;

const MODELS: Record<string, ListModel> = {
  "GET /api/v1/instances": {
    path: () => "/api/v1/instances",
    rows: () =>
      owner(
        `select id::text, name, status, start_date::text, end_date::text, location, ${ts("created_at")} as created_at,
           ${ts("updated_at")} as updated_at, ${ts("deleted_at")} as deleted_at from public.instances where tenant_id = $1`,
        [tenantId],
      ),
    params: () => ({
      status: optional("upcoming", "active", "completed", "archived"),
      ...syncParams(MODELS["GET /api/v1/instances"] as never, () => fixture.timestamps),
    }),
    matches: (row, q) => syncMatches(row, q) && (q.status === undefined || row.status === q.status),
    order: ["created_at"],
    sortable: {
      name: "text",
      status: "text",
      start_date: "text",
      end_date: "text",
      location: "text",
      created_at: "text",
      updated_at: "text",
    },
  },
  "GET /api/v1/groups/supergroups": {
    path: () => "/api/v1/groups/supergroups",
    rows: () =>
      owner(
        `select id::text, instance_id::text, name, type, ${ts("created_at")} as created_at, ${ts("updated_at")} as updated_at,
           ${ts("deleted_at")} as deleted_at from public.supergroups where tenant_id = $1`,
        [tenantId],
      ),
    params: () => ({
      instance_id: idOf(() => fixture.instances),
      ...syncParams(MODELS["GET /api/v1/groups/supergroups"] as never, () => fixture.timestamps),
    }),
    matches: (row, q) => syncMatches(row, q) && (q.instance_id === undefined || row.instance_id === q.instance_id),
    order: ["created_at"],
    sortable: STRUCTURE_SORT,
  },
  "GET /api/v1/groups/subgroups": {
    path: () => "/api/v1/groups/subgroups",
    rows: () =>
      owner(
        `select g.id::text, g.instance_id::text, g.parent_supergroup_id::text, g.name, g.type, s.name as supergroup_name,
           ${ts("g.created_at")} as created_at, ${ts("g.updated_at")} as updated_at, ${ts("g.deleted_at")} as deleted_at
         from public.subgroups g join public.supergroups s on s.id = g.parent_supergroup_id where g.tenant_id = $1`,
        [tenantId],
      ),
    params: () => ({
      instance_id: idOf(() => fixture.instances),
      parent_supergroup_id: idOf(() => fixture.supergroups),
      ...syncParams(MODELS["GET /api/v1/groups/subgroups"] as never, () => fixture.timestamps),
    }),
    anchored: ["instance_id", "parent_supergroup_id"],
    matches: (row, q) =>
      syncMatches(row, q) &&
      (q.instance_id === undefined || row.instance_id === q.instance_id) &&
      (q.parent_supergroup_id === undefined || row.parent_supergroup_id === q.parent_supergroup_id),
    order: ["created_at"],
    sortable: { ...STRUCTURE_SORT, supergroup_name: "text" },
  },
  "GET /api/v1/blocks": {
    path: () => "/api/v1/blocks",
    rows: async () => {
      const blocks = await owner<Row>(
        `select id::text, instance_id::text, name, ${ts("created_at")} as created_at, ${ts("updated_at")} as updated_at,
           ${ts("deleted_at")} as deleted_at from public.blocks where tenant_id = $1`,
        [tenantId],
      );
      const rooms = (await (MODELS["GET /api/v1/rooms"] as ListModel).rows()).filter((room) => room.deleted_at === null);
      // A block's totals over its live rooms: unset when one of them has no capacity.
      return blocks.map((block) => {
        const own = rooms.filter((room) => room.block_id === block.id);
        const unlimited = own.some((room) => room.capacity === null);
        const sum = (field: string) => own.reduce((total, room) => total + Number(room[field]), 0);
        return {
          ...block,
          capacity: unlimited ? null : sum("capacity"),
          occupancy: sum("occupancy"),
          available: unlimited ? null : sum("available"),
        };
      });
    },
    params: () => ({
      instance_id: idOf(() => fixture.instances),
      ...syncParams(MODELS["GET /api/v1/blocks"] as never, () => fixture.timestamps),
    }),
    matches: (row, q) => syncMatches(row, q) && (q.instance_id === undefined || row.instance_id === q.instance_id),
    order: ["created_at"],
    sortable: {
      name: "text",
      capacity: "number",
      occupancy: "number",
      available: "number",
      created_at: "text",
      updated_at: "text",
    },
  },
  "GET /api/v1/rooms": {
    path: () => "/api/v1/rooms",
    rows: async () => {
      const rooms = await owner<Row>(
        `select r.id::text, r.instance_id::text, r.block_id::text, r.room_number, r.name, r.capacity, b.name as block_name,
           ${ts("r.created_at")} as created_at, ${ts("r.updated_at")} as updated_at, ${ts("r.deleted_at")} as deleted_at
         from public.rooms r join public.blocks b on b.id = r.block_id where r.tenant_id = $1`,
        [tenantId],
      );
      // Occupancy: the room's live participants; available: the free places, none below 0, unset without a capacity.
      const placed = await owner<{ room_id: string }>(
        "select room_id::text from public.participants where tenant_id = $1 and room_id is not null and deleted_at is null",
        [tenantId],
      );
      return rooms.map((room) => {
        const occupancy = placed.filter((p) => p.room_id === room.id).length;
        const available = room.capacity === null ? null : Math.max(Number(room.capacity) - occupancy, 0);
        return { ...room, occupancy, available };
      });
    },
    params: () => ({
      instance_id: idOf(() => fixture.instances),
      block_id: idOf(() => fixture.blocks),
      available_min: optional("0", "1", "2", "4"),
      ...syncParams(MODELS["GET /api/v1/rooms"] as never, () => fixture.timestamps),
    }),
    anchored: ["instance_id", "block_id"],
    matches: (row, q) =>
      syncMatches(row, q) &&
      (q.instance_id === undefined || row.instance_id === q.instance_id) &&
      (q.block_id === undefined || row.block_id === q.block_id) &&
      (q.available_min === undefined || (row.available !== null && Number(row.available) >= Number(q.available_min))),
    order: ["created_at"],
    sortable: {
      room_number: "text",
      name: "text",
      capacity: "number",
      occupancy: "number",
      available: "number",
      block_name: "text",
      created_at: "text",
      updated_at: "text",
    },
  },
  "GET /api/v1/participants": {
    path: () => "/api/v1/participants",
    rows: () =>
      owner(
        `select p.id::text, p.instance_id::text, p.status, p.super_group_id::text, p.sub_group_id::text, p.block_id::text,
           p.room_id::text, p.first_name, p.surname, p.full_name, p.user_id, p.date_of_birth::text,
           p.arrival_date::text, p.departure_date::text, coalesce(c.severe_allergy, false) as severe_allergy, p.presence,
           ${ts("p.created_at")} as created_at, ${ts("p.updated_at")} as updated_at, ${ts("p.deleted_at")} as deleted_at
         from public.participants p left join public.participant_care c on c.id = p.id where p.tenant_id = $1`,
        [tenantId],
      ),
    params: () => ({
      instance_id: idOf(() => fixture.instances),
      status: optional("active", "inactive"),
      super_group_id: idOf(() => fixture.supergroups),
      sub_group_id: idOf(() => fixture.subgroups),
      block_id: idOf(() => fixture.blocks),
      room_id: idOf(() => fixture.rooms),
      // Pieces of the names and user ids (short and long), in any case, with punctuation, or only punctuation.
      q: maybe(
        fc.oneof(
          fc
            .tuple(fc.constantFrom(...WORDS, "adabo", "u1", "ada bo", "lace"), fc.constantFrom("", " ", "-", "."), fc.boolean())
            .map(([w, p, upper]) => (upper ? w.toUpperCase() : w) + p),
          fc.constantFrom("a", "d", "--", "zzz", "É", "Éve"),
        ),
      ),
      presence: optional("in", "out", "none"),
      severe_allergy: optional("true"),
      ...syncParams(MODELS["GET /api/v1/participants"] as never, () => fixture.timestamps),
    }),
    anchored: ["instance_id", "status", "super_group_id", "sub_group_id", "block_id", "room_id"],
    matches: (row, q) => {
      if (!syncMatches(row, q)) return false;
      for (const field of ["instance_id", "status", "super_group_id", "sub_group_id", "block_id", "room_id"]) {
        if (q[field] !== undefined && row[field] !== q[field]) return false;
      }
      if (q.severe_allergy === "true" && !row.severe_allergy) return false;
      // Presence: the direction of the last movement; none when no movement was recorded.
      if (q.presence !== undefined && (row.presence ?? "none") !== q.presence) return false;
      if (q.q !== undefined) {
        const term = fold(q.q);
        const key = [row.first_name, row.surname, row.full_name, row.user_id].map((s) => fold(String(s))).join("\u001f");
        if (term === "" || !key.includes(term)) return false;
      }
      return true;
    },
    order: ["created_at"],
    sortable: {
      surname: "text",
      first_name: "text",
      full_name: "text",
      user_id: "text",
      date_of_birth: "text",
      status: "text",
      arrival_date: "text",
      departure_date: "text",
      created_at: "text",
      updated_at: "text",
    },
  },
  "GET /api/v1/participants/{id}/contacts": {
    path: () => `/api/v1/participants/${fixture.participant}/contacts`,
    rows: () =>
      owner(
        `select id::text, emergency_order, ${tsMs("created_at")} as created_at, ${tsMs("updated_at")} as updated_at,
           ${tsMs("deleted_at")} as deleted_at from public.participant_contacts where tenant_id = $1 and participant_id = $2`,
        [tenantId, fixture.participant],
      ),
    params: () => ({
      ...syncParams(MODELS["GET /api/v1/participants/{id}/contacts"] as never, () => fixture.timestamps),
    }),
    matches: syncMatches,
    order: ["emergency_order", "created_at"],
    sortable: { emergency_order: "number", created_at: "text", updated_at: "text" },
  },
  "GET /api/v1/users": {
    path: () => "/api/v1/users",
    rows: () =>
      owner(`select id::text, email, role, active, ${ts("created_at")} as created_at from public.users where tenant_id = $1`, [
        tenantId,
      ]),
    params: () => ({
      role: optional("admin", "staff"),
      active: optional("true", "false"),
      q: maybe(fc.constantFrom("staff", "ADMIN", "%", "_", "example.test", "@", "nobody", "x\\")),
    }),
    matches: (row, q) =>
      (q.role === undefined || row.role === q.role) &&
      (q.active === undefined || String(row.active) === q.active) &&
      (q.q === undefined || String(row.email).toLowerCase().includes(q.q.toLowerCase())),
    order: ["created_at"],
  },
  "GET /api/v1/api-keys": {
    path: () => "/api/v1/api-keys",
    rows: () =>
      owner(
        `select id::text, user_id::text, (revoked_at is null and (expires_at is null or expires_at > now())) as live,
           ${ts("created_at")} as created_at from public.api_keys where tenant_id = $1`,
        [tenantId],
      ),
    params: () => ({ user_id: idOf(() => fixture.users), live: optional("true", "false") }),
    matches: (row, q) =>
      (q.user_id === undefined || row.user_id === q.user_id) && (q.live === undefined || String(row.live) === q.live),
    order: ["-created_at"],
  },
  "GET /api/v1/audit-events": {
    path: () => "/api/v1/audit-events",
    rows: () =>
      owner(
        `select id::text, resource_type, resource_id::text, actor_user_id::text, action, request_id, client_request_id,
           ${ts("occurred_at")} as occurred_at from public.audit_events
         -- The admin reading the trail is no safeguarding lead: a safeguarding incident's events are not theirs to see.
         where tenant_id = $1 and resource_type <> 'safeguarding_incident'`,
        [tenantId],
      ),
    params: () => ({
      resource_type: optional(
        "instance",
        "supergroup",
        "subgroup",
        "block",
        "room",
        "participant",
        "user",
        "api_key",
        "webhook_endpoint",
        "contact",
        "care_record",
        "consent",
        "contacts",
        "consents",
        "care_flag",
        "movement",
        "roll_call",
        "roll_call_mark",
        "medication",
        "medications",
        "medication_administration",
        "medication_administrations",
        "incident",
        "tenant",
      ),
      resource_id: idOf(() => fixture.auditResources),
      actor_user_id: idOf(() => fixture.users),
      action: optional("create", "update", "delete", "erase", "read"),
      since: maybe(fc.constantFrom(...fixture.timestamps)),
      until: maybe(fc.constantFrom(...fixture.timestamps)),
      request_id: maybe(fc.constantFrom(...fixture.auditRequestIds, "no-such-request")),
      client_request_id: maybe(fc.constantFrom(CLIENT_REQUEST_ID, "no-such-request")),
    }),
    matches: (row, q) =>
      ["resource_type", "resource_id", "actor_user_id", "action", "request_id", "client_request_id"].every(
        (field) => q[field] === undefined || row[field] === q[field],
      ) &&
      (q.since === undefined || String(row.occurred_at) >= q.since) &&
      (q.until === undefined || String(row.occurred_at) < q.until),
    anchored: ["resource_type", "resource_id", "actor_user_id", "action", "request_id", "client_request_id"],
    order: ["-occurred_at", "-id"],
    numeric: ["id"],
  },
  "GET /api/v1/webhook-endpoints": {
    path: () => "/api/v1/webhook-endpoints",
    rows: () =>
      owner(
        `select id::text, enabled, ${ts("created_at")} as created_at from public.webhook_endpoints
         where tenant_id = $1 and deleted_at is null`,
        [tenantId],
      ),
    params: () => ({ enabled: optional("true", "false") }),
    matches: (row, q) => q.enabled === undefined || String(row.enabled) === q.enabled,
    order: ["created_at"],
  },
  "GET /api/v1/webhook-endpoints/{id}/deliveries": {
    path: () => `/api/v1/webhook-endpoints/${fixture.endpoint}/deliveries`,
    rows: () =>
      owner(
        `select id::text, status, event_id::text, ${ts("created_at")} as created_at from public.webhook_deliveries
         where tenant_id = $1 and endpoint_id = $2`,
        [tenantId, fixture.endpoint],
      ),
    params: () => ({
      status: optional("pending", "delivered", "failed"),
      event_id: maybe(fc.constantFrom(...fixture.eventIds, "999999")),
    }),
    matches: (row, q) =>
      (q.status === undefined || row.status === q.status) && (q.event_id === undefined || row.event_id === q.event_id),
    order: ["-created_at"],
  },
  "GET /api/v1/attendance": {
    path: () => "/api/v1/attendance",
    rows: () =>
      owner(
        `select id::text, instance_id::text, participant_id::text, direction, nonce::text, ${ts("recorded_at")} as recorded_at
         from public.attendance_movements where tenant_id = $1`,
        [tenantId],
      ),
    params: () => ({
      instance_id: idOf(() => fixture.instances),
      participant_id: idOf(() => fixture.participants),
      direction: optional("in", "out"),
      since: maybe(fc.constantFrom(...fixture.movementTimes)),
    }),
    anchored: ["instance_id", "participant_id"],
    matches: (row, q) =>
      ["instance_id", "participant_id", "direction"].every((field) => q[field] === undefined || row[field] === q[field]) &&
      (q.since === undefined || String(row.recorded_at) >= q.since),
    // The timeline: by the device's clock, the nonce breaking ties.
    order: ["recorded_at", "nonce"],
  },
  "GET /api/v1/roll-calls": {
    path: () => "/api/v1/roll-calls",
    rows: () =>
      owner(
        `select id::text, instance_id::text, status, ${ts("created_at")} as created_at from public.roll_calls where tenant_id = $1`,
        [tenantId],
      ),
    params: () => ({ instance_id: idOf(() => fixture.instances), status: optional("open", "closed") }),
    matches: (row, q) =>
      (q.instance_id === undefined || row.instance_id === q.instance_id) && (q.status === undefined || row.status === q.status),
    order: ["created_at"],
  },
  "GET /api/v1/participants/{id}/medications": {
    path: () => `/api/v1/participants/${fixture.participant}/medications`,
    // Milliseconds, as for contacts: the list filters and sorts the values it answers with.
    rows: () =>
      owner(
        `select id::text, name, ${tsMs("created_at")} as created_at, ${tsMs("updated_at")} as updated_at,
           ${tsMs("deleted_at")} as deleted_at from public.participant_medications where tenant_id = $1 and participant_id = $2`,
        [tenantId, fixture.participant],
      ),
    params: () => ({
      ...syncParams(MODELS["GET /api/v1/participants/{id}/medications"] as never, () => fixture.timestamps),
    }),
    matches: syncMatches,
    order: ["created_at"],
    sortable: { name: "text", created_at: "text", updated_at: "text" },
  },
  "GET /api/v1/participants/{id}/medication-administrations": {
    path: () => `/api/v1/participants/${fixture.participant}/medication-administrations`,
    rows: async () => {
      const entries = await owner<Row>(
        `select id::text, medication_id::text, amends::text, ${ts("administered_at")} as administered_at,
           ${ts("recorded_at")} as recorded_at from public.medication_administrations where tenant_id = $1 and participant_id = $2`,
        [tenantId, fixture.participant],
      );
      // An entry and its corrections are one chain, under the entry they all go back to.
      const byId = new Map(entries.map((entry) => [entry.id, entry]));
      const rootOf = (entry: Row): string => {
        const amended = entry.amends === null ? undefined : byId.get(String(entry.amends));
        return amended ? rootOf(amended) : entry.id;
      };
      const withRoots: Row[] = entries.map((entry) => ({ ...entry, root: rootOf(entry) }));
      return withRoots.map((entry) => {
        const chain = withRoots.filter((other) => other.root === entry.root);
        return {
          ...entry,
          started: chain.map((other) => String(other.recorded_at)).sort()[0] as string,
          chain_administered: chain.map((other) => String(other.administered_at)).join("|"),
        };
      });
    },
    params: () => ({
      medication_id: idOf(() => fixture.medications),
      from: maybe(fc.constantFrom(...fixture.administrationTimes)),
      to: maybe(fc.constantFrom(...fixture.administrationTimes)),
    }),
    // from and to take whole chains: a chain is listed when one of its entries was administered in [from, to).
    matches: (row, q) =>
      (q.medication_id === undefined || row.medication_id === q.medication_id) &&
      String(row.chain_administered)
        .split("|")
        .some((at) => (q.from === undefined || at >= q.from) && (q.to === undefined || at < q.to)),
    // Chains in the order they were started, each entry after the one it corrects.
    order: ["started", "root", "recorded_at"],
  },
  "GET /api/v1/incidents": {
    path: () => "/api/v1/incidents",
    // Current values (the report with its amendments applied), as the list filters on them.
    rows: () =>
      owner(
        `select i.id::text, i.instance_id::text, c.v ->> 'category' as category, c.v ->> 'severity' as severity, c.v ->> 'status' as status,
           ${ts("(c.v ->> 'occurred_at')::timestamptz")} as occurred_at, ${ts("i.recorded_at")} as recorded_at,
           (select string_agg(l.participant_id::text, '|') from public.incident_participants l where l.incident_id = i.id) as participants,
           cardinality(private.incident_attention(c.v, t.incident_notice_hours, now())) > 0 as needs_attention
         from public.incidents i join public.tenants t on t.id = i.tenant_id
         cross join lateral (select private.incident_current(i) as v) c
         -- The admin listing is no safeguarding lead: the safeguarding incident is never listed.
         where i.tenant_id = $1 and i.category <> 'safeguarding'`,
        [tenantId],
      ),
    params: () => ({
      instance_id: idOf(() => fixture.instances),
      participant_id: idOf(() => fixture.participants.slice(0, 8)),
      category: optional("injury", "illness", "behaviour", "safeguarding", "near_miss", "other"),
      severity: optional("minor", "moderate", "serious"),
      status: optional("open", "closed"),
      occurred_from: maybe(fc.constantFrom(...fixture.incidentTimes)),
      occurred_to: maybe(fc.constantFrom(...fixture.incidentTimes)),
      needs_attention: optional("true", "false"),
    }),
    matches: (row, q) =>
      (q.instance_id === undefined || row.instance_id === q.instance_id) &&
      (q.participant_id === undefined || String(row.participants).split("|").includes(q.participant_id)) &&
      (q.category === undefined || row.category === q.category) &&
      (q.severity === undefined || row.severity === q.severity) &&
      (q.status === undefined || row.status === q.status) &&
      (q.occurred_from === undefined || String(row.occurred_at) >= q.occurred_from) &&
      (q.occurred_to === undefined || String(row.occurred_at) < q.occurred_to) &&
      (q.needs_attention === undefined || row.needs_attention === (q.needs_attention === "true")),
    order: ["-recorded_at"],
    anchored: ["instance_id", "category", "status"],
  },
};

/**
 * GET operations answering `data` and `meta` that are not lists of records:
 * they page otherwise (or not at all), and are tested on their own terms.
 */
const NOT_RECORD_LISTS: Record<string, string> = {
  // Pages by cursor only, in commit order: "the event feed" below.
  "GET /api/v1/events": "the event feed",
  // Every dose due around a moment, computed, unpaged (no limit or offset) and without ids: tests/health-pass.test.ts.
  "GET /api/v1/instances/{id}/medication-pass": "the medication pass",
};

/** The lists of the document: GET operations answering a `data` array with `meta`. */
function documentedLists(): { key: string; params: Array<{ name: string; schema: Record<string, unknown> }> }[] {
  const lists = [];
  for (const [path, item] of Object.entries<Record<string, Record<string, unknown>>>(document.paths)) {
    const get = item.get as
      | { parameters?: Array<{ name: string; in: string; schema: Record<string, unknown> }>; responses: Record<string, never> }
      | undefined;
    // biome-ignore lint/suspicious/noExplicitAny: plain JSON
    const schema = (get?.responses?.["200"] as any)?.content?.["application/json"]?.schema;
    if (!get || schema?.properties?.data?.type !== "array") continue;
    lists.push({
      key: `GET ${path}`,
      params: (get.parameters ?? []).filter((p) => p.in === "query").map((p) => ({ name: p.name, schema: p.schema })),
    });
  }
  return lists;
}

beforeAll(async () => {
  const db = t().db;
  app = testApp(db, { WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true" });
  document = (await call(app, "GET", "/api/v1/openapi.json")).body;
  const tenant = await newTenant(db);
  tenantId = tenant.tenantId;
  // The admin with care access (contacts, the severe-allergy filter, care events of the trail), by Bearer token.
  const careOn = await call(app, "PATCH", `/api/v1/users/${tenant.admin.userId}`, {
    key: tenant.admin.key,
    body: { care_access: "write" },
  });
  expect(careOn.status).toBe(200);
  admin = { token: await signToken({ sub: `sub-${tenant.admin.email}`, email: tenant.admin.email, email_verified: true }) };

  // The other tenant's rows: the same kinds, which no list of this tenant may show.
  const other = await newTenant(db);
  const otherCamp = await addCampStructure(t(), other.tenantId, "x");
  fixture.otherTenant.push(...Object.values(otherCamp), other.admin.userId);

  // Structure: three instances (one deleted), two of them with groups, blocks and rooms, some deleted.
  const [i1, i2, i3] = await owner<{ id: string }>(
    `insert into public.instances (tenant_id, name, status, start_date, end_date, location)
     select $1, n, s, d::date, (d::date + 10), l
     from unnest($2::text[], $3::text[], $4::text[], $5::text[]) as v(n, s, d, l) returning id::text`,
    [
      tenantId,
      ["cyd", "ada", "bo"],
      ["active", "upcoming", "completed"],
      ["2027-07-01", "2027-06-01", "2026-07-01"],
      ["lake", null, "fin"],
    ],
  );
  const [archived] = await owner<{ id: string }>(
    "insert into public.instances (tenant_id, name, status) values ($1, 'dee', 'archived') returning id::text",
    [tenantId],
  );
  fixture.instances.push(...[i1, i2, i3, archived].map((r) => (r as { id: string }).id), ...fixture.otherTenant.slice(0, 1));
  for (const instance of [i1, i2].map((r) => (r as { id: string }).id)) {
    const supergroups = await owner<{ id: string }>(
      "insert into public.supergroups (tenant_id, instance_id, name) select $1, $2, unnest($3::text[]) returning id::text",
      [tenantId, instance, ["eve", "ada", "bo"]],
    );
    fixture.supergroups.push(...supergroups.map((r) => r.id));
    for (const [i, supergroup] of supergroups.entries()) {
      const subgroups = await owner<{ id: string }>(
        `insert into public.subgroups (tenant_id, instance_id, parent_supergroup_id, name)
         select $1, $2, $3, unnest($4::text[]) returning id::text`,
        [
          tenantId,
          instance,
          supergroup.id,
          [
            ["ada", "fin"],
            ["bo", "eve"],
            ["cyd", "dee"],
          ][i],
        ],
      );
      fixture.subgroups.push(...subgroups.map((r) => r.id));
    }
    const blocks = await owner<{ id: string }>(
      "insert into public.blocks (tenant_id, instance_id, name) select $1, $2, unnest($3::text[]) returning id::text",
      [tenantId, instance, ["north", "east", "west"]],
    );
    fixture.blocks.push(...blocks.map((r) => r.id));
    for (const [i, block] of blocks.entries()) {
      const rooms = await owner<{ id: string }>(
        `insert into public.rooms (tenant_id, instance_id, block_id, room_number, name, capacity)
         select $1, $2, $3, n, nm, c from unnest($4::text[], $5::text[], $6::int[]) as v(n, nm, c) returning id::text`,
        [tenantId, instance, block.id, [`${i}01`, `${i}02`, `1${i}`], [word(i), null, "bo"], [4, null, i + 2]],
      );
      fixture.rooms.push(...rooms.map((r) => r.id));
    }
  }

  // Participants: in both instances, in groups and rooms or not, active or not, some with a severe allergy.
  const rooms = await owner<{ id: string; instance_id: string; block_id: string }>(
    "select id::text, instance_id::text, block_id::text from public.rooms where tenant_id = $1 order by room_number, id",
    [tenantId],
  );
  const subgroups = await owner<{ id: string; instance_id: string; parent_supergroup_id: string }>(
    "select id::text, instance_id::text, parent_supergroup_id::text from public.subgroups where tenant_id = $1 order by id",
    [tenantId],
  );
  for (let i = 0; i < 16; i++) {
    const instance = (i % 3 === 0 ? i2 : i1) as { id: string };
    const room = i % 4 === 1 ? undefined : rooms.filter((r) => r.instance_id === instance.id)[i % 5];
    const subgroup = i % 5 === 2 ? undefined : subgroups.filter((s) => s.instance_id === instance.id)[i % 4];
    const [row] = await owner<{ id: string }>(
      `insert into public.participants (tenant_id, instance_id, user_id, first_name, surname, status, date_of_birth,
         arrival_date, departure_date, super_group_id, sub_group_id, block_id, room_id)
       values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) returning id::text`,
      [
        tenantId,
        instance.id,
        `u${i}`,
        word(i),
        word(i * 3 + 1),
        i % 4 === 3 ? "inactive" : "active",
        i % 6 === 0 ? null : `2015-0${(i % 9) + 1}-1${i % 3}`,
        i % 2 === 0 ? "2027-07-01" : null,
        i % 3 === 0 ? null : `2027-07-1${i % 4}`,
        subgroup?.parent_supergroup_id ?? null,
        subgroup?.id ?? null,
        room?.block_id ?? null,
        room?.id ?? null,
      ],
    );
    fixture.participants.push((row as { id: string }).id);
  }
  const [p0, p1, p2, p3] = fixture.participants as [string, string, string, string];
  fixture.participant = p0;
  for (const p of [p0, p2, fixture.participants[9] as string]) {
    await owner("insert into public.participant_care (id, tenant_id, allergies) values ($1, $2, $3)", [
      p,
      tenantId,
      JSON.stringify([{ name: "nuts", severity: p === p2 ? "anaphylactic" : "severe" }]),
    ]);
  }
  await owner("insert into public.participant_care (id, tenant_id, allergies) values ($1, $2, $3)", [
    p1,
    tenantId,
    JSON.stringify([{ name: "dust", severity: "mild" }]),
  ]);
  // Contacts of one participant: emergency ones in order, others unordered, one deleted; some made in one statement (ties).
  await owner(
    `insert into public.participant_contacts (tenant_id, participant_id, name, emergency, emergency_order, phone)
     select $1, $2, n, o is not null, o, case when o is not null then '+441632960123' end
     from unnest($3::text[], $4::int[]) as v(n, o)`,
    [tenantId, p0, ["ada", "bo", "cyd", "dee"], [2, null, 1, null]],
  );
  for (const [name, order] of [
    ["eve", 3],
    ["fin", null],
    ["ada", 1],
  ] as const) {
    await owner(
      `insert into public.participant_contacts (tenant_id, participant_id, name, emergency, emergency_order, phone)
       values ($1, $2, $3, $4, $5, case when $4 then '+441632960123' end)`,
      [tenantId, p0, name, order !== null, order],
    );
  }

  // Users: staff and admins, some inactive, each with a key; one key revoked, one expired.
  for (let i = 0; i < 5; i++) {
    const user = await tenant.addUser(i % 3 === 0 ? "admin" : "staff");
    fixture.users.push(user.userId);
  }
  fixture.users.push(tenant.admin.userId, ...fixture.otherTenant.slice(-1));
  await owner("update public.users set active = false where id = any($1::uuid[])", [fixture.users.slice(1, 3)]);
  await owner(
    "update public.api_keys set revoked_at = now() where id = (select id from public.api_keys where user_id = $1 limit 1)",
    [fixture.users[3]],
  );
  await owner(
    `update public.api_keys set expires_at = now() - interval '1 day'
     where id = (select id from public.api_keys where user_id = $1 and revoked_at is null limit 1)`,
    [fixture.users[4]],
  );

  // Webhook endpoints: enabled and not, one deleted; deliveries of one, in each status.
  const endpoints: string[] = [];
  for (let i = 0; i < 4; i++) {
    const created = await call(app, "POST", "/api/v1/webhook-endpoints", {
      ...admin,
      body: { url: `http://127.0.0.1:9/hook-${i}` },
      headers: i % 2 === 0 ? { "X-Request-Id": CLIENT_REQUEST_ID } : {},
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    endpoints.push(created.body.data.id);
  }
  fixture.endpoint = endpoints[0] as string;
  expect(
    (await call(app, "PATCH", `/api/v1/webhook-endpoints/${endpoints[1]}`, { ...admin, body: { enabled: false } })).status,
  ).toBe(200);
  expect((await call(app, "DELETE", `/api/v1/webhook-endpoints/${endpoints[2]}`, admin)).status).toBe(200);
  await owner(
    `insert into public.webhook_deliveries (tenant_id, endpoint_id, event_id, event_type, resource_id, occurred_at, status)
     select $1, $2, e, 'participant.created', $3, now(), s from unnest($4::bigint[], $5::text[]) as v(e, s)`,
    [tenantId, fixture.endpoint, p3, [11, 12, 13, 14], ["pending", "delivered", "failed", "delivered"]],
  );
  for (const [event, status] of [
    [15, "failed"],
    [16, "pending"],
  ] as const) {
    await owner(
      `insert into public.webhook_deliveries (tenant_id, endpoint_id, event_id, event_type, resource_id, occurred_at, status)
       values ($1, $2, $3, 'participant.created', $4, now(), $5)`,
      [tenantId, fixture.endpoint, event, p3, status],
    );
  }
  fixture.eventIds.push("11", "13", "16");

  // Movements: checked in, checked out and in again, two at one time (the nonce orders them), some never recorded.
  const at = (minute: number) => `2026-11-20T08:${String(minute).padStart(2, "0")}:00Z`;
  for (const [i, direction, minute] of [
    [0, "in", 0],
    [1, "in", 1],
    [2, "in", 2],
    [0, "out", 3],
    [2, "out", 4],
    [3, "in", 5],
    [6, "in", 5],
    [2, "in", 6],
    [6, "out", 7],
  ] as const) {
    const moved = await call(app, "POST", "/api/v1/attendance", {
      ...admin,
      body: {
        participant_id: fixture.participants[i],
        direction,
        recorded_at: at(minute),
        ...(direction === "out" ? { override_reason: "collected by the coach" } : {}),
      },
    });
    expect(moved.status, JSON.stringify(moved.body)).toBe(201);
  }
  const moments = await owner<{ at: string }>(
    `select distinct ${ts("recorded_at")} as at from public.attendance_movements where tenant_id = $1 order by at`,
    [tenantId],
  );
  fixture.movementTimes.push("2000-01-01T00:00:00Z", ...moments.map((r) => r.at), "2999-01-01T00:00:00Z");

  // Roll calls: open and closed, in both instances.
  const rollCalls: string[] = [];
  for (const [instance, name] of [
    [i1, "lunch"],
    [i2, "night"],
    [i1, "dinner"],
    [i1, "games"],
  ] as const) {
    const opened = await call(app, "POST", "/api/v1/roll-calls", { ...admin, body: { instance_id: instance?.id, name } });
    expect(opened.status, JSON.stringify(opened.body)).toBe(201);
    rollCalls.push(opened.body.data.id);
  }
  for (const id of [rollCalls[0], rollCalls[2]]) {
    expect((await call(app, "POST", `/api/v1/roll-calls/${id}/close`, admin)).status).toBe(200);
  }

  // Medications of the participant with contacts: scheduled and as needed, one renamed, one deleted.
  for (const body of [
    { name: "ada", times: ["08:00", "20:00"] },
    { name: "bo", prn: true },
    { name: "cyd" },
    { name: "bo", dose: "5 ml" },
    { name: "eve", times: ["12:00"] },
  ]) {
    const created = await call(app, "POST", `/api/v1/participants/${p0}/medications`, { ...admin, body });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    fixture.medications.push(created.body.data.id);
  }
  const [scheduled, asNeeded, , , renamed] = fixture.medications as [string, string, string, string, string];
  await owner("update public.participant_medications set name = 'fin' where id = $1", [renamed]);
  await owner("update public.participant_medications set deleted_at = now() where id = $1", [fixture.medications[2]]);
  fixture.medications.push(randomUUID());
  // Administrations: doses of both, and a correction that moves the first to another day.
  const charted: string[] = [];
  for (const body of [
    { medication_id: scheduled, outcome: "given", administered_at: "2026-07-14T08:10:00Z" },
    { medication_id: asNeeded, outcome: "given", administered_at: "2026-07-14T12:00:00Z" },
    { medication_id: scheduled, outcome: "refused", administered_at: "2026-07-14T20:05:00Z" },
    { medication_id: asNeeded, outcome: "given", administered_at: "2026-07-15T12:00:00Z" },
  ]) {
    const entry = await call(app, "POST", `/api/v1/participants/${p0}/medication-administrations`, { ...admin, body });
    expect(entry.status, JSON.stringify(entry.body)).toBe(201);
    charted.push(entry.body.data.id);
  }
  const correction = await call(app, "POST", `/api/v1/participants/${p0}/medication-administrations`, {
    ...admin,
    body: { amends: charted[0], reason: "charted on the wrong day", administered_at: "2026-07-15T08:05:00Z" },
  });
  expect(correction.status, JSON.stringify(correction.body)).toBe(201);
  const administered = await owner<{ at: string }>(
    `select distinct ${ts("administered_at")} as at from public.medication_administrations where tenant_id = $1 order by at`,
    [tenantId],
  );
  fixture.administrationTimes.push(
    "2000-01-01T00:00:00Z",
    ...administered.map((r) => r.at),
    "2026-07-15T00:00:00Z",
    "2999-01-01T00:00:00Z",
  );

  // Incidents in both instances: categories and severities with repeats, one closed, one moved by an amendment,
  // one whose guardians were never told (needs attention), a safeguarding one (the admin here is no lead: never listed).
  const incidents: string[] = [];
  for (const [instance, people, category, severity, occurred, notified] of [
    [i1, [1, 2], "injury", "minor", "2026-07-14T09:00:00Z", "2026-07-14T09:30:00Z"],
    [i1, [2], "illness", "serious", "2026-07-14T10:00:00Z", "2026-07-14T10:30:00Z"],
    [i2, [0, 3], "injury", "moderate", "2026-07-15T09:00:00Z", null],
    [i2, [3], "near_miss", "minor", "2026-07-15T11:00:00Z", "2026-07-15T11:05:00Z"],
    [i1, [5], "behaviour", "minor", "2026-07-16T08:00:00Z", "2026-07-16T08:10:00Z"],
    [i1, [1], "safeguarding", "moderate", "2026-07-16T09:00:00Z", "2026-07-16T09:10:00Z"],
  ] as const) {
    const reported = await call(app, "POST", "/api/v1/incidents", {
      ...admin,
      body: {
        instance_id: (instance as { id: string }).id,
        occurred_at: occurred,
        location: "field",
        category,
        severity,
        participant_ids: people.map((i) => fixture.participants[i]),
        description: "what happened",
        actions_taken: "first aid",
        guardian_notified_at: notified,
      },
    });
    expect(reported.status, JSON.stringify(reported.body)).toBe(201);
    incidents.push(reported.body.data.id);
  }
  expect((await call(app, "POST", `/api/v1/incidents/${incidents[0]}/close`, admin)).status).toBe(200);
  const moved = await call(app, "POST", `/api/v1/incidents/${incidents[3]}/amendments`, {
    ...admin,
    body: { changes: { occurred_at: "2026-07-14T12:00:00Z", severity: "moderate" }, reason: "wrong day" },
  });
  expect(moved.status, JSON.stringify(moved.body)).toBe(201);
  const recategorised = await call(app, "POST", `/api/v1/incidents/${incidents[4]}/amendments`, {
    ...admin,
    body: { changes: { category: "other" }, reason: "not behaviour after all" },
  });
  expect(recategorised.status, JSON.stringify(recategorised.body)).toBe(201);
  const occurred = await owner<{ at: string }>(
    `select distinct ${ts("(private.incident_current(i) ->> 'occurred_at')::timestamptz")} as at
     from public.incidents i where i.tenant_id = $1 order by at`,
    [tenantId],
  );
  fixture.incidentTimes.push(
    "2000-01-01T00:00:00Z",
    ...occurred.map((r) => r.at),
    "2026-07-15T00:00:00Z",
    "2999-01-01T00:00:00Z",
  );

  // Soft deletes, last: a participant, a contact, a room, a block's room and block, a subgroup, a supergroup, an instance.
  await owner("update public.participants set deleted_at = now() where id = any($1::uuid[])", [
    [4, 7, 11, 14].map((i) => fixture.participants[i]),
  ]);
  await owner("update public.participant_contacts set deleted_at = now() where participant_id = $1 and name = 'dee'", [p0]);
  await owner("update public.participants set room_id = null where room_id = $1", [fixture.rooms[2]]);
  await owner("update public.rooms set deleted_at = now() where id = $1", [fixture.rooms[2]]);
  const emptyBlock = fixture.blocks[2] as string;
  await owner("update public.participants set room_id = null, block_id = null where block_id = $1", [emptyBlock]);
  await owner("update public.rooms set deleted_at = now() where block_id = $1", [emptyBlock]);
  await owner("update public.blocks set deleted_at = now() where id = $1", [emptyBlock]);
  const lastSupergroup = fixture.supergroups[2] as string;
  await owner("update public.participants set sub_group_id = null, super_group_id = null where super_group_id = $1", [
    lastSupergroup,
  ]);
  await owner("update public.subgroups set deleted_at = now() where parent_supergroup_id = $1", [lastSupergroup]);
  await owner("update public.supergroups set deleted_at = now() where id = $1", [lastSupergroup]);
  await owner("update public.instances set deleted_at = now() where id = $1", [(i3 as { id: string }).id]);
  // A rename, so that updated_at differs from created_at.
  await owner("update public.participants set first_name = 'eve' where id = $1", [p1]);

  fixture.rooms.push(...fixture.otherTenant.slice(4, 5));
  fixture.blocks.push(...fixture.otherTenant.slice(3, 4));
  fixture.supergroups.push(...fixture.otherTenant.slice(1, 2));
  fixture.subgroups.push(...fixture.otherTenant.slice(2, 3));

  // Times to filter on: every time a row of the fixture has, and one before and after them all.
  const times = await owner<{ at: string }>(
    `select distinct at from (
       select ${ts("updated_at")} as at from public.participants where tenant_id = $1
       union all select ${ts("updated_at")} from public.instances where tenant_id = $1
       union all select ${ts("updated_at")} from public.rooms where tenant_id = $1
       union all select ${ts("updated_at")} from public.participant_contacts where tenant_id = $1
       union all select ${ts("occurred_at")} from public.audit_events where tenant_id = $1) t order by at`,
    [tenantId],
  );
  fixture.timestamps.push("2000-01-01T00:00:00.000000Z", ...times.map((r) => r.at), "2999-01-01T00:00:00Z");
  const audit = await owner<{ request_id: string | null; resource_id: string | null }>(
    "select distinct request_id, resource_id::text from public.audit_events where tenant_id = $1",
    [tenantId],
  );
  fixture.auditRequestIds.push(...new Set(audit.flatMap((r) => (r.request_id ? [r.request_id] : []))));
  fixture.auditResources.push(...new Set(audit.flatMap((r) => (r.resource_id ? [r.resource_id] : []))));
}, 120_000);

/** What the fixture's rows are ordered by when a case is drawn from them: what the fixture wrote, not the random ids. */
const anchorKey = (row: Row) =>
  [row.user_id, row.resource_type, row.action, row.request_id, row.occurred_at, row.name].map(String).join("|");

/** The query string of `q` (parameters left out are absent). */
const queryString = (q: Query) =>
  new URLSearchParams(Object.entries(q).filter((entry): entry is [string, string] => entry[1] !== undefined)).toString();

/** The answer to `q` and the rows it should have held: ids in order and the total. */
async function answerAndExpected(key: string, q: Query, defaultLimit: number) {
  const model = MODELS[key] as ListModel;
  const url = `${model.path()}?${queryString(q)}`;
  const res = await call(app, "GET", url, admin);
  const head = await call(app, "HEAD", url, admin);
  const matching = sortRows(
    (await model.rows()).filter((row) => model.matches(row, q)),
    model,
    q.sort,
  );
  const limit = q.limit === undefined ? defaultLimit : Number(q.limit);
  const offset = q.offset === undefined ? 0 : Number(q.offset);
  return {
    url,
    res,
    head,
    expected: {
      ids: matching.slice(offset, offset + limit).map((row) => row.id),
      total: matching.length,
      all: matching.map((row) => row.id),
    },
  };
}

/** The lists that also page by cursor (`after`, `meta.next`): those whose totals the database keeps. */
const CURSOR_LISTS = new Set([
  "GET /api/v1/instances",
  "GET /api/v1/groups/supergroups",
  "GET /api/v1/groups/subgroups",
  "GET /api/v1/blocks",
  "GET /api/v1/rooms",
  "GET /api/v1/participants",
]);

describe("every list of the document has a model here", () => {
  it("covers each list and each of its query parameters", () => {
    const lists = documentedLists();
    expect(lists.length).toBeGreaterThan(10);
    const missing = lists.filter((list) => !(list.key in MODELS) && !(list.key in NOT_RECORD_LISTS));
    expect(missing.map((list) => list.key)).toEqual([]);
    for (const list of lists) {
      if (list.key in NOT_RECORD_LISTS) continue;
      const model = MODELS[list.key] as ListModel;
      const known = [...Object.keys(model.params()), "limit", "offset", ...(CURSOR_LISTS.has(list.key) ? ["after"] : [])].sort();
      expect(list.params.map((p) => p.name).sort(), list.key).toEqual(known);
      const sortParam = list.params.find((p) => p.name === "sort");
      if (sortParam) {
        // The fields the document offers to sort by are those the model sorts by.
        const described = /descending \(([^)]*)\)/.exec(String((sortParam.schema as { description?: string }).description));
        const offered = (described?.[1] ?? "").split(", ").filter((f) => f !== "id");
        expect(offered.sort(), list.key).toEqual(Object.keys(model.sortable ?? {}).sort());
      }
    }
  });
});

describe("lists answer every combination of their parameters with the right rows", { timeout: 300_000 }, () => {
  it.each(Object.keys(MODELS))("%s", async (key) => {
    const model = MODELS[key] as ListModel;
    const rowCount = (await model.rows()).length;
    const limitParam = documentedLists()
      .find((list) => list.key === key)
      ?.params.find((p) => p.name === "limit");
    const defaultLimit = Number(limitParam?.schema.default);
    expect(defaultLimit).toBeGreaterThan(0);
    const record = fc.record({
      ...model.params(),
      limit: maybe(fc.constantFrom("1", "2", "3", "5", "1000")),
      // Mostly near the start, where filtered rows are; now and then past the end (an empty page with its total).
      offset: maybe(fc.constantFrom("0", "1", "2", "4", String(rowCount + 1))),
    });
    // In an order of their own (the heap's changes with updates), so that a seed makes the same cases on every run.
    const anchors = (await model.rows()).sort((a, b) => compareValues(anchorKey(a), anchorKey(b), "text"));
    const fields = model.anchored ?? [];
    const query =
      fields.length === 0
        ? record
        : fc
            .tuple(
              record,
              fc.constantFrom(...anchors),
              fc.array(fc.constantFrom("anchor", "omit"), {
                minLength: fields.length,
                maxLength: fields.length,
              }),
            )
            .map(([q, anchor, take]) => {
              const anchoredQuery: Query = { ...(q as Query) };
              for (const [i, field] of fields.entries()) {
                const value = anchor[field];
                if (take[i] === "omit") anchoredQuery[field] = undefined;
                else anchoredQuery[field] = value === null || value === undefined ? undefined : String(value);
              }
              return anchoredQuery;
            });
    let nonEmpty = 0;
    await fc.assert(
      fc.asyncProperty(query, async (q) => {
        const { url, res, head, expected } = await answerAndExpected(key, q as Query, defaultLimit);
        if (expected.ids.length > 0) nonEmpty++;
        expect(res.status, `${url}: ${JSON.stringify(res.body)}`).toBe(200);
        expect(head.status, `HEAD ${url}`).toBe(200);
        expect(head.body, `HEAD ${url}`).toBeUndefined();
        expect({ ids: res.body.data.map((row: { id: string }) => row.id), total: res.body.meta.total }, url).toEqual({
          ids: expected.ids,
          total: expected.total,
        });
        if (CURSOR_LISTS.has(key)) {
          // The cursor continues exactly where this page ended, in the same order, whatever the sort and filters.
          const { next } = res.body.meta;
          const limit = q.limit === undefined ? defaultLimit : Number(q.limit);
          const offset = q.offset === undefined ? 0 : Number(q.offset);
          const rest = expected.all.slice(offset + limit);
          if (rest.length === 0 || expected.ids.length === 0) {
            expect(next, `${url}: meta.next on the last page`).toBeNull();
          } else {
            expect(typeof next, `${url}: meta.next`).toBe("string");
            const following = await call(
              app,
              "GET",
              `${model.path()}?${queryString({ ...q, offset: undefined, after: next })}`,
              admin,
            );
            expect(following.status, JSON.stringify(following.body)).toBe(200);
            expect(
              following.body.data.map((row: { id: string }) => row.id),
              `${url} then after`,
            ).toEqual(rest.slice(0, limit));
            expect(following.body.meta.total, `${url} then after`).toBe(expected.total);
          }
        } else {
          expect(res.body.meta.next, `${url}: no cursor`).toBeUndefined();
        }
      }),
      RUNS,
    );
    // The cases are worth something only if many of them find rows.
    expect(nonEmpty, "runs whose page held rows").toBeGreaterThan(RUNS.numRuns / 8);
  });
});

describe("the CSV export", { timeout: 300_000 }, () => {
  /** The export takes the participant list's filters, and lists the live participants in list order, all of them. */
  const LIST_ONLY = ["sort", "updated_since", "include_deleted", "severe_allergy", "limit", "offset"];
  /** What the export takes beside the filters: which columns it writes, not which participants. */
  const EXPORT_ONLY = ["include_care"];
  const participants = () => MODELS["GET /api/v1/participants"] as ListModel;

  it("takes the participant list's filters, those the model knows", () => {
    // biome-ignore lint/suspicious/noExplicitAny: plain JSON
    const params = (document.paths["/api/v1/participants/export.csv"].get.parameters as any[])
      .filter((p) => p.in === "query")
      .map((p) => p.name as string)
      .filter((name) => !EXPORT_ONLY.includes(name))
      .sort();
    expect(params).toEqual(
      Object.keys(participants().params())
        .filter((name) => !LIST_ONLY.includes(name))
        .sort(),
    );
  });

  it("exports the right participants, in list order, for any combination of the filters", async () => {
    const model = participants();
    const { sort, updated_since, include_deleted, severe_allergy, ...filters } = model.params();
    const anchors = (await model.rows()).sort((a, b) => compareValues(anchorKey(a), anchorKey(b), "text"));
    const fields = model.anchored ?? [];
    let nonEmpty = 0;
    const query = fc
      .tuple(
        fc.record(filters),
        fc.constantFrom(...anchors),
        fc.array(fc.boolean(), { minLength: fields.length, maxLength: fields.length }),
      )
      .map(([q, anchor, take]) => {
        const anchoredQuery: Query = { ...(q as Query) };
        for (const [i, field] of fields.entries()) {
          anchoredQuery[field] = take[i] && anchor[field] !== null ? String(anchor[field]) : undefined;
        }
        return anchoredQuery;
      });
    await fc.assert(
      fc.asyncProperty(query, async (q) => {
        const url = `/api/v1/participants/export.csv?${queryString(q)}`;
        const res = await call(app, "GET", url, admin);
        expect(res.status, `${url}: ${String(res.body).slice(0, 300)}`).toBe(200);
        expect((await call(app, "HEAD", url, admin)).status, `HEAD ${url}`).toBe(200);
        const exported = (parse(String(res.body), { columns: true, bom: true }) as Array<{ id: string }>).map((row) => row.id);
        const expected = sortRows(
          (await model.rows()).filter((row) => model.matches(row, q)),
          model,
          undefined,
        ).map((row) => row.id);
        expect(exported, url).toEqual(expected);
        if (expected.length > 0) nonEmpty++;
      }),
      { ...RUNS, numRuns: 40 },
    );
    expect(nonEmpty, "exports that held rows").toBeGreaterThan(40 / 8);
  });
});

describe("the event feed", () => {
  it("pages through the feed with any types and limit, each page a run of the feed filtered by types", async () => {
    // The whole feed, read once, to which every page is compared: the feed's rows are the audit trail's, in commit order.
    const whole: Array<{ id: string; type: string }> = [];
    for (let after: string | undefined, pages = 0; pages < 100; pages++) {
      const res = await call(app, "GET", `/api/v1/events?limit=1000${after ? `&after=${after}` : ""}`, admin);
      expect(res.status).toBe(200);
      whole.push(...res.body.data);
      after = res.body.meta.next;
      if (!res.body.meta.has_more) break;
    }
    const types = [...new Set(whole.map((e) => e.type))];
    expect(types.length).toBeGreaterThan(3);
    const query = fc.record({
      types: maybe(
        fc.uniqueArray(fc.constantFrom(...types, "photo.removed"), { minLength: 1, maxLength: 3 }).map((l) => l.join(",")),
      ),
      limit: maybe(fc.constantFrom("1", "2", "7", "1000")),
    });
    await fc.assert(
      fc.asyncProperty(query, async (q) => {
        const wanted = q.types?.split(",");
        const expected = whole.filter((e) => !wanted || wanted.includes(e.type)).map((e) => e.id);
        const got: string[] = [];
        for (let after: string | undefined, pages = 0; pages <= whole.length + 1; pages++) {
          const url = `/api/v1/events?${queryString({ ...q, after })}`;
          const [res, head] = [await call(app, "GET", url, admin), await call(app, "HEAD", url, admin)];
          expect(res.status, `${url}: ${JSON.stringify(res.body)}`).toBe(200);
          expect(head.status, `HEAD ${url}`).toBe(200);
          expect(res.body.data.length).toBeLessThanOrEqual(Number(q.limit ?? 100));
          got.push(...res.body.data.map((e: { id: string }) => e.id));
          after = res.body.meta.next;
          if (!res.body.meta.has_more) break;
        }
        expect(got).toEqual(expected);
      }),
      { ...RUNS, numRuns: 15 },
    );
  });
});
