import { expect } from "vitest";
import type { TestDatabase } from "./database.ts";
import { type CallResult, call, type TestApp } from "./fixtures.ts";

/** The five structure resources: where they live and a valid create body given their parents. */
export const PATHS = {
  instances: "/api/v1/instances",
  supergroups: "/api/v1/groups/supergroups",
  subgroups: "/api/v1/groups/subgroups",
  blocks: "/api/v1/blocks",
  rooms: "/api/v1/rooms",
} as const;

export type Resource = keyof typeof PATHS;

export interface Structure {
  instance: string;
  supergroup: string;
  subgroup: string;
  block: string;
  room: string;
}

/** Requests as one caller (an API key), through the real app. */
export function client(app: TestApp, key: string) {
  const send = (method: string, path: string, body?: unknown): Promise<CallResult> => call(app, method, path, { key, body });

  /** Creates through the API and returns the record; fails the test unless it is a 201. */
  async function create(resource: Resource, body: Record<string, unknown>) {
    const res = await send("POST", PATHS[resource], body);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.data as Record<string, unknown> & { id: string };
  }

  /** One of everything, through the API; `tag` keeps names apart. */
  async function structure(tag = ""): Promise<Structure> {
    const instance = (await create("instances", { name: `Camp${tag}` })).id;
    const supergroup = (await create("supergroups", { name: `Eagles${tag}`, instance_id: instance })).id;
    const subgroup = (await create("subgroups", { name: `Nest${tag}`, instance_id: instance, parent_supergroup_id: supergroup }))
      .id;
    const block = (await create("blocks", { name: `North${tag}`, instance_id: instance })).id;
    const room = (await create("rooms", { room_number: `10${tag}`, instance_id: instance, block_id: block })).id;
    return { instance, supergroup, subgroup, block, room };
  }

  return {
    send,
    create,
    structure,
    get: (path: string) => send("GET", path),
    post: (path: string, body?: unknown) => send("POST", path, body),
    put: (path: string, body?: unknown) => send("PUT", path, body),
    patch: (path: string, body?: unknown) => send("PATCH", path, body),
    delete: (path: string) => send("DELETE", path),
  };
}

/**
 * A participant written as the owner role, straight into the table: these
 * tests need something that refers to a group, block or room, not the
 * participant endpoints.
 */
export async function addParticipant(
  t: TestDatabase,
  tenantId: string,
  refs: { instance: string; supergroup?: string; subgroup?: string; block?: string; room?: string },
  userId = `u-${Math.random().toString(36).slice(2, 10)}`,
): Promise<string> {
  const result = await t.admin(
    `insert into public.participants
       (tenant_id, instance_id, user_id, first_name, surname, super_group_id, sub_group_id, block_id, room_id)
     values ($1, $2, $3, 'Ada', 'Lovelace', $4, $5, $6, $7) returning id`,
    [tenantId, refs.instance, userId, refs.supergroup ?? null, refs.subgroup ?? null, refs.block ?? null, refs.room ?? null],
  );
  return (result.rows[0] as { id: string }).id;
}

/** A uuid that names nothing. */
export const MISSING_ID = "00000000-0000-4000-8000-000000000000";
