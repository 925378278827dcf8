import type { TestDatabase } from "./database.ts";
import { newTenant, type TestApp, type TestTenant, testApp } from "./fixtures.ts";

/**
 * An instance with one supergroup (holding one subgroup) and one block
 * (holding one room), written as the owner role straight into the tables, so
 * participant tests do not depend on the other resources' endpoints.
 */
export interface CampStructure {
  instanceId: string;
  supergroupId: string;
  subgroupId: string;
  blockId: string;
  roomId: string;
}

async function insert(t: TestDatabase, text: string, values: unknown[]): Promise<string> {
  const result = await t.admin(text, values);
  return (result.rows[0] as { id: string }).id;
}

export async function addInstance(t: TestDatabase, tenantId: string, name = "Camp"): Promise<string> {
  return insert(t, "insert into public.instances (tenant_id, name) values ($1, $2) returning id", [tenantId, name]);
}

export async function addSupergroup(t: TestDatabase, tenantId: string, instanceId: string, name = "Eagles") {
  return insert(t, "insert into public.supergroups (tenant_id, instance_id, name) values ($1, $2, $3) returning id", [
    tenantId,
    instanceId,
    name,
  ]);
}

export async function addSubgroup(t: TestDatabase, tenantId: string, instanceId: string, supergroupId: string, name = "Nest") {
  return insert(
    t,
    "insert into public.subgroups (tenant_id, instance_id, parent_supergroup_id, name) values ($1, $2, $3, $4) returning id",
    [tenantId, instanceId, supergroupId, name],
  );
}

export async function addBlock(t: TestDatabase, tenantId: string, instanceId: string, name = "North") {
  return insert(t, "insert into public.blocks (tenant_id, instance_id, name) values ($1, $2, $3) returning id", [
    tenantId,
    instanceId,
    name,
  ]);
}

export async function addRoom(
  t: TestDatabase,
  tenantId: string,
  instanceId: string,
  blockId: string,
  roomNumber = "101",
  name: string | null = "Lakeview",
) {
  return insert(
    t,
    "insert into public.rooms (tenant_id, instance_id, block_id, room_number, name) values ($1, $2, $3, $4, $5) returning id",
    [tenantId, instanceId, blockId, roomNumber, name],
  );
}

/** A complete instance; `tag` keeps names apart when a test builds several. */
export async function addCampStructure(t: TestDatabase, tenantId: string, tag = ""): Promise<CampStructure> {
  const instanceId = await addInstance(t, tenantId, `Camp${tag}`);
  const supergroupId = await addSupergroup(t, tenantId, instanceId, `Eagles${tag}`);
  const subgroupId = await addSubgroup(t, tenantId, instanceId, supergroupId, `Nest${tag}`);
  const blockId = await addBlock(t, tenantId, instanceId, `North${tag}`);
  const roomId = await addRoom(t, tenantId, instanceId, blockId, `10${tag || "1"}`, `Lakeview${tag}`);
  return { instanceId, supergroupId, subgroupId, blockId, roomId };
}

/** The participant row as stored, all columns, read as the owner (outside RLS). */
export async function storedParticipant(t: TestDatabase, id: string) {
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary columns
  return (await t.admin("select * from public.participants where id = $1", [id])).rows[0] as any;
}

/**
 * What most API test files start from: the app on the file's own database,
 * a new tenant, and a camp of that tenant with a group, a block and a room.
 */
export async function tenantWithCamp(
  t: TestDatabase,
  tag = "",
): Promise<{ app: TestApp; tenant: TestTenant; camp: CampStructure }> {
  const tenant = await newTenant(t.db);
  return { app: testApp(t.db), tenant, camp: await addCampStructure(t, tenant.tenantId, tag) };
}
