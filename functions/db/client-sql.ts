import pg from "pg";
import { type Opening, open } from "./key-check.ts";
import type { Sql } from "./sql.ts";
import { executeText, runStatement, statement } from "./statements.ts";

/**
 * The Sql handle over one connection, and the one-statement transaction: a
 * transaction whose work is one statement sends it with the commit when it
 * can (and, for a deferred key check, with `begin` and the check too), and a
 * second statement is a mistake of the caller's, refused before it could run
 * outside the transaction.
 */
export interface OneStatement {
  sent: boolean;
  committed: boolean;
  /** The transaction is not open yet: its opening (`begin`, key check, scope) goes first, with the statement when it can. */
  opening?: Opening;
}

async function send(client: pg.ClientBase, config: pg.QueryConfig, one: OneStatement | undefined): Promise<pg.QueryResult> {
  if (one) {
    if (one.sent) throw new Error("a one-statement transaction was given a second statement");
    one.sent = true;
    const opening = one.opening;
    const text = executeText(client, config);
    const check = opening && executeText(client, opening.check);
    if (text !== undefined && (!opening || check !== undefined)) {
      // One round trip: [begin; the key check;] the statement; commit. Its result is the one before the commit's.
      const results = (await client.query(
        opening ? `begin; ${check}; ${text}; commit` : `${text}; commit`,
      )) as unknown as pg.QueryResult[];
      opening?.opened(results[1]?.rows[0]);
      one.committed = true;
      return results.at(-2) as pg.QueryResult;
    }
    if (opening) await open(client, opening);
  }
  return runStatement(client, config);
}

/** Data access's Sql on this connection, in whatever transaction it has open. */
export function wrap(client: pg.ClientBase, prepare: boolean, one?: OneStatement): Sql {
  return {
    async query(text, values) {
      return (await send(client, statement(text, values, prepare), one)).rows;
    },
    async one(text, values) {
      return (await send(client, statement(text, values, prepare), one)).rows[0];
    },
    each(text, values, onRow) {
      if (one) throw new Error("a one-statement transaction cannot stream rows");
      // A Query with a row listener and no callback does not collect its rows.
      const query = new pg.Query(statement(text, values, prepare));
      return new Promise((resolve, reject) => {
        query.on("row", onRow);
        query.on("end", () => resolve());
        query.on("error", reject);
        client.query(query);
      });
    },
  };
}
