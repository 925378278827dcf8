import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { isAlive } from "./embedded-db.ts";

/**
 * One server per DATA_DIR on the embedded database: the server keeps its pid in
 * `<DATA_DIR>/server.pid` while it runs. A second server on the same directory
 * would share the cluster and then stop it under the first; it is refused
 * with the first one's pid instead. A file whose process is gone (a crash, a
 * kill -9) is taken over.
 */
export function lockDataDir(dataDir: string): () => void {
  // On a fresh clone DATA_DIR does not exist yet: the lock is the first thing in it.
  mkdirSync(resolve(dataDir), { recursive: true });
  const file = join(resolve(dataDir), "server.pid");
  for (;;) {
    try {
      writeFileSync(file, String(process.pid), { flag: "wx" });
      return () => rmSync(file, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    const pid = Number(readFileSync(file, "utf8").trim());
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && isAlive(pid)) {
      throw new Error(
        `a camp server (pid ${pid}) is already running on DATA_DIR ${resolve(dataDir)}; ` +
          "stop it first, or give this one another DATA_DIR",
      );
    }
    rmSync(file, { force: true });
  }
}
