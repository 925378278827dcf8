import type { TenantFixture } from "./fixtures.ts";

/**
 * The three requests the bench makes, and the values that vary between two
 * requests of one scenario. The raw baseline replays the statements captured
 * for one request with these values swapped for another request's.
 */

export interface Vars {
  key: string;
  keyHash: Buffer;
  tenantId: string;
  userId: string;
  instanceId: string;
  participantId: string;
  subgroupId: string;
  roomId: string;
  supergroupId: string;
  blockId: string;
  roomNumber: string;
  /** The participant user_id a write creates: distinct on every write. */
  writeUserId: string;
}

/** The Vars fields that may appear in captured SQL text or values. */
export const SLOTS = [
  "keyHash",
  "tenantId",
  "userId",
  "instanceId",
  "participantId",
  "subgroupId",
  "roomId",
  "writeUserId",
] as const;
export type Slot = (typeof SLOTS)[number];

export interface Scenario {
  name: "list" | "get" | "write";
  title: string;
  method: "GET" | "POST";
  path(v: Vars): string;
  body?(v: Vars): string;
  /** The status a successful request answers with. */
  status: number;
}

export const SCENARIOS: Scenario[] = [
  {
    name: "list",
    title: "read list  GET /participants?instance_id&limit=50",
    method: "GET",
    path: (v) => `/api/v1/participants?instance_id=${v.instanceId}&limit=50`,
    status: 200,
  },
  {
    name: "get",
    title: "read one   GET /participants/{id}",
    method: "GET",
    path: (v) => `/api/v1/participants/${v.participantId}`,
    status: 200,
  },
  {
    name: "write",
    title: "write      POST /participants",
    method: "POST",
    path: () => "/api/v1/participants",
    body: (v) =>
      JSON.stringify({
        user_id: v.writeUserId,
        instance_id: v.instanceId,
        first_name: "Bench",
        surname: "Writer",
        gender: "Female",
        date_of_birth: "2012-05-17",
        school_year: "Year 9",
        unit_name: "1st Ambleside",
        sub_group_id: v.subgroupId,
        room_id: v.roomId,
      }),
    status: 201,
  },
];

/** Every bench write's user_id starts with this, so the writes can be removed afterwards. */
export const WRITE_PREFIX = "bench-w-";

const pick = <T>(items: T[]): T => items[Math.floor(Math.random() * items.length)] as T;

/** A source of Vars for one run: a random tenant, key, instance and participant each time. */
export function varsSource(tenants: TenantFixture[], runTag: string): () => Vars {
  let writes = 0;
  return () => {
    const tenant = pick(tenants);
    const key = pick(tenant.keys);
    const instance = pick(tenant.instances);
    return {
      key: key.key,
      keyHash: key.hash,
      tenantId: tenant.id,
      userId: key.userId,
      instanceId: instance.id,
      participantId: pick(tenant.participants),
      subgroupId: instance.subgroupId,
      roomId: instance.roomId,
      supergroupId: instance.supergroupId,
      blockId: instance.blockId,
      roomNumber: instance.roomNumber,
      writeUserId: `${WRITE_PREFIX}${runTag}-${writes++}`,
    };
  };
}
