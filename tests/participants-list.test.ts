import { z } from "@hono/zod-openapi";
import { beforeAll, describe, expect, it } from "vitest";
import { Participant } from "../functions/participants/schemas.ts";
import { addCampStructure, type CampStructure } from "./support/camp-structure.ts";
import { useTestDatabase } from "./support/database.ts";
import { call, newTenant, type TestApp, testApp } from "./support/fixtures.ts";

const t = useTestDatabase();
const BASE = "/api/v1/participants";

let app: TestApp;
let key: string;
let camp: CampStructure;
let other: CampStructure;
/** Every participant created here, in creation order. */
const everyone: Array<{ id: string; user_id: string; instance_id: string; status: string }> = [];

interface Person {
  first_name: string;
  surname: string;
  user_id: string;
  status?: string;
  full_name?: string;
  [field: string]: string | undefined;
}

const PEOPLE: Person[] = [
  {
    first_name: "Ada",
    surname: "Lovelace",
    user_id: "ADA-1",
    // Every other field, so that a list page is compared with the single read field by field (they read the names differently).
    gender: "Female",
    pronouns: "she/her",
    date_of_birth: "2012-12-10",
    school_year: "Year 8",
    rank: 'Scout "lead", first',
    unit_name: "Ünit ✓ 🏕️",
    school_institute: "Back\\slash",
    arrival_date: "2026-07-01",
    departure_date: "2026-07-14",
    photo_link: "https://example.test/a.jpg",
  },
  { first_name: "Grace", surname: "Hopper", user_id: "gh-2", status: "inactive" },
  { first_name: "Alan", surname: "Turing", user_id: "at_3" },
  { first_name: "Katherine", surname: "Johnson", user_id: "kj-4", full_name: "Katherine G. Johnson" },
  { first_name: "Edsger", surname: "Dijkstra", user_id: "ed-5", status: "inactive" },
  { first_name: "Barbara", surname: "Liskov", user_id: "100%_real" },
  { first_name: "Donald", surname: "Knuth", user_id: "dk-7" },
];

const ids = (body: { data: Array<{ id: string }> }) => body.data.map((p) => p.id);

beforeAll(async () => {
  app = testApp(t().db);
  const tenant = await newTenant(t().db);
  key = tenant.admin.key;
  camp = await addCampStructure(t(), tenant.tenantId, "A");
  other = await addCampStructure(t(), tenant.tenantId, "B");
  // Alternate instances; the first three of `camp` get its subgroup and room.
  for (const [i, person] of PEOPLE.entries()) {
    const instance = i % 2 === 0 ? camp : other;
    const placed = i < 5 ? { sub_group_id: instance.subgroupId, room_id: instance.roomId } : {};
    const res = await call(app, "POST", BASE, { key, body: { ...person, instance_id: instance.instanceId, ...placed } });
    expect(res.status).toBe(201);
    everyone.push(res.body.data);
  }
  // A deleted participant appears nowhere.
  const gone = await call(app, "POST", BASE, {
    key,
    body: { first_name: "Gone", surname: "Away", user_id: "gone", instance_id: camp.instanceId },
  });
  await call(app, "DELETE", `${BASE}/${gone.body.data.id}`, { key });
});

describe("GET /api/v1/participants", () => {
  it("lists live participants oldest first with meta, default limit 50, every field and the computed names", async () => {
    const res = await call(app, "GET", BASE, { key });
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    expect(res.body.meta).toEqual({ total: PEOPLE.length, limit: 50, offset: 0, next: null });
    expect(ids(res.body)).toEqual(everyone.map((p) => p.id));
    const first = res.body.data[0];
    expect(first).toMatchObject({
      user_id: "ADA-1",
      full_name: "Ada Lovelace",
      status: "active",
      instance_id: camp.instanceId,
      supergroup_name: "EaglesA",
      subgroup_name: "NestA",
      block_name: "NorthA",
      room_name: "LakeviewA",
      room_number: "10A",
    });
    expect(first).not.toHaveProperty("tenant_id");
    expect(first).not.toHaveProperty("deleted_at");
    const single = await call(app, "GET", `${BASE}/${first.id}`, { key });
    expect(single.body.data).toEqual(first);
    expect(Object.keys(first)).toEqual(Object.keys(single.body.data));
    expect(first).toEqual(everyone[0]);
  });

  it("pages through in a stable order: pages are disjoint and together are the whole list", async () => {
    const seen: string[] = [];
    for (let offset = 0; offset < PEOPLE.length; offset += 3) {
      const res = await call(app, "GET", `${BASE}?limit=3&offset=${offset}`, { key });
      expect(res.status).toBe(200);
      expect(res.body.meta).toEqual({
        total: PEOPLE.length,
        limit: 3,
        offset,
        next: offset + 3 < PEOPLE.length ? expect.any(String) : null,
      });
      seen.push(...ids(res.body));
    }
    expect(seen).toEqual(everyone.map((p) => p.id));
    expect(new Set(seen).size).toBe(seen.length);
  });

  it("returns an empty page past the end, with the total", async () => {
    const res = await call(app, "GET", `${BASE}?offset=100`, { key });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, data: [], meta: { total: PEOPLE.length, limit: 50, offset: 100, next: null } });
  });

  it("accepts limit 1 and 1000", async () => {
    expect((await call(app, "GET", `${BASE}?limit=1`, { key })).body.data).toHaveLength(1);
    expect((await call(app, "GET", `${BASE}?limit=1000`, { key })).body.meta.limit).toBe(1000);
  });

  it.each([
    ["limit", "0"],
    ["limit", "1001"],
    ["limit", "2.5"],
    ["limit", "ten"],
    ["offset", "-1"],
    ["offset", "x"],
    ["status", "archived"],
    ["instance_id", "not-a-uuid"],
    ["room_id", "42"],
  ])("answers 400 for %s=%s, naming the parameter", async (name, value) => {
    const res = await call(app, "GET", `${BASE}?${name}=${value}`, { key });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("VALIDATION_ERROR");
    expect(JSON.stringify(res.body.error.details)).toContain(name);
  });

  it("filters by instance_id and status, together and apart", async () => {
    const inCamp = await call(app, "GET", `${BASE}?instance_id=${camp.instanceId}`, { key });
    expect(ids(inCamp.body)).toEqual(everyone.filter((p) => p.instance_id === camp.instanceId).map((p) => p.id));
    expect(inCamp.body.meta.total).toBe(4);
    const inactive = await call(app, "GET", `${BASE}?status=inactive`, { key });
    expect(inactive.body.data.map((p: Person) => p.user_id)).toEqual(["gh-2", "ed-5"]);
    const both = await call(app, "GET", `${BASE}?status=inactive&instance_id=${camp.instanceId}`, { key });
    expect(both.body.data.map((p: Person) => p.user_id)).toEqual(["ed-5"]);
    expect(both.body.meta.total).toBe(1);
  });

  it("has only fields that are strings or null, which lets Postgres write participants' JSON with json_object", () => {
    // participantJson (functions/participants/data.ts) turns every field into text;
    // a number or boolean field would come out quoted, unlike what the API schema promises.
    const types = new Set<string>();
    const collect = (node: unknown): void => {
      if (Array.isArray(node)) node.forEach(collect);
      else if (node && typeof node === "object") {
        for (const [key, value] of Object.entries(node)) {
          if (key !== "type") collect(value);
          else for (const type of [value].flat()) types.add(String(type));
        }
      }
    };
    const schema = z.toJSONSchema(Participant) as { properties: Record<string, unknown> };
    collect(schema.properties);
    expect([...types].sort()).toEqual(["null", "string"]);
  });

  it("writes a page of one instance exactly as the whole list writes its participants, names included", async () => {
    // The two read the names differently (joined on the instance, or looked up by id).
    const all = (await call(app, "GET", BASE, { key })).body.data as Person[];
    for (const instance of [camp, other]) {
      const page = (await call(app, "GET", `${BASE}?instance_id=${instance.instanceId}`, { key })).body.data as Person[];
      expect(page).toEqual(all.filter((p) => p.instance_id === instance.instanceId));
      expect(page.map((p) => Object.keys(p))).toEqual(page.map(() => Object.keys(all[0] ?? {})));
      const placed = page.filter((p) => p.room_id !== null);
      expect(placed.length).toBeGreaterThan(0);
      for (const p of placed) {
        expect([p.supergroup_name, p.subgroup_name, p.block_name, p.room_name]).toEqual(
          ["Eagles", "Nest", "North", "Lakeview"].map((name) => name + (instance === camp ? "A" : "B")),
        );
      }
    }
  });

  it("filters by super_group_id, sub_group_id, block_id and room_id", async () => {
    const expected = ["ADA-1", "at_3", "ed-5"];
    for (const filter of [
      `super_group_id=${camp.supergroupId}`,
      `sub_group_id=${camp.subgroupId}`,
      `block_id=${camp.blockId}`,
      `room_id=${camp.roomId}`,
    ]) {
      const res = await call(app, "GET", `${BASE}?${filter}`, { key });
      expect(res.status).toBe(200);
      expect(res.body.data.map((p: Person) => p.user_id)).toEqual(expected);
      expect(res.body.meta.total).toBe(3);
    }
    const none = await call(app, "GET", `${BASE}?room_id=${other.roomId}&instance_id=${camp.instanceId}`, { key });
    expect(none.body).toMatchObject({ data: [], meta: { total: 0 } });
  });

  it.each([
    ["lovelace", ["ADA-1"]],
    ["GRACE", ["gh-2"]],
    ["g. john", ["kj-4"]],
    ["ada-1", ["ADA-1"]],
    ["a", ["ADA-1", "gh-2", "at_3", "kj-4", "ed-5", "100%_real", "dk-7"]],
    ["n t", ["at_3"]],
    ["100%", ["100%_real"]],
    ["t_3", ["at_3"]],
    // Punctuation is ignored, so a term of punctuation alone finds nobody.
    ["%", []],
    ["nobody", []],
  ])("searches names and user_id case-insensitively with q=%s", async (q, expected) => {
    const res = await call(app, "GET", `${BASE}?q=${encodeURIComponent(q)}`, { key });
    expect(res.status).toBe(200);
    expect(res.body.data.map((p: Person) => p.user_id)).toEqual(expected);
    expect(res.body.meta.total).toBe(expected.length);
  });

  it("treats an empty q as no search and combines q with the other filters", async () => {
    expect((await call(app, "GET", `${BASE}?q=`, { key })).body.meta.total).toBe(PEOPLE.length);
    const res = await call(app, "GET", `${BASE}?q=o&status=active&instance_id=${other.instanceId}`, { key });
    expect(res.body.data.map((p: Person) => p.user_id)).toEqual(["kj-4", "100%_real"]);
  });

  it("ignores accents, case and punctuation, as people type names, and stays in the tenant", async () => {
    const people = [
      { user_id: "es-1", first_name: "José", surname: "Müller" },
      { user_id: "ie-1", first_name: "Siobhán", surname: "O'Connor" },
      { user_id: "fr-1", first_name: "Zoë", surname: "Ångström-Lefèvre" },
    ];
    const own = await newTenant(t().db);
    const ownCamp = await addCampStructure(t(), own.tenantId, "Accents");
    for (const person of people) {
      const res = await call(app, "POST", BASE, { key: own.admin.key, body: { ...person, instance_id: ownCamp.instanceId } });
      expect(res.status).toBe(201);
    }
    const find = async (q: string, as = own.admin.key) =>
      (await call(app, "GET", `${BASE}?q=${encodeURIComponent(q)}`, { key: as })).body.data.map((p: Person) => p.user_id);
    expect(await find("jose")).toEqual(["es-1"]);
    expect(await find("JOSÉ")).toEqual(["es-1"]);
    expect(await find("muller")).toEqual(["es-1"]);
    expect(await find("oconnor")).toEqual(["ie-1"]);
    expect(await find("o'connor")).toEqual(["ie-1"]);
    expect(await find("siobhan")).toEqual(["ie-1"]);
    expect(await find("zoe")).toEqual(["fr-1"]);
    expect(await find("angstromlefevre")).toEqual(["fr-1"]);
    expect(await find("angstrom lefevre")).toEqual(["fr-1"]);
    // Another tenant's search never sees these people.
    expect(await find("jose", key)).toEqual([]);
  });

  it("finds with one or two letters exactly what a substring of a folded field finds, through the index of letters and pairs", async () => {
    const fold = (text: string) =>
      text
        .normalize("NFKD")
        .replace(/\p{M}/gu, "")
        .toLowerCase()
        .replace(/[^\p{L}\p{N}]/gu, "");
    const all = (await call(app, "GET", `${BASE}?limit=1000`, { key })).body.data as Person[];
    const fields = (p: Person) => [p.first_name, p.surname, p.full_name ?? "", p.user_id].map(fold);
    const letters = "abcdefghijklmnopqrstuvwxyz0123456789".split("");
    const pairs = [...new Set(all.flatMap((p) => fields(p).flatMap((f) => [...f].slice(1).map((c, i) => f[i] + c))))];
    for (const q of [...letters, ...pairs, "qx", "a1"]) {
      const res = await call(app, "GET", `${BASE}?limit=1000&q=${encodeURIComponent(q.toUpperCase())}`, { key });
      const expected = all.filter((p) => fields(p).some((f) => f.includes(q))).map((p) => p.user_id);
      expect(
        res.body.data.map((p: Person) => p.user_id),
        q,
      ).toEqual(expected);
      expect(res.body.meta.total, q).toBe(expected.length);
    }
    // At a size where reading every row costs more, a rare pair is found through the index.
    const crowd = await newTenant(t().db);
    const crowdCamp = await addCampStructure(t(), crowd.tenantId, "Crowd");
    await t().admin(
      `insert into public.participants (tenant_id, instance_id, user_id, first_name, surname)
       select $1, $2, 'crowd-' || g, md5(g::text), md5((g * 7)::text) from generate_series(1, 5000) g`,
      [crowd.tenantId, crowdCamp.instanceId],
    );
    await t().admin("analyze public.participants");
    const plan = await t().admin(
      `explain select p.id from public.participants p
       where p.tenant_id = $1 and p.deleted_at is null and private.search_grams(p.search_key) @> array['zq']`,
      [crowd.tenantId],
    );
    expect(plan.rows.map((row) => row["QUERY PLAN"]).join("\n")).toContain("participants_search_grams");
  });

  it("never matches a term across two fields", async () => {
    // "Lovelace" + "ADA-1" are neighbours in the searchable text; the separator keeps them apart.
    const res = await call(app, "GET", `${BASE}?q=${encodeURIComponent("lovelaceada")}`, { key });
    expect(res.body.meta.total).toBe(0);
  });

  it("answers 401 without a credential", async () => {
    const res = await call(app, "GET", BASE);
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe("UNAUTHORIZED");
  });
});
