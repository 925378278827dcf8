import { randomUUID } from "node:crypto";

/**
 * A tenant's camps for the reporting tests, built in memory first so that
 * every figure the reporting views show can be computed here, in plain
 * TypeScript, independently of the SQL under test. Live and soft-deleted rows
 * of every kind, rooms with and without a capacity, participants with and
 * without each reference and date, and the birthday edge cases.
 */

type Gender = "Male" | "Female" | "Other" | null;

export interface Instance {
  id: string;
  name: string;
  start_date: string | null;
  deleted: boolean;
}
export interface Supergroup {
  id: string;
  instance_id: string;
  name: string;
  deleted: boolean;
}
export interface Subgroup {
  id: string;
  instance_id: string;
  parent_supergroup_id: string;
  name: string;
  deleted: boolean;
}
export interface Block {
  id: string;
  instance_id: string;
  name: string;
  deleted: boolean;
}
export interface Room {
  id: string;
  instance_id: string;
  block_id: string;
  room_number: string;
  name: string | null;
  capacity: number | null;
  deleted: boolean;
}
export interface Participant {
  id: string;
  instance_id: string;
  user_id: string;
  first_name: string;
  surname: string;
  gender: Gender;
  status: "active" | "inactive";
  date_of_birth: string | null;
  arrival_date: string | null;
  departure_date: string | null;
  super_group_id: string | null;
  sub_group_id: string | null;
  block_id: string | null;
  room_id: string | null;
  room_number: string | null;
  deleted: boolean;
}

/** A check-in or check-out as a device recorded it; its conflict is the database's to judge. */
export interface Movement {
  id: string;
  instance_id: string;
  participant_id: string;
  direction: "in" | "out";
  recorded_at: string;
  location: string | null;
  nonce: string;
}

export interface Dataset {
  tenantId: string;
  instances: Instance[];
  supergroups: Supergroup[];
  subgroups: Subgroup[];
  blocks: Block[];
  rooms: Room[];
  participants: Participant[];
  movements: Movement[];
}

/** mulberry32: the same dataset on every run. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const addDays = (date: string, days: number) => {
  const d = new Date(`${date}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + days);
  return d.toISOString().slice(0, 10);
};

export function buildDataset(tenantId: string, seed: number, sizes: [number, number]): Dataset {
  const rand = random(seed);
  const pick = <T>(items: T[]): T => items[Math.floor(rand() * items.length)] as T;
  const ds: Dataset = {
    tenantId,
    instances: [],
    supergroups: [],
    subgroups: [],
    blocks: [],
    rooms: [],
    participants: [],
    movements: [],
  };
  const instance = (name: string, start_date: string | null, deleted = false) => {
    const row = { id: randomUUID(), name, start_date, deleted };
    ds.instances.push(row);
    return row;
  };
  const camps = [instance("Summer camp", "2026-07-01"), instance("Autumn camp", null)];
  instance("Empty camp", "2026-10-01");
  instance("Cancelled camp", "2026-05-01", true);

  camps.forEach((camp, c) => {
    const size = sizes[c] ?? 0;
    const sg = (name: string, deleted = false) => {
      const row = { id: randomUUID(), instance_id: camp.id, name, deleted };
      ds.supergroups.push(row);
      return row;
    };
    const red = sg("Red");
    const blue = sg("Blue");
    sg("Old", true);
    const sub = (parent: Supergroup, name: string, deleted = false) => {
      const row = { id: randomUUID(), instance_id: camp.id, parent_supergroup_id: parent.id, name, deleted };
      ds.subgroups.push(row);
      return row;
    };
    const subsOf = new Map([
      [red.id, [sub(red, "Red 1"), sub(red, "Red 2")]],
      [blue.id, [sub(blue, "Blue 1")]],
    ]);
    sub(blue, "Blue gone", true);
    const block = (name: string, deleted = false) => {
      const row = { id: randomUUID(), instance_id: camp.id, name, deleted };
      ds.blocks.push(row);
      return row;
    };
    const north = block("North");
    const south = block("South");
    block("Closed", true);
    const room = (b: Block, room_number: string, capacity: number | null, deleted = false) => {
      const row = {
        id: randomUUID(),
        instance_id: camp.id,
        block_id: b.id,
        room_number,
        name: `Room ${room_number}`,
        capacity,
        deleted,
      };
      ds.rooms.push(row);
      return row;
    };
    const rooms = [room(north, "101", 2), room(north, "102", 30), room(north, "103", null), room(south, "201", 10)];
    room(north, "999", 5, true);

    const base = camp.start_date ?? "2026-08-01";
    const startMonthDay = base.slice(4);
    for (let k = 0; k < size; k++) {
      const supergroup = k % 5 === 0 ? null : pick([red, blue]);
      const subgroup = supergroup && rand() < 0.7 ? pick(subsOf.get(supergroup.id) ?? []) : null;
      const assigned = k % 6 === 0 ? null : k % 6 === 1 ? "block" : pick(rooms);
      const arrival = rand() < 0.8 ? addDays(base, Math.floor(rand() * 3)) : null;
      const departure = rand() < 0.8 ? addDays(arrival ?? base, Math.floor(rand() * 10)) : null;
      const birthYear = 2005 + Math.floor(rand() * 11);
      let dob: string | null = addDays(`${birthYear}-01-01`, Math.floor(rand() * 365));
      if (k % 9 === 0) dob = null;
      if (k === 1) dob = "2012-02-29";
      if (k === 2) dob = `2010${startMonthDay}`; // birthday on the first day
      if (k === 3) dob = addDays(`2010${startMonthDay}`, 1); // the day after
      ds.participants.push({
        id: randomUUID(),
        instance_id: camp.id,
        user_id: `u${k}`,
        first_name: `First${k}`,
        surname: `Sur${k}`,
        gender: (["Male", "Female", "Other", null] as Gender[])[k % 4] ?? null,
        status: rand() < 0.3 ? "inactive" : "active",
        date_of_birth: dob,
        arrival_date: arrival,
        departure_date: departure,
        super_group_id: supergroup?.id ?? null,
        sub_group_id: subgroup?.id ?? null,
        block_id: assigned === null ? null : assigned === "block" ? south.id : assigned.block_id,
        room_id: assigned && assigned !== "block" ? assigned.id : null,
        room_number: assigned && assigned !== "block" ? assigned.room_number : assigned === "block" && k % 2 ? "tent" : null,
        deleted: k % 7 === 6,
      });
      // On site: most arrive, some leave again and come back; a few records contradict
      // their predecessor (an out first, two ins in a row), which the timeline flags.
      const participant = ds.participants.at(-1) as Participant;
      const steps = k % 4 === 3 ? [] : k % 10 === 0 ? ["out", "in"] : k % 13 === 0 ? ["in", "in", "out"] : ["in", "out", "in"];
      const count = steps.length === 3 && k % 13 !== 0 ? 1 + Math.floor(rand() * 3) : steps.length;
      steps.slice(0, count).forEach((direction, step) => {
        ds.movements.push({
          id: randomUUID(),
          instance_id: camp.id,
          participant_id: participant.id,
          direction: direction as "in" | "out",
          recorded_at: new Date(Date.parse(`${base}T08:00:00Z`) + (k * 60 + step * 3600) * 1000).toISOString(),
          location: pick(["Main gate", "Kiosk 2", null]),
          nonce: randomUUID(),
        });
      });
    }
  });
  return ds;
}

/** Writes the dataset as the owner (no RLS), soft-deleting after the fact as the API would. */
export async function insertDataset(sql: (text: string, values?: unknown[]) => Promise<unknown>, ds: Dataset) {
  const insert = async (table: string, row: object) => {
    const { deleted: _deleted, ...columns } = row as Record<string, unknown>;
    const names = ["tenant_id", ...Object.keys(columns)];
    const values = [ds.tenantId, ...Object.values(columns)];
    await sql(
      `insert into public.${table} (${names.join(", ")}) values (${names.map((_, i) => `$${i + 1}`).join(", ")})`,
      values,
    );
  };
  const softDelete = (table: string, rows: Array<{ id: string; deleted: boolean }>) =>
    Promise.all(
      rows.filter((r) => r.deleted).map((r) => sql(`update public.${table} set deleted_at = now() where id = $1`, [r.id])),
    );
  for (const row of ds.instances) await insert("instances", row);
  for (const row of ds.supergroups) await insert("supergroups", row);
  for (const row of ds.subgroups) await insert("subgroups", row);
  for (const row of ds.blocks) await insert("blocks", row);
  for (const row of ds.rooms) await insert("rooms", row);
  for (const row of ds.participants) await insert("participants", row);
  for (const row of ds.movements) await insert("attendance_movements", row);
  // The attendance doors' own judgement: conflicts and presence from the timeline.
  for (const id of new Set(ds.movements.map((m) => m.participant_id))) {
    await sql("select private.attendance_settle($1)", [id]);
  }
  // Children first: a parent with live children cannot be deleted.
  await softDelete("participants", ds.participants);
  await softDelete("rooms", ds.rooms);
  await softDelete("blocks", ds.blocks);
  await softDelete("subgroups", ds.subgroups);
  await softDelete("supergroups", ds.supergroups);
  await softDelete("instances", ds.instances);
}

// ---------------------------------------------------------------------------
// The figures each view should show, computed from the dataset
// ---------------------------------------------------------------------------

/** Completed years on `on`, the way a person counts birthdays. */
export function ageOn(on: string | null, born: string | null): number | null {
  if (!on || !born) return null;
  const [oy, om, od] = on.split("-").map(Number) as [number, number, number];
  const [by, bm, bd] = born.split("-").map(Number) as [number, number, number];
  return oy - by - (om < bm || (om === bm && od < bd) ? 1 : 0);
}

/** Sorted by a key, by code points (not by locale, which may ignore the dashes in uuids). */
export const byKey = <T>(rows: T[], key: (row: T) => string) =>
  [...rows].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));

function genderCounts(people: Participant[]) {
  const count = (test: (p: Participant) => boolean) => people.filter(test).length;
  return {
    participants: people.length,
    active: count((p) => p.status === "active"),
    inactive: count((p) => p.status === "inactive"),
    male: count((p) => p.gender === "Male"),
    female: count((p) => p.gender === "Female"),
    other_gender: count((p) => p.gender === "Other"),
    gender_unknown: count((p) => p.gender === null),
  };
}

export function expectedFigures(ds: Dataset) {
  const live = <T extends { deleted: boolean }>(rows: T[]) => rows.filter((r) => !r.deleted);
  const instances = live(ds.instances);
  const instanceOf = (id: string) => instances.find((i) => i.id === id);
  const people = live(ds.participants).filter((p) => instanceOf(p.instance_id));
  const name = <T extends { id: string; name: string; deleted: boolean }>(rows: T[], id: string | null) =>
    rows.find((r) => r.id === id && !r.deleted)?.name ?? null;

  const participants = byKey(
    people.map((p) => {
      const room = ds.rooms.find((r) => r.id === p.room_id && !r.deleted);
      return {
        id: p.id,
        instance_id: p.instance_id,
        instance_name: instanceOf(p.instance_id)?.name,
        user_id: p.user_id,
        gender: p.gender,
        status: p.status,
        date_of_birth: p.date_of_birth,
        age_at_start: ageOn(instanceOf(p.instance_id)?.start_date ?? null, p.date_of_birth),
        supergroup_name: name(ds.supergroups, p.super_group_id),
        subgroup_name: name(ds.subgroups, p.sub_group_id),
        block_name: name(ds.blocks, p.block_id),
        room_number: room?.room_number ?? p.room_number,
        room_name: room?.name ?? null,
      };
    }),
    (r) => r.id,
  );

  const ages = new Map<string, { instance_id: string; age_at_start: number | null; participants: number }>();
  for (const p of people) {
    const age = ageOn(instanceOf(p.instance_id)?.start_date ?? null, p.date_of_birth);
    const key = `${p.instance_id}/${age}`;
    const row = ages.get(key) ?? { instance_id: p.instance_id, age_at_start: age, participants: 0 };
    row.participants++;
    ages.set(key, row);
  }

  const instanceCounts = byKey(
    instances.map((i) => {
      const inside = people.filter((p) => p.instance_id === i.id);
      return {
        instance_id: i.id,
        instance_name: i.name,
        ...genderCounts(inside),
        without_supergroup: inside.filter((p) => !p.super_group_id).length,
        without_subgroup: inside.filter((p) => !p.sub_group_id).length,
        without_room: inside.filter((p) => !p.room_id).length,
      };
    }),
    (r) => r.instance_id,
  );

  const supergroupCounts = byKey(
    live(ds.supergroups)
      .filter((s) => instanceOf(s.instance_id))
      .map((s) => ({
        supergroup_id: s.id,
        instance_id: s.instance_id,
        supergroup_name: s.name,
        subgroups: live(ds.subgroups).filter((x) => x.parent_supergroup_id === s.id).length,
        ...genderCounts(people.filter((p) => p.super_group_id === s.id)),
      })),
    (r) => r.supergroup_id,
  );

  const subgroupCounts = byKey(
    live(ds.subgroups)
      .filter((s) => instanceOf(s.instance_id))
      .map((s) => ({
        subgroup_id: s.id,
        supergroup_id: s.parent_supergroup_id,
        subgroup_name: s.name,
        supergroup_name: name(ds.supergroups, s.parent_supergroup_id),
        ...genderCounts(people.filter((p) => p.sub_group_id === s.id)),
      })),
    (r) => r.subgroup_id,
  );

  const liveRooms = live(ds.rooms).filter((r) => instanceOf(r.instance_id));
  const occupantsOf = (roomId: string) => people.filter((p) => p.room_id === roomId).length;
  const roomOccupancy = byKey(
    liveRooms.map((r) => ({
      room_id: r.id,
      block_name: name(ds.blocks, r.block_id),
      room_number: r.room_number,
      capacity: r.capacity,
      occupants: occupantsOf(r.id),
      free_places: r.capacity === null ? null : Math.max(r.capacity - occupantsOf(r.id), 0),
      over_capacity: r.capacity === null ? null : occupantsOf(r.id) > r.capacity,
    })),
    (r) => r.room_id,
  );

  const blockOccupancy = byKey(
    live(ds.blocks)
      .filter((b) => instanceOf(b.instance_id))
      .map((b) => {
        const rooms = liveRooms.filter((r) => r.block_id === b.id);
        const sized = rooms.filter((r) => r.capacity !== null);
        const capacity = sized.length ? sized.reduce((n, r) => n + (r.capacity ?? 0), 0) : null;
        const occupants = rooms.reduce((n, r) => n + occupantsOf(r.id), 0);
        return {
          block_id: b.id,
          block_name: b.name,
          rooms: rooms.length,
          rooms_without_capacity: rooms.length - sized.length,
          capacity,
          occupants,
          without_room: people.filter((p) => p.block_id === b.id && !p.room_id).length,
          free_places: sized.length ? sized.reduce((n, r) => n + Math.max((r.capacity ?? 0) - occupantsOf(r.id), 0), 0) : null,
          occupancy_percent: capacity ? Math.round((1000 * occupants) / capacity) / 10 : null,
        };
      }),
    (r) => r.block_id,
  );

  const movements = new Map<string, { instance_id: string; day: string; arrivals: number; departures: number }>();
  const move = (p: Participant, day: string | null, kind: "arrivals" | "departures") => {
    if (!day) return;
    const key = `${p.instance_id}/${day}`;
    const row = movements.get(key) ?? { instance_id: p.instance_id, day, arrivals: 0, departures: 0 };
    row[kind]++;
    movements.set(key, row);
  };
  for (const p of people) {
    move(p, p.arrival_date, "arrivals");
    move(p, p.departure_date, "departures");
  }

  // The timeline rule, independently: by recorded_at, a movement contradicting its predecessor is a conflict.
  const timeline = new Map<string, Movement[]>();
  for (const m of [...ds.movements].sort((x, y) => x.recorded_at.localeCompare(y.recorded_at))) {
    timeline.set(m.participant_id, [...(timeline.get(m.participant_id) ?? []), m]);
  }
  const conflictOf = (m: Movement) => {
    const mine = timeline.get(m.participant_id) ?? [];
    const before = mine[mine.indexOf(m) - 1];
    if (before?.direction === m.direction) return m.direction === "in" ? "already checked in" : "already checked out";
    return m.direction === "out" && !before ? "not checked in" : null;
  };
  const peopleById = new Map(people.map((p) => [p.id, p]));
  const attendance = byKey(
    ds.movements
      .filter((m) => peopleById.has(m.participant_id))
      .map((m) => ({
        id: m.id,
        instance_id: m.instance_id,
        instance_name: instanceOf(m.instance_id)?.name,
        participant_id: m.participant_id,
        participant_name: `${peopleById.get(m.participant_id)?.first_name} ${peopleById.get(m.participant_id)?.surname}`,
        direction: m.direction,
        recorded_at: new Date(m.recorded_at),
        location: m.location,
        conflict: conflictOf(m) !== null,
        conflict_reason: conflictOf(m),
      })),
    (r) => r.id,
  );
  const presence = byKey(
    people.map((p) => {
      const last = timeline.get(p.id)?.at(-1);
      const room = ds.rooms.find((r) => r.id === p.room_id && !r.deleted);
      return {
        participant_id: p.id,
        instance_id: p.instance_id,
        instance_name: instanceOf(p.instance_id)?.name,
        participant_name: `${p.first_name} ${p.surname}`,
        presence: last?.direction ?? null,
        presence_since: last ? new Date(last.recorded_at) : null,
        supergroup_name: name(ds.supergroups, p.super_group_id),
        subgroup_name: name(ds.subgroups, p.sub_group_id),
        block_name: name(ds.blocks, p.block_id),
        room_number: room?.room_number ?? p.room_number,
      };
    }),
    (r) => r.participant_id,
  );

  return {
    participants,
    attendance,
    presence,
    age_distribution: byKey([...ages.values()], (r) => `${r.instance_id}/${r.age_at_start}`),
    instance_counts: instanceCounts,
    supergroup_counts: supergroupCounts,
    subgroup_counts: subgroupCounts,
    room_occupancy: roomOccupancy,
    block_occupancy: blockOccupancy,
    daily_movements: byKey([...movements.values()], (r) => `${r.instance_id}/${r.day}`),
  };
}

export type Figures = ReturnType<typeof expectedFigures>;
export type ViewName = keyof Figures;

// biome-ignore lint/suspicious/noExplicitAny: rows as node-postgres returns them
type Row = any;

/** How each view is read for comparison: the columns checked, and the key both sides are sorted by. */
export const VIEWS: Record<ViewName, { query: string; key: (row: Row) => string }> = {
  participants: {
    query: `select id, instance_id, instance_name, user_id, gender, status, date_of_birth, age_at_start,
              supergroup_name, subgroup_name, block_name, room_number, room_name
            from reporting.participants`,
    key: (r) => r.id,
  },
  age_distribution: {
    query: "select instance_id, age_at_start, participants from reporting.age_distribution",
    key: (r) => `${r.instance_id}/${r.age_at_start}`,
  },
  instance_counts: {
    query: `select instance_id, instance_name, participants, active, inactive, male, female, other_gender, gender_unknown,
              without_supergroup, without_subgroup, without_room
            from reporting.instance_counts`,
    key: (r) => r.instance_id,
  },
  supergroup_counts: {
    query: `select supergroup_id, instance_id, supergroup_name, subgroups, participants, active, inactive, male, female,
              other_gender, gender_unknown
            from reporting.supergroup_counts`,
    key: (r) => r.supergroup_id,
  },
  subgroup_counts: {
    query: `select subgroup_id, supergroup_id, subgroup_name, supergroup_name, participants, active, inactive, male, female,
              other_gender, gender_unknown
            from reporting.subgroup_counts`,
    key: (r) => r.subgroup_id,
  },
  room_occupancy: {
    query: `select room_id, block_name, room_number, capacity, occupants, free_places, over_capacity
            from reporting.room_occupancy`,
    key: (r) => r.room_id,
  },
  block_occupancy: {
    query: `select block_id, block_name, rooms, rooms_without_capacity, capacity, occupants, without_room, free_places,
              occupancy_percent::float8 as occupancy_percent
            from reporting.block_occupancy`,
    key: (r) => r.block_id,
  },
  daily_movements: {
    query: "select instance_id, day, arrivals, departures from reporting.daily_movements",
    key: (r) => `${r.instance_id}/${r.day}`,
  },
  attendance: {
    query: `select id, instance_id, instance_name, participant_id, participant_name, direction, recorded_at, location,
              conflict, conflict_reason
            from reporting.attendance`,
    key: (r) => r.id,
  },
  presence: {
    query: `select participant_id, instance_id, instance_name, participant_name, presence, presence_since, supergroup_name,
              subgroup_name, block_name, room_number
            from reporting.presence`,
    key: (r) => r.participant_id,
  },
};
