import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { useTestDatabase } from "./support/database.ts";
import { call, newTenant, testApp } from "./support/fixtures.ts";
import { ROOT, type RunResult, run, TSX } from "./support/processes.ts";

const t = useTestDatabase();

/** Directories for --out files, removed after the file's tests. */
const scratchDirs: string[] = [];
const scratch = () => {
  const dir = mkdtempSync(join(tmpdir(), "camp-keys-"));
  scratchDirs.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of scratchDirs) rmSync(dir, { recursive: true, force: true });
});

const camp = (...args: string[]) => run(TSX, ["cli/main.ts", ...args], { DATABASE_URL: t().url });

interface KeyLine {
  email: string;
  user_id: string;
  api_key: string;
}

const lines = (text: string): KeyLine[] =>
  text
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line));

/** `count` staff users without keys, straight into the table. */
async function addUsers(tenantId: string, count: number, tag: string): Promise<void> {
  await t().admin(
    "insert into public.users (tenant_id, email) select $1, $2 || g || '@example.test' from generate_series(1, $3) g",
    [tenantId, `${tag}-`, count],
  );
}

/** The users of the tenant that hold a live key whose hash is this key's. */
async function liveKeyOwner(key: string): Promise<string | undefined> {
  const hash = createHash("sha256").update(key).digest();
  const rows = await t().admin("select user_id from api_keys where key_hash = $1 and revoked_at is null", [hash]);
  return rows.rows[0]?.user_id;
}

async function usersWithoutLiveKey(tenantId: string): Promise<number> {
  const rows = await t().admin(
    `select count(*)::int as n from users u where u.tenant_id = $1
     and not exists (select from api_keys k where k.user_id = u.id and k.revoked_at is null)`,
    [tenantId],
  );
  return rows.rows[0].n;
}

/** The CLI in one process (no tsx wrapper in between), interrupted with SIGINT once the first key is out. */
function interruptAfterFirstKey(tenantId: string): Promise<RunResult> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, ["cli/bin.js", "keys", "issue-all", "--tenant", tenantId], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: t().url },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    let signalled = false;
    child.stdout.on("data", (d) => {
      stdout += d;
      if (!signalled) {
        signalled = true;
        child.kill("SIGINT");
      }
    });
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.on("error", fail);
    child.on("close", (code) => {
      clearTimeout(timer);
      done({ code, stdout, stderr });
    });
  });
}

describe("camp keys issue-all", () => {
  it("issues a working key for every user without one and skips users who have one", async () => {
    const tenant = await newTenant(t().db);
    const keyed = await tenant.addUser("staff");
    const bare = await tenant.addUser("staff", { withKey: false });
    const revoked = await tenant.addUser("admin");
    await t().admin("update api_keys set revoked_at = now() where user_id = $1", [revoked.userId]);
    const expired = await tenant.addUser("staff");
    await t().admin("update api_keys set expires_at = now() - interval '1 day' where user_id = $1", [expired.userId]);
    const other = await newTenant(t().db);
    await other.addUser("staff", { withKey: false });

    const res = await camp("keys", "issue-all", "--tenant", tenant.tenantId);
    expect(res.code, res.stderr).toBe(0);
    const out = lines(res.stdout);
    expect(out.map((l) => l.email).sort()).toEqual([bare.email, revoked.email, expired.email].sort());
    for (const line of out) {
      expect(Object.keys(line).sort()).toEqual(["api_key", "email", "user_id"]);
      expect(await liveKeyOwner(line.api_key)).toBe(line.user_id);
    }
    const mine = await call(testApp(t().db), "GET", "/api/v1/api-keys/my-key", { key: out[0]?.api_key });
    expect(mine.status).toBe(200);
    expect(res.stderr).toMatch(/issued 3 key\(s\)/);
    // The users who had a live key keep it; the other tenant is untouched.
    expect((await call(testApp(t().db), "GET", "/api/v1/api-keys/my-key", { key: keyed.key })).status).toBe(200);
    expect(await usersWithoutLiveKey(other.tenantId)).toBe(1);
  });

  it("issues nothing on a second run, so it is safe to re-run", async () => {
    const tenant = await newTenant(t().db);
    await addUsers(tenant.tenantId, 3, "again");
    expect(lines((await camp("keys", "issue-all", "--tenant", tenant.tenantId)).stdout)).toHaveLength(3);
    const second = await camp("keys", "issue-all", "--tenant", tenant.tenantId);
    expect(second.code).toBe(0);
    expect(second.stdout).toBe("");
    expect(second.stderr).toMatch(/issued 0 key\(s\)/);
    const keys = await t().admin("select count(*)::int as n from api_keys where tenant_id = $1", [tenant.tenantId]);
    expect(keys.rows[0].n).toBe(4);
  });

  it("writes the keys to a new file of mode 0600 with --out and nothing to stdout", async () => {
    const tenant = await newTenant(t().db);
    await addUsers(tenant.tenantId, 2, "file");
    const file = join(scratch(), "keys.jsonl");
    const res = await camp("keys", "issue-all", "--tenant", tenant.tenantId, "--out", file);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toBe("");
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const out = lines(readFileSync(file, "utf8"));
    expect(out).toHaveLength(2);
    for (const line of out) expect(await liveKeyOwner(line.api_key)).toBe(line.user_id);
    expect(res.stderr).not.toContain(out[0]?.api_key);
  });

  it("refuses to write over an existing file and then issues nothing", async () => {
    const tenant = await newTenant(t().db);
    await addUsers(tenant.tenantId, 2, "exists");
    const file = join(scratch(), "keys.jsonl");
    writeFileSync(file, "earlier keys\n");
    const res = await camp("keys", "issue-all", "--tenant", tenant.tenantId, "--out", file);
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/already exists/);
    expect(readFileSync(file, "utf8")).toBe("earlier keys\n");
    expect(await usersWithoutLiveKey(tenant.tenantId)).toBe(2);
  });

  it("exits 1 with a message for an unknown tenant or a malformed id", async () => {
    const unknown = await camp("keys", "issue-all", "--tenant", "00000000-0000-4000-8000-000000000000");
    expect(unknown.code).toBe(1);
    expect(unknown.stdout).toBe("");
    expect(unknown.stderr).toMatch(/tenant not found/);
    const malformed = await camp("keys", "issue-all", "--tenant", "tenant-1");
    expect(malformed.code).toBe(1);
    expect(malformed.stderr).toMatch(/uuid/);
  });

  it("stops cleanly on SIGINT: every key issued was printed, the rest are issued by the next run", async () => {
    const tenant = await newTenant(t().db);
    await addUsers(tenant.tenantId, 300, "many");
    const res = await interruptAfterFirstKey(tenant.tenantId);
    expect(res.code, res.stderr).toBe(1);
    expect(res.stderr).toMatch(/SIGINT: finishing the key in progress/);
    expect(res.stderr).toMatch(/camp: interrupted; \d+ user\(s\) still have no key/);
    const first = lines(res.stdout);
    expect(first.length).toBeGreaterThan(0);
    expect(first.length).toBeLessThan(300);
    // Nothing half-issued: the users with a live key are exactly those printed.
    for (const line of first) expect(await liveKeyOwner(line.api_key)).toBe(line.user_id);
    expect(await usersWithoutLiveKey(tenant.tenantId)).toBe(300 - first.length);

    const rest = await camp("keys", "issue-all", "--tenant", tenant.tenantId);
    expect(rest.code, rest.stderr).toBe(0);
    const second = lines(rest.stdout);
    expect(second).toHaveLength(300 - first.length);
    const printed = new Set([...first, ...second].map((l) => l.user_id));
    expect(printed.size).toBe(300);
    expect(await usersWithoutLiveKey(tenant.tenantId)).toBe(0);
  });
});
