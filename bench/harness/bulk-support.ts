import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import pg from "pg";
import type { Database } from "../../functions/db/database.ts";
import { createTenant } from "../../functions/tenants/provisioning.ts";
import { migrate } from "../../node/migrate.ts";
import { databaseName, dropDatabase, sibling } from "./databases.ts";

/**
 * What the bulk, export and import benches share: a scratch database beside
 * DATABASE_URL's, a tenant with camps to fill, the real Node server in a child
 * process (so its memory can be read from /proc), and the rows to send.
 */

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

export const log = (line: string) => process.stderr.write(`${line}\n`);

export function serverUrl(): string {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error("set DATABASE_URL to a Postgres server where this role may create databases");
  return url;
}

/** `uptime`'s load average, printed with every figure: this 2-core machine is shared. */
export const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");

/** A fresh, migrated database named after DATABASE_URL's, for one bench. */
export async function scratchDatabase(suffix: string): Promise<string> {
  const server = serverUrl();
  const name = `${databaseName(server)}_${suffix}`;
  await dropDatabase(server, name);
  const admin = new pg.Client({ connectionString: server });
  await admin.connect();
  await admin.query(`create database ${pg.escapeIdentifier(name)}`);
  await admin.end();
  const url = sibling(server, name);
  await migrate(url);
  return url;
}

export async function dropScratch(url: string): Promise<void> {
  await dropDatabase(serverUrl(), databaseName(url));
}

export interface Camp {
  instanceId: string;
  /** Subgroups (with their supergroup) and rooms (with their block and number) to spread participants over. */
  subgroups: Array<{ id: string; supergroupId: string; name: string; supergroupName: string }>;
  rooms: Array<{ id: string; blockId: string; number: string; blockName: string }>;
}

/** A camp with 4 supergroups of 4 subgroups and 4 blocks of 15 rooms, written as the owner. */
export async function addCamp(db: Database, tenantId: string, name: string): Promise<Camp> {
  return db.asOwner(async (sql) => {
    const instance = await sql.one<{ id: string }>("insert into instances (tenant_id, name) values ($1, $2) returning id", [
      tenantId,
      name,
    ]);
    const instanceId = (instance as { id: string }).id;
    const subgroups: Camp["subgroups"] = [];
    const rooms: Camp["rooms"] = [];
    for (const group of ["Eagles", "Falcons", "Hawks", "Owls"]) {
      const sg = await sql.one<{ id: string }>(
        "insert into supergroups (tenant_id, instance_id, name) values ($1, $2, $3) returning id",
        [tenantId, instanceId, group],
      );
      for (let i = 1; i <= 4; i++) {
        const sub = await sql.one<{ id: string }>(
          "insert into subgroups (tenant_id, instance_id, parent_supergroup_id, name) values ($1, $2, $3, $4) returning id",
          [tenantId, instanceId, sg?.id, `${group} ${i}`],
        );
        subgroups.push({ id: sub?.id as string, supergroupId: sg?.id as string, name: `${group} ${i}`, supergroupName: group });
      }
    }
    for (const block of ["North Lodge", "South Lodge", "Lakeside", "Pinewood"]) {
      const b = await sql.one<{ id: string }>(
        "insert into blocks (tenant_id, instance_id, name) values ($1, $2, $3) returning id",
        [tenantId, instanceId, block],
      );
      for (let i = 1; i <= 15; i++) {
        const number = String(100 + i);
        const room = await sql.one<{ id: string }>(
          "insert into rooms (tenant_id, instance_id, block_id, room_number, name) values ($1, $2, $3, $4, $5) returning id",
          [tenantId, instanceId, b?.id, number, `${block} ${number}`],
        );
        rooms.push({ id: room?.id as string, blockId: b?.id as string, number, blockName: block });
      }
    }
    return { instanceId, subgroups, rooms };
  });
}

export async function benchTenant(db: Database): Promise<{ tenantId: string; key: string }> {
  const created = await createTenant(db, "Bulk bench", `bench-${Date.now()}@example.test`);
  return { tenantId: created.tenant_id, key: created.api_key };
}

const FIRST = ["Olivia", "Zoë", "José", "Siobhán", "Noah", "Amelia", "Łukasz", "Aoife", "Mateo", "Ingrid"];
const LAST = ["O'Brien", "Nguyễn", "Müller", "Okafor", "Smith", "García", "D'Arcy", "Kowalski", "Jensen", "Patel"];

/** A participant with most fields filled, placed in a subgroup and a room of the camp. */
export function participant(camp: Camp, n: number, prefix: string) {
  const sub = camp.subgroups[n % camp.subgroups.length] as Camp["subgroups"][number];
  const room = camp.rooms[n % camp.rooms.length] as Camp["rooms"][number];
  return {
    user_id: `${prefix}-${n}`,
    instance_id: camp.instanceId,
    first_name: FIRST[n % FIRST.length] as string,
    surname: LAST[(n * 7) % LAST.length] as string,
    gender: ["Male", "Female", "Other"][n % 3] as string,
    status: n % 10 === 0 ? "inactive" : "active",
    date_of_birth: `20${10 + (n % 8)}-0${1 + (n % 9)}-1${n % 10}`,
    school_year: `Year ${5 + (n % 6)}`,
    unit_name: `Unit ${n % 40}`,
    school_institute: `School ${n % 120}`,
    arrival_date: "2026-07-01",
    departure_date: "2026-07-14",
    sub_group_id: sub.id,
    room_id: room.id,
    // What the API fills in from the subgroup and the room; a raw COPY must write them itself.
    filled: { super_group_id: sub.supergroupId, block_id: room.blockId, room_number: room.number },
    names: { supergroup: sub.supergroupName, subgroup: sub.name, block: room.blockName, room: room.number },
  };
}

export type BenchParticipant = ReturnType<typeof participant>;

/** The real Node server (node/server.ts, as `npm start` runs it) in a child process. */
export class ServerProcess {
  private constructor(
    private readonly child: ChildProcess,
    readonly url: string,
  ) {}

  /** `root`: another checkout of the service (a bench comparing code before and after a change). */
  static async start(databaseUrl: string, port: number, nodeFlags: string[] = [], root = ROOT): Promise<ServerProcess> {
    const child = spawn(process.execPath, [...nodeFlags, "--import", "tsx", "node/server.ts"], {
      cwd: root,
      env: {
        RATE_LIMIT_PER_MINUTE: "1000000",
        LOG_LEVEL: "warning",
        ...process.env,
        DATABASE_URL: databaseUrl,
        PORT: String(port),
      },
      stdio: ["ignore", "ignore", "inherit"],
    });
    const server = new ServerProcess(child, `http://127.0.0.1:${port}`);
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      try {
        if ((await fetch(`${server.url}/health`)).ok) return server;
      } catch {
        // Not listening yet.
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    child.kill();
    throw new Error("the server did not answer /health within 60 s");
  }

  /** Resident memory now and at its peak (VmRSS, VmHWM), in bytes. */
  memory(): { rss: number; peak: number } {
    const status = readFileSync(`/proc/${this.child.pid}/status`, "utf8");
    const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0) * 1024;
    return { rss: kb("VmRSS"), peak: kb("VmHWM") };
  }

  async stop(): Promise<void> {
    const exited = new Promise((r) => this.child.once("exit", r));
    this.child.kill("SIGTERM");
    await exited;
  }
}

export const mb = (bytes: number) => `${(bytes / 1_048_576).toFixed(1)} MB`;
