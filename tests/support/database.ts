import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, inject } from "vitest";
import { Database } from "../../functions/db/database.ts";
import { databaseUrl } from "./urls.ts";

export interface TestDatabase {
  url: string;
  db: Database;
  /** Runs SQL as the connecting (owner) role, outside RLS — for set-up and for checking what was written. */
  admin(text: string, values?: unknown[]): Promise<pg.QueryResult>;
}

/**
 * A database of this test file's own, cloned from the migrated template and
 * dropped afterwards. Use once per file, at the top:
 *   const t = useTestDatabase();
 *   ... t().db ...
 */
export function useTestDatabase(): () => TestDatabase {
  let current: TestDatabase | undefined;
  let name = "";
  const adminUrl = inject("adminUrl");

  beforeAll(async () => {
    name = `camp_test_${process.ppid}_${randomBytes(5).toString("hex")}`;
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    try {
      // Two clones of one template at the same moment can collide; retry briefly.
      for (let attempt = 1; ; attempt++) {
        try {
          await admin.query(`create database ${name} template ${inject("templateDatabase")}`);
          break;
        } catch (error) {
          if (attempt >= 10) throw error;
          await new Promise((r) => setTimeout(r, 100 * attempt));
        }
      }
    } finally {
      await admin.end();
    }
    const url = databaseUrl(adminUrl, name);
    const db = new Database(url, { max: 10 });
    current = { url, db, admin: (text, values) => db.pool.query(text, values) };
  });

  afterAll(async () => {
    await current?.db.close();
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.end();
  });

  return () => {
    if (!current) throw new Error("useTestDatabase(): the database exists only inside tests");
    return current;
  };
}

/**
 * A one-connection Database on `url` whose round trips (pg query calls: pg
 * waits for Postgres before it sends the next) are recorded as their texts.
 */
export function countingDatabase(url: string, prepare = true): { db: Database; sent: string[] } {
  const db = new Database(url, { max: 1, prepare });
  const sent: string[] = [];
  db.pool.on("connect", (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: unknown }).query = (config: unknown, ...rest: unknown[]) => {
      sent.push(typeof config === "string" ? config : (config as { text: string }).text);
      return query(config, ...rest);
    };
  });
  return { db, sent };
}
