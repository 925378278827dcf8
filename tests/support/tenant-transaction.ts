import pg from "pg";

/**
 * A transaction of the API role in one tenant, on a connection of its own,
 * that the test commits or rolls back when it chooses: a slow import, a
 * request stuck between two statements.
 */
export interface OpenTransaction {
  query(text: string, values?: unknown[]): Promise<pg.QueryResult>;
  /** This transaction's id (it gets one at its first write). */
  xactId(): Promise<string>;
  commit(): Promise<void>;
  rollback(): Promise<void>;
}

export async function openTenantTransaction(url: string, tenantId: string, userId: string): Promise<OpenTransaction> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query("begin");
  const claims = { role: "camp_api", tenant_id: tenantId, sub: userId, app_role: "admin", via: "api_key" };
  await client.query("select set_config('role', 'camp_api', true), set_config('request.jwt.claims', $1, true)", [
    JSON.stringify(claims),
  ]);
  const end = async (how: "commit" | "rollback") => {
    try {
      await client.query(how);
    } finally {
      await client.end();
    }
  };
  return {
    query: (text, values) => client.query(text, values),
    xactId: async () => (await client.query("select pg_current_xact_id()::text as x")).rows[0].x,
    commit: () => end("commit"),
    rollback: () => end("rollback"),
  };
}
