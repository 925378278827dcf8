import { displayPrefix, hashApiKey, newApiKey } from "../../functions/auth/api-key-format.ts";
import type { Database } from "../../functions/db/database.ts";
import type { Sql } from "../../functions/db/sql.ts";

/**
 * Realistic bench data, written as the owner role (outside RLS, tenant_id set
 * explicitly) with `insert … select generate_series`, so a million
 * participants take one statement per tenant instead of a million round trips.
 * The rows pass every constraint and trigger of the schema: nothing is
 * switched off while seeding.
 */

export interface SeedOptions {
  tenants: number;
  instancesPerTenant: number;
  participantsPerInstance: number;
  /** Staff users per tenant besides its admin; each user gets a key. */
  staffPerTenant?: number;
  /** Keeps tenant names apart when one database is seeded more than once. */
  label?: string;
  log?: (line: string) => void;
}

export interface SeededKey {
  email: string;
  role: "admin" | "staff";
  user_id: string;
  key: string;
}

export interface SeededTenant {
  id: string;
  name: string;
  keys: SeededKey[];
}

const ORGANISATIONS = [
  "Lakeland Scouts",
  "Northshore Sailing Club",
  "Pennine Explorers",
  "Riverside Youth Choir",
  "Highland Adventure Trust",
  "Coastal Guides",
  "Moorland Woodcraft Folk",
  "Valley Cadets",
  "Forest School Network",
  "Harbour Rowing Academy",
];
const SUPERGROUPS = ["Eagles", "Falcons", "Hawks", "Owls", "Ravens", "Kestrels"];
const SUBGROUPS_PER_SUPERGROUP = 4;
const BLOCKS = ["North Lodge", "South Lodge", "Lakeside", "Pinewood"];
const ROOMS_PER_BLOCK = 15;
const SEASONS = ["Spring", "Summer", "Autumn", "Winter"];
const LOCATIONS = ["Coniston", "Windermere", "Buttermere", "Keswick", "Ullswater", "Borrowdale", "Grasmere", "Wasdale"];

const FEMALE = [
  "Olivia",
  "Amelia",
  "Isla",
  "Ava",
  "Ivy",
  "Freya",
  "Lily",
  "Florence",
  "Mia",
  "Willow",
  "Rosie",
  "Sophia",
  "Isabella",
  "Grace",
  "Daisy",
  "Sienna",
  "Poppy",
  "Elsie",
  "Emily",
  "Ella",
  "Evelyn",
  "Phoebe",
  "Sofia",
  "Evie",
  "Charlotte",
  "Harper",
  "Matilda",
  "Aisha",
  "Zara",
  "Maya",
  "Priya",
  "Niamh",
  "Siobhan",
  "Chloe",
];
const MALE = [
  "Noah",
  "Oliver",
  "George",
  "Arthur",
  "Muhammad",
  "Leo",
  "Harry",
  "Oscar",
  "Archie",
  "Henry",
  "Theodore",
  "Freddie",
  "Jack",
  "Charlie",
  "Theo",
  "Alfie",
  "Jacob",
  "Thomas",
  "Finley",
  "Arlo",
  "William",
  "Lucas",
  "Roman",
  "Tommy",
  "Isaac",
  "Teddy",
  "Edward",
  "Ethan",
  "Joshua",
  "Reuben",
  "Rohan",
  "Kai",
  "Callum",
  "Euan",
];
const OTHER = ["Alex", "Sam", "Jordan", "Riley", "Charlie", "Robin", "Morgan", "Jamie"];
const SURNAMES = [
  "Smith",
  "Jones",
  "Taylor",
  "Brown",
  "Williams",
  "Wilson",
  "Johnson",
  "Davies",
  "Patel",
  "Robinson",
  "Wright",
  "Thompson",
  "Evans",
  "Walker",
  "White",
  "Roberts",
  "Green",
  "Hall",
  "Thomas",
  "Clarke",
  "Jackson",
  "Wood",
  "Harris",
  "Edwards",
  "Turner",
  "Martin",
  "Cooper",
  "Hill",
  "Ward",
  "Hughes",
  "Moore",
  "Clark",
  "King",
  "Harrison",
  "Lewis",
  "Baker",
  "Lee",
  "Allen",
  "Morris",
  "Khan",
  "Scott",
  "Watson",
  "Davis",
  "Parker",
  "James",
  "Bennett",
  "Young",
  "Phillips",
  "Richardson",
  "Mitchell",
  "Bailey",
  "Carter",
  "Cook",
  "Singh",
  "Shaw",
  "Bell",
  "Collins",
  "Morgan",
  "Kelly",
  "Begum",
  "Miller",
  "Cox",
  "Hussain",
  "Marshall",
  "Simpson",
  "Price",
  "Anderson",
  "Adams",
  "Wilkinson",
  "Ali",
  "Ahmed",
  "Foster",
  "Ellis",
  "Murphy",
  "Chapman",
  "Mason",
  "Gray",
  "Richards",
  "Webb",
  "Griffiths",
  "Hunt",
  "Palmer",
  "Campbell",
  "Holmes",
  "Mills",
  "Rogers",
  "Barnes",
  "Knight",
  "Matthews",
  "Barker",
  "Powell",
  "Stevens",
  "Kaur",
  "Fisher",
  "Butler",
  "Dixon",
  "Russell",
  "Harvey",
  "Pearson",
  "Graham",
  "O'Brien",
  "MacDonald",
  "Nowak",
];
const RANKS = ["Scout", "Scout", "Scout", "Scout", "Scout", "Second", "Patrol Leader", "Assistant Leader"];
const UNITS = [
  "1st Ambleside",
  "3rd Kendal",
  "2nd Penrith",
  "5th Keswick",
  "1st Ulverston",
  "4th Carlisle",
  "2nd Cockermouth",
  "1st Windermere",
  "6th Lancaster",
  "3rd Barrow",
];
const SCHOOLS = [
  "Kirkbie Kendal School",
  "Queen Elizabeth Grammar",
  "Ullswater Community College",
  "Keswick School",
  "Dallam School",
  "Queen Katherine School",
  "Ulverston Victoria High",
  "St Bees School",
  "Lakes School",
  "Appleby Grammar",
];

/** Tenants, their users and one live key per user; the plaintext keys are returned, only hashes stored. */
async function seedTenants(sql: Sql, options: SeedOptions): Promise<SeededTenant[]> {
  const tenants: SeededTenant[] = [];
  const staff = options.staffPerTenant ?? 3;
  for (let t = 0; t < options.tenants; t++) {
    const name = `${ORGANISATIONS[t % ORGANISATIONS.length]} ${Math.floor(t / ORGANISATIONS.length) + 1}${options.label ? ` (${options.label})` : ""}`;
    const tenant = (await sql.one<{ id: string }>("insert into public.tenants (name) values ($1) returning id", [name])) as {
      id: string;
    };
    const domain = `${name
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, "-")
      .replace(/^-|-$/g, "")}.example`;
    const keys: SeededKey[] = [];
    for (let u = 0; u <= staff; u++) {
      const role = u === 0 ? "admin" : "staff";
      const first = (u % 2 === 0 ? FEMALE : MALE)[(t * 7 + u * 3) % FEMALE.length] as string;
      const surname = SURNAMES[(t * 11 + u * 5) % SURNAMES.length] as string;
      const email = `${first}.${surname}${u}@${domain}`.toLowerCase().replace(/'/g, "");
      const user = (await sql.one<{ id: string }>(
        "insert into public.users (tenant_id, email, role) values ($1, $2, $3) returning id",
        [tenant.id, email, role],
      )) as { id: string };
      const key = newApiKey();
      await sql.query("insert into public.api_keys (tenant_id, user_id, key_hash, key_prefix) values ($1, $2, $3, $4)", [
        tenant.id,
        user.id,
        await hashApiKey(key),
        displayPrefix(key),
      ]);
      keys.push({ email, role, user_id: user.id, key });
    }
    tenants.push({ id: tenant.id, name, keys });
  }
  return tenants;
}

/** Instances spread over three years, each with its groups, blocks and rooms. */
async function seedStructure(sql: Sql, tenantId: string, instances: number) {
  // A camp a season, from spring 2024: past ones completed, the current one active, later ones upcoming.
  await sql.query(
    `insert into public.instances (tenant_id, name, description, status, start_date, end_date, location, created_at, updated_at)
     select $1, s.season || ' Camp ' || extract(year from d.start) || ' at ' || s.location,
       'Residential camp at ' || s.location || ', ' || d.nights || ' nights.',
       case when d.start + d.nights < current_date then 'completed' when d.start <= current_date then 'active' else 'upcoming' end,
       d.start, d.start + d.nights, s.location, d.start - 150, d.start - 150
     from generate_series(0, $2 - 1) g
     cross join lateral (select ($3::text[])[1 + g % 4] as season, ($4::text[])[1 + g % 8] as location) s
     cross join lateral (select (date '2024-03-20' + g * 91)::date as start, 5 + g % 10 as nights) d`,
    [tenantId, instances, SEASONS, LOCATIONS],
  );
  await sql.query(
    `insert into public.supergroups (tenant_id, instance_id, name, description, type, purpose)
     select $1, i.id, n.name, 'Patrol group ' || n.name, 'patrol', 'Day activities and duties rota'
     from public.instances i cross join unnest($2::text[]) n(name)
     where i.tenant_id = $1`,
    [tenantId, SUPERGROUPS],
  );
  await sql.query(
    `insert into public.subgroups (tenant_id, instance_id, parent_supergroup_id, name, description)
     select $1, s.instance_id, s.id, s.name || ' ' || g, 'Tent group ' || g || ' of ' || s.name
     from public.supergroups s cross join generate_series(1, $2) g
     where s.tenant_id = $1`,
    [tenantId, SUBGROUPS_PER_SUPERGROUP],
  );
  await sql.query(
    `insert into public.blocks (tenant_id, instance_id, name, description)
     select $1, i.id, n.name, n.name || ' accommodation block'
     from public.instances i cross join unnest($2::text[]) n(name)
     where i.tenant_id = $1`,
    [tenantId, BLOCKS],
  );
  await sql.query(
    `insert into public.rooms (tenant_id, instance_id, block_id, room_number, name, capacity)
     select $1, b.instance_id, b.id, upper(left(b.name, 1)) || (100 + g), b.name || ' room ' || g, 4 + g % 5
     from public.blocks b cross join generate_series(1, $2) g
     where b.tenant_id = $1`,
    [tenantId, ROOMS_PER_BLOCK],
  );
  // A room without a limit per instance, which the seed leaves empty: the bench's writes
  // place their participants there (bench/harness/fixtures.ts), so they never meet a full room.
  await sql.query(
    `insert into public.rooms (tenant_id, instance_id, block_id, room_number, name, capacity)
     select $1, b.instance_id, b.id, 'Z999', 'Bench writes', null
     from public.blocks b
     where b.tenant_id = $1 and b.name = $2`,
    [tenantId, BLOCKS[0]],
  );
}

/**
 * Participants of every instance of a tenant: names matching the gender, one
 * in twenty without a room, one in fifty inactive, one in a hundred soft-deleted
 * (so the lists' `deleted_at is null` has something to skip), registrations
 * spread over the four months before the camp.
 */
async function seedParticipants(sql: Sql, tenantId: string, perInstance: number, from: number, to: number) {
  await sql.query(
    `with inst as materialized (
       select i.id, i.start_date, i.end_date,
         (select array_agg(s.id order by s.name) from public.subgroups s where s.instance_id = i.id) as subs,
         (select array_agg(s.parent_supergroup_id order by s.name) from public.subgroups s where s.instance_id = i.id) as sub_parents,
         (select array_agg(r.id order by r.room_number) from public.rooms r where r.instance_id = i.id and r.capacity is not null) as rooms,
         (select array_agg(r.block_id order by r.room_number) from public.rooms r where r.instance_id = i.id and r.capacity is not null) as room_blocks,
         (select array_agg(r.room_number order by r.room_number) from public.rooms r where r.instance_id = i.id and r.capacity is not null) as room_numbers
       from public.instances i where i.tenant_id = $1
     ), person as (
       select inst.*, g,
         case when random() < 0.48 then 'Female' when random() < 0.96 then 'Male' else 'Other' end as gender,
         random() as r1, random() as r2, random() as r3
       from inst cross join generate_series($10::int, $11::int) g
     ), named as (
       select person.*,
         case gender when 'Female' then ($3::text[])[1 + floor(r1 * array_length($3::text[], 1))::int]
                     when 'Male' then ($4::text[])[1 + floor(r1 * array_length($4::text[], 1))::int]
                     else ($5::text[])[1 + floor(r1 * array_length($5::text[], 1))::int] end as first_name,
         ($6::text[])[1 + floor(r2 * array_length($6::text[], 1))::int] as surname,
         1 + floor(r3 * array_length(subs, 1))::int as sub_n,
         1 + (g * 7) % array_length(rooms, 1) as room_n
       from person
     )
     insert into public.participants (tenant_id, instance_id, user_id, first_name, surname, full_name, gender, pronouns,
       status, date_of_birth, school_year, rank, unit_name, school_institute, arrival_date, departure_date,
       super_group_id, sub_group_id, block_id, room_id, room_number, created_at, updated_at, deleted_at)
     select $1, id, 'P' || to_char(g, 'FM000000'), first_name, surname, first_name || ' ' || surname, gender,
       case gender when 'Other' then 'they/them' end,
       case when g % 50 = 0 then 'inactive' else 'active' end,
       date '2008-09-01' + floor(r2 * 2900)::int,
       'Year ' || (7 + floor(r3 * 7)::int),
       ($7::text[])[1 + g % array_length($7::text[], 1)],
       ($8::text[])[1 + (g / 13) % array_length($8::text[], 1)],
       ($9::text[])[1 + (g / 7) % array_length($9::text[], 1)],
       start_date + case when g % 17 = 0 then 1 else 0 end, end_date,
       sub_parents[sub_n], subs[sub_n],
       case when g % 20 <> 0 then room_blocks[room_n] end,
       case when g % 20 <> 0 then rooms[room_n] end,
       case when g % 20 <> 0 then room_numbers[room_n] end,
       start_date - 120 + (g::float / $2 * 110) * interval '1 day',
       start_date - 120 + (g::float / $2 * 110) * interval '1 day',
       case when g % 100 = 0 then start_date - 5 end
     from named`,
    [tenantId, perInstance, FEMALE, MALE, OTHER, SURNAMES, RANKS, UNITS, SCHOOLS, from, to],
  );
}

/** Participants per instance written in one transaction. */
const CHUNK = 5_000;

/** Seeds the database behind `db`; returns the tenants with their plaintext keys. */
export async function seed(db: Database, options: SeedOptions): Promise<SeededTenant[]> {
  const log = options.log ?? (() => {});
  const started = Date.now();
  const tenants = await db.asOwner((sql) => seedTenants(sql, options));
  for (const [n, tenant] of tenants.entries()) {
    await db.asOwner(async (sql) => {
      await sql.query("select setseed($1)", [(n + 1) / (tenants.length + 1)]);
      await seedStructure(sql, tenant.id, options.instancesPerTenant);
    });
    // In transactions of at most CHUNK participants per instance: one transaction that
    // counts a hundred thousand placements into a few rooms updates each room's count
    // row thousands of times, and every update walks the versions before it.
    const per = options.participantsPerInstance;
    for (let from = 1; from <= per; from += CHUNK) {
      await db.asOwner(async (sql) => {
        await sql.query("select setseed($1)", [((n + 1) / (tenants.length + 1) + from / per) % 1]);
        // The seed fills rooms evenly whatever their capacity (a large seed overfills them): the
        // operator's override of the capacity rule (*_room_capacity.sql), as for any data load.
        await sql.query("select private.override_room_capacity()");
        await seedParticipants(sql, tenant.id, per, from, Math.min(per, from + CHUNK - 1));
      });
    }
    const total = (n + 1) * options.instancesPerTenant * options.participantsPerInstance;
    log(
      `tenant ${n + 1}/${tenants.length}: ${total.toLocaleString("en")} participants, ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
  }
  // Fresh statistics and a set visibility map, as a database that has been in use would have.
  for (const table of [
    "tenants",
    "users",
    "api_keys",
    "instances",
    "supergroups",
    "subgroups",
    "blocks",
    "rooms",
    "participants",
  ]) {
    await db.query(`vacuum (analyze) public.${table}`);
  }
  log(`seeded in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return tenants;
}
