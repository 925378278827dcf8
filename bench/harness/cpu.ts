import { readFile } from "node:fs/promises";
import pg from "pg";

/**
 * CPU time by process, from /proc (Linux): what a request costs each party —
 * the load generator (this process), the Node server, and the Postgres
 * backends serving the bench's database. Unlike requests/s these figures
 * hardly move when other work shares the machine, so they show where the
 * API's time goes even on a busy box. Elsewhere they come out as undefined.
 */

const TICKS_PER_SECOND = 100;

async function cpuMsOf(pid: number): Promise<number | undefined> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may hold spaces): utime is the 14th field, stime the 15th.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

/**
 * Backends connected to the database of `url` (the server's pool and the raw
 * baseline's), or only those of one server (`appName`, its application_name).
 */
async function backendPids(url: string, appName?: string): Promise<number[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ pid: number }>(
      `select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()
         and ($1::text is null or application_name = $1)`,
      [appName ?? null],
    );
    return rows.map((r) => r.pid);
  } finally {
    await client.end();
  }
}

export interface CpuSample {
  at: Record<string, number | undefined>;
  backends: Map<number, number | undefined>;
}

export interface CpuPerRequest {
  /** CPU milliseconds per completed request. */
  load_generator_ms?: number;
  server_ms?: number;
  postgres_ms?: number;
}

export async function sampleCpu(url: string, serverPid: number | undefined, appName?: string): Promise<CpuSample> {
  const pids = await backendPids(url, appName);
  const backends = new Map<number, number | undefined>();
  for (const pid of pids) backends.set(pid, await cpuMsOf(pid));
  return {
    at: { self: await cpuMsOf(process.pid), server: serverPid === undefined ? undefined : await cpuMsOf(serverPid) },
    backends,
  };
}

/** CPU per request between two samples; backends that came or went in between count from 0 or not at all. */
export async function cpuPerRequest(
  url: string,
  before: CpuSample,
  serverPid: number | undefined,
  requests: number,
  appName?: string,
) {
  const after = await sampleCpu(url, serverPid, appName);
  const per = (a: number | undefined, b: number | undefined) =>
    a === undefined || b === undefined || requests === 0 ? undefined : (b - a) / requests;
  let postgres = 0;
  let known = false;
  for (const [pid, end] of after.backends) {
    if (end === undefined) continue;
    known = true;
    postgres += end - (before.backends.get(pid) ?? 0);
  }
  const result: CpuPerRequest = {};
  const generator = per(before.at.self, after.at.self);
  const server = per(before.at.server, after.at.server);
  if (generator !== undefined) result.load_generator_ms = generator;
  if (server !== undefined) result.server_ms = server;
  if (known && requests > 0) result.postgres_ms = postgres / requests;
  return result;
}
