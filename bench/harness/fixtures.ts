import { createHash } from "node:crypto";
import pg from "pg";
import type { SeedFile } from "./seed-file.ts";

/**
 * What the load needs to make requests that look like real traffic: for each
 * seeded tenant, its keys, its instances (each with a subgroup and a room to
 * file a new participant under) and a sample of its live participants.
 */

export interface KeyFixture {
  key: string;
  hash: Buffer;
  userId: string;
}

export interface InstanceFixture {
  id: string;
  subgroupId: string;
  roomId: string;
  /** The subgroup's supergroup and the room's block and number, for peers that do not fill them in. */
  supergroupId: string;
  blockId: string;
  roomNumber: string;
}

export interface TenantFixture {
  id: string;
  keys: KeyFixture[];
  instances: InstanceFixture[];
  participants: string[];
}

const SAMPLE_PER_TENANT = 500;

export async function loadFixtures(databaseUrl: string, seed: SeedFile): Promise<TenantFixture[]> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const tenants: TenantFixture[] = [];
    for (const tenant of seed.tenants) {
      const instances = await client.query<InstanceFixture>(
        `select i.id, s.id as "subgroupId", s.parent_supergroup_id as "supergroupId",
                r.id as "roomId", r.block_id as "blockId", r.room_number as "roomNumber"
         from public.instances i
         left join lateral (select id, parent_supergroup_id from public.subgroups
                            where instance_id = i.id and deleted_at is null limit 1) s on true
         -- The room without a limit (bench/harness/seed-data.ts): writes never meet a full room.
         left join lateral (select id, block_id, room_number from public.rooms
                            where instance_id = i.id and deleted_at is null
                            order by capacity is null desc, room_number limit 1) r on true
         where i.tenant_id = $1 and i.deleted_at is null and i.status <> 'archived'`,
        [tenant.id],
      );
      const participants = await client.query<{ id: string }>(
        `select id from public.participants tablesample system (10)
         where tenant_id = $1 and deleted_at is null limit $2`,
        [tenant.id, SAMPLE_PER_TENANT],
      );
      let ids = participants.rows.map((r) => r.id);
      if (ids.length < 10) {
        // Small tables: the sample may miss; take them in order instead.
        const all = await client.query<{ id: string }>(
          "select id from public.participants where tenant_id = $1 and deleted_at is null limit $2",
          [tenant.id, SAMPLE_PER_TENANT],
        );
        ids = all.rows.map((r) => r.id);
      }
      const usable = instances.rows.filter((i) => i.subgroupId && i.roomId);
      if (usable.length === 0 || ids.length === 0) continue;
      tenants.push({
        id: tenant.id,
        keys: tenant.keys.map((k) => ({ key: k.key, hash: createHash("sha256").update(k.key).digest(), userId: k.user_id })),
        instances: usable,
        participants: ids,
      });
    }
    if (tenants.length === 0) throw new Error("the seed file names no tenant with instances and participants in this database");
    return tenants;
  } finally {
    await client.end();
  }
}
