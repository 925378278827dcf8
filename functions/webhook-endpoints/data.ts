import { listPage } from "../db/list.ts";
import type { Sql } from "../db/sql.ts";

/** An endpoint as its admins read it; never its secret. */
export interface EndpointRecord {
  id: string;
  url: string;
  description: string | null;
  types: string[] | null;
  enabled: boolean;
  disabled_reason: string | null;
  failing_since: Date | null;
  secret_rotated_at: Date | null;
  previous_secret_expires_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

const RECORD = `w.id, w.url, w.description, w.types, w.enabled, w.disabled_reason, s.failing_since, w.secret_rotated_at,
  s.previous_secret_expires_at, w.created_at, w.updated_at`;
const FROM = "public.webhook_endpoints w left join lateral private.webhook_endpoint_state(w.id) s on true";

export interface EndpointChange {
  url?: string;
  description?: string | null;
  types?: string[] | null;
  enabled?: boolean;
}

export async function listEndpoints(sql: Sql, filters: { enabled?: boolean; limit: number; offset: number }) {
  const where = ["w.deleted_at is null"];
  const params: unknown[] = [];
  if (filters.enabled !== undefined) {
    params.push(filters.enabled);
    where.push(`w.enabled = $${params.length}`);
  }
  return listPage<EndpointRecord>(sql, {
    columns: RECORD,
    from: FROM,
    where,
    params,
    orderBy: "w.created_at, w.id",
    limit: filters.limit,
    offset: filters.offset,
  });
}

export function getEndpoint(sql: Sql, id: string) {
  return sql.one<EndpointRecord>(`select ${RECORD} from ${FROM} where w.id = $1 and w.deleted_at is null`, [id]);
}

/** A new endpoint and its first secret, in the caller's transaction. */
export async function addEndpoint(
  sql: Sql,
  fields: Required<Omit<EndpointChange, "enabled">> & { enabled: boolean },
  secret: string,
) {
  const [row] = await sql.query<{ id: string }>(
    "insert into public.webhook_endpoints (url, description, types, enabled) values ($1, $2, $3, $4) returning id",
    [fields.url, fields.description, fields.types, fields.enabled],
  );
  const id = (row as { id: string }).id;
  await sql.query("select private.set_webhook_secret($1, $2, interval '0')", [id, secret]);
  return getEndpoint(sql, id);
}

/** Changes what was sent; enabling it again clears why it was disabled. Undefined when there is no such endpoint. */
export async function changeEndpoint(sql: Sql, id: string, change: EndpointChange) {
  const set: string[] = [];
  const params: unknown[] = [id];
  for (const field of ["url", "description", "types", "enabled"] as const) {
    if (change[field] === undefined) continue;
    params.push(change[field]);
    set.push(`${field} = $${params.length}`);
  }
  if (change.enabled === true) set.push("disabled_reason = null");
  if (set.length > 0) {
    const rows = await sql.query(
      `update public.webhook_endpoints set ${set.join(", ")} where id = $1 and deleted_at is null returning id`,
      params,
    );
    if (rows.length === 0) return undefined;
  }
  return getEndpoint(sql, id);
}

export async function deleteEndpoint(sql: Sql, id: string): Promise<boolean> {
  const rows = await sql.query(
    "update public.webhook_endpoints set deleted_at = now() where id = $1 and deleted_at is null returning id",
    [id],
  );
  return rows.length === 1;
}

/** A new secret; the old one signs beside it for `graceHours`. */
export async function rotateSecret(sql: Sql, id: string, secret: string, graceHours: number) {
  const rows = await sql.query(
    "update public.webhook_endpoints set secret_rotated_at = now() where id = $1 and deleted_at is null returning id",
    [id],
  );
  if (rows.length === 0) return undefined;
  await sql.query("select private.set_webhook_secret($1, $2, make_interval(hours => $3::int))", [id, secret, graceHours]);
  return getEndpoint(sql, id);
}

/** A delivery as admins read it, with its latest attempts. */
const DELIVERY = `d.id, d.event_id::text, d.event_type, d.resource_id, d.occurred_at, d.status, d.tries,
  case when d.status = 'pending' then d.next_attempt_at end as next_attempt_at, d.created_at, d.updated_at,
  (select coalesce(json_agg(json_build_object('started_at', a.started_at, 'duration_ms', a.duration_ms,
     'status_code', a.status_code, 'error', a.error, 'response', a.response) order by a.id desc), '[]')
   from (select * from public.webhook_attempts a where a.delivery_id = d.id order by a.id desc limit 20) a) as attempts`;

export async function listDeliveries(
  sql: Sql,
  endpointId: string,
  filters: { status?: string; event_id?: string; limit: number; offset: number },
) {
  const params: unknown[] = [endpointId];
  const where = ["d.endpoint_id = $1"];
  if (filters.status !== undefined) {
    params.push(filters.status);
    where.push(`d.status = $${params.length}`);
  }
  if (filters.event_id !== undefined) {
    params.push(filters.event_id);
    where.push(`d.event_id = $${params.length}::bigint`);
  }
  return listPage(sql, {
    columns: DELIVERY,
    from: "public.webhook_deliveries d",
    where,
    params,
    orderBy: "d.created_at desc, d.id desc",
    limit: filters.limit,
    offset: filters.offset,
  });
}

export function getDelivery(sql: Sql, endpointId: string, id: string) {
  return sql.one(`select ${DELIVERY} from public.webhook_deliveries d where d.endpoint_id = $1 and d.id = $2`, [endpointId, id]);
}

/** 'queued', 'not_found', 'disabled' or 'in_flight' (private.redeliver_webhook). */
export async function redeliver(sql: Sql, endpointId: string, id: string): Promise<string> {
  const [row] = await sql.query<{ result: string }>("select private.redeliver_webhook($1, $2) as result", [endpointId, id]);
  return row?.result ?? "not_found";
}

/** Enqueues a signed webhook.ping to the endpoint, due now; undefined when there is no such endpoint (CA409 when disabled). */
export async function pingEndpoint(sql: Sql, endpointId: string): Promise<string | undefined> {
  const [row] = await sql.query<{ id: string | null }>("select private.ping_webhook($1) as id", [endpointId]);
  return row?.id ?? undefined;
}
