import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { run, TSX } from "./support/processes.ts";
import { type ServerProcess, startServerProcess } from "./support/server-process.ts";

/**
 * As root, with DATA_DIR inside a directory the `postgres` user cannot enter
 * (what `mktemp -d` makes), the embedded cluster lives under /var/lib/camp,
 * outside DATA_DIR, while its password stays in DATA_DIR. Deleting DATA_DIR to
 * start fresh used to leave a cluster that refused the new password
 * ("password authentication failed"), on every start after.
 */

const closed = mkdtempSync(join(tmpdir(), "camp-orphan-"));
const dataDir = join(closed, ".data");
const clusters: string[] = [];
afterAll(() => {
  for (const dir of [closed, ...clusters]) rmSync(dir, { recursive: true, force: true });
});

const start = () => startServerProcess({ DATABASE_URL: "", DATA_DIR: dataDir }, { validate: false });

async function demoKeyWorks(server: ServerProcess): Promise<boolean> {
  const key = /(camp_[A-Za-z0-9_-]{43})/.exec(server.stderr())?.[1];
  const res = await fetch(`${server.directUrl}/api/v1/api-keys/my-key`, { headers: { "X-API-Key": key ?? "" } });
  return res.status === 200;
}

describe.runIf(process.getuid?.() === 0)("a root-run embedded database whose DATA_DIR was deleted", () => {
  it("starts fresh, moving the old cluster aside and saying where it went", async () => {
    expect(statSync(closed).mode & 0o777).toBe(0o700);
    const first = await start();
    const home = /its cluster is kept in (\/var\/lib\/camp\/clusters\/[0-9a-f]+)/.exec(first.stderr())?.[1];
    try {
      expect(home).toBeDefined();
      clusters.push(home as string);
      expect(await demoKeyWorks(first)).toBe(true);
    } finally {
      expect(await first.stop()).toBe(0);
    }

    rmSync(dataDir, { recursive: true });

    const second = await start();
    try {
      const aside = /it was moved to (\S+) and a new one is created/.exec(second.stderr())?.[1];
      expect(aside, second.stderr()).toMatch(new RegExp(`^${home}/postgres\\.orphaned-`));
      expect(existsSync(join(aside as string, "PG_VERSION"))).toBe(true);
      expect(second.stderr()).toContain(`rm -rf ${aside}`);
      expect(second.stderr()).toMatch(/Created a demo tenant/);
      expect(await demoKeyWorks(second)).toBe(true);
    } finally {
      expect(await second.stop()).toBe(0);
    }
  }, 240_000);

  it("with a password file that is not the cluster's, refuses to start and says exactly what to do", async () => {
    writeFileSync(join(dataDir, "postgres.password"), "not-the-password");
    const result = await run(TSX, ["node/server.ts"], { DATABASE_URL: "", DATA_DIR: dataDir, PORT: "0" }, 120_000);
    expect(result.code).toBe(1);
    const cluster = `${clusters[0]}/postgres`;
    expect(result.stderr).toContain(
      `the embedded Postgres under ${cluster} refuses the password in ${join(dataDir, "postgres.password")}`,
    );
    expect(result.stderr).toContain(`rm -rf ${cluster}`);
    expect(result.stderr).not.toMatch(/password authentication failed/);
  }, 240_000);
});
