import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import pg from "pg";
import { FIELD_NAMES } from "../../functions/participants/fields.ts";
import { TENANT_HEADER, USER_HEADER } from "./peer-protocol.ts";

/**
 * The hand-written peer: what a developer would write with node:http and pg
 * for the bench's three requests, and nothing more. No credential check (the
 * tenant and user come in headers), no validation beyond what the SQL needs,
 * no framework. Each request: `begin` with the tenant scope (role and claims,
 * as the API sets them, so RLS does the same work), the query (a named
 * prepared statement, as pg users write them for speed), `commit`. The rows are
 * turned into the same envelope the API answers with, by JSON.stringify.
 */

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.DB_POOL_SIZE || 10) });
pool.on("error", () => {});
pg.types.setTypeParser(pg.types.builtins.DATE, (value: string) => value);

const COLUMNS = FIELD_NAMES.map((name) => `p.${name}`).join(", ");
const NAMES = `sg.name as supergroup_name, sub.name as subgroup_name, b.name as block_name, r.name as room_name`;
const JOINS = `left join public.supergroups sg on sg.id = p.super_group_id
  left join public.subgroups sub on sub.id = p.sub_group_id
  left join public.blocks b on b.id = p.block_id
  left join public.rooms r on r.id = p.room_id`;

const GET = {
  name: "hand_get",
  text: `select ${COLUMNS}, ${NAMES} from public.participants p ${JOINS} where p.id = $1 and p.deleted_at is null`,
};
const PAGE = {
  name: "hand_page",
  text: `select ${COLUMNS}, ${NAMES} from public.participants p ${JOINS}
         where p.instance_id = $1 and p.deleted_at is null order by p.created_at, p.id limit $2 offset $3`,
};
const TOTAL = {
  name: "hand_total",
  text: "select count(*)::int as total from public.participants where instance_id = $1 and deleted_at is null",
};
const WRITABLE = [
  "user_id",
  "instance_id",
  "first_name",
  "surname",
  "gender",
  "date_of_birth",
  "school_year",
  "unit_name",
  "sub_group_id",
  "room_id",
] as const;
// The supergroup, block and room number follow from the subgroup and room, as the API fills them.
const INSERT = {
  name: "hand_insert",
  text: `insert into public.participants as p (${WRITABLE.join(", ")}, super_group_id, block_id, room_number)
         values (${WRITABLE.map((_, i) => `$${i + 1}`).join(", ")},
                 (select parent_supergroup_id from public.subgroups where id = $9),
                 (select block_id from public.rooms where id = $10),
                 (select room_number from public.rooms where id = $10))
         returning ${COLUMNS}`,
};

async function inScope<T>(tenantId: string, userId: string, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    const claims = JSON.stringify({ role: "camp_api", tenant_id: tenantId, sub: userId, app_role: "admin" });
    await client.query(
      `begin; select set_config('role', 'camp_api', true), set_config('request.jwt.claims', ${client.escapeLiteral(claims)}, true)`,
    );
    const result = await work(client);
    await client.query("commit");
    return result;
  } catch (error) {
    await client.query("rollback").catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

function send(response: ServerResponse, status: number, body: unknown) {
  const text = JSON.stringify(body);
  response.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) }).end(text);
}

async function handle(request: IncomingMessage, body: string, response: ServerResponse) {
  const url = new URL(request.url ?? "/", "http://bench");
  if (url.pathname === "/health") return send(response, 200, { ok: true });
  const tenantId = String(request.headers[TENANT_HEADER]);
  const userId = String(request.headers[USER_HEADER]);
  const one = /^\/api\/v1\/participants\/([0-9a-f-]{36})$/.exec(url.pathname);
  if (request.method === "GET" && one) {
    const row = await inScope(tenantId, userId, async (c) => (await c.query({ ...GET, values: [one[1]] })).rows[0]);
    return row ? send(response, 200, { success: true, data: row }) : send(response, 404, { success: false });
  }
  if (request.method === "GET" && url.pathname === "/api/v1/participants") {
    const instance = url.searchParams.get("instance_id");
    const limit = Number(url.searchParams.get("limit") ?? 50);
    const offset = Number(url.searchParams.get("offset") ?? 0);
    const [rows, total] = await inScope(tenantId, userId, async (c) => [
      (await c.query({ ...PAGE, values: [instance, limit, offset] })).rows,
      (await c.query<{ total: number }>({ ...TOTAL, values: [instance] })).rows[0]?.total ?? 0,
    ]);
    return send(response, 200, { success: true, data: rows, meta: { total, limit, offset } });
  }
  if (request.method === "POST" && url.pathname === "/api/v1/participants") {
    const input = JSON.parse(body) as Record<string, unknown>;
    const row = await inScope(
      tenantId,
      userId,
      async (c) => (await c.query({ ...INSERT, values: WRITABLE.map((f) => input[f] ?? null) })).rows[0],
    );
    return send(response, 201, { success: true, data: row });
  }
  send(response, 404, { success: false });
}

const server = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on("data", (chunk: Buffer) => chunks.push(chunk));
  request.on("end", () => {
    handle(request, Buffer.concat(chunks).toString("utf8"), response).catch((error: Error) =>
      send(response, 500, { success: false, error: error.message }),
    );
  });
});

process.on("disconnect", () => process.exit(0));
server.listen(Number(process.env.PORT), "127.0.0.1");
