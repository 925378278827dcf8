import type pg from "pg";

/** A Postgres error (it has a severity) leaves the connection usable; anything else (a lost socket) may not. */
const refusedByPostgres = (error: unknown) => typeof (error as { severity?: unknown }).severity === "string";

/**
 * A request's way to the pool: it lends at most one connection at a time.
 * A request that held a connection while it waited for a second could, with
 * enough like it, hold the whole pool while each waits for one more, and every
 * tenant's requests would then wait and fail. So a second checkout while one
 * is out is refused at once, as the bug it is; one after another is fine.
 */
export class OneConnection {
  #out = false;

  constructor(private readonly pool: pg.Pool) {}

  async connect(): Promise<pg.PoolClient> {
    if (this.#out) throw new Error("a request asked for a second database connection while it holds one");
    this.#out = true;
    try {
      return await this.pool.connect();
    } catch (error) {
      this.#out = false;
      throw error;
    }
  }

  /** Gives the connection back; `broken` destroys it (its state is unknown). */
  release(client: pg.PoolClient, broken = false): void {
    this.#out = false;
    client.release(broken);
  }

  /**
   * Gives a connection back after a failed statement: rolled back and kept
   * when Postgres refused the statement (a key that is not live, say: no
   * reconnection for each made-up key), destroyed when its state is unknown.
   */
  async releaseAfter(client: pg.PoolClient, error: unknown): Promise<void> {
    const usable =
      refusedByPostgres(error) &&
      (await client.query("rollback").then(
        () => true,
        () => false,
      ));
    this.release(client, !usable);
  }

  /** One statement on a connection of its own, given back at once. */
  async query<R extends object>(config: pg.QueryConfig): Promise<R[]> {
    const client = await this.connect();
    let broken = false;
    try {
      return (await client.query<R>(config)).rows;
    } catch (error) {
      broken = !refusedByPostgres(error);
      throw error;
    } finally {
      this.release(client, broken);
    }
  }
}
