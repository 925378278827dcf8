/**
 * What several keys per user cost (issue 40):
 * - the key check every request makes, for a key whose user holds one live
 *   key against one whose user holds 50 live and 2,000 revoked ones (the
 *   check looks a key up by its hash alone, so the two should not differ);
 * - issuing a key: `generate` (a first key: checked before and after the
 *   insert) and `POST /api-keys` (a further key: the trigger's lock, name
 *   check and count of live keys), for a user with no other key and for one
 *   with 48 live and 2,000 revoked keys, each followed by its revocation.
 *
 *   npm run bench:keys                 # embedded Postgres, or the server of DATABASE_URL
 *   npm run bench:keys -- --rounds 400
 *
 * Variants run interleaved, request by request, in one process against one
 * scratch database, so a noisy machine slows all alike: read the ratios.
 */
import { randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import pg from "pg";
import { createApp } from "../../functions/app.ts";
import { loadConfig } from "../../functions/config.ts";
import { Database } from "../../functions/db/database.ts";
import { addUser, createTenant, issueKeyFor } from "../../functions/tenants/provisioning.ts";
import { startEmbeddedPostgres } from "../../node/embedded-db.ts";
import { migrate } from "../../node/migrate.ts";

const { values } = parseArgs({ options: { rounds: { type: "string", default: "300" } } });
const ROUNDS = Number(values.rounds);
const out = (line = "") => process.stdout.write(`${line}\n`);

interface Variant {
  name: string;
  run(i: number): Promise<void>;
}

/** Runs the variants interleaved and prints each one's mean and median in milliseconds. */
async function compare(title: string, variants: Variant[]) {
  const times = variants.map(() => [] as number[]);
  for (let i = 0; i < ROUNDS; i++) {
    for (const [n, variant] of variants.entries()) {
      const started = performance.now();
      await variant.run(i);
      (times[n] as number[]).push(performance.now() - started);
    }
  }
  const stats = times.map((list) => {
    const sorted = [...list].sort((a, b) => a - b);
    return { mean: list.reduce((a, b) => a + b, 0) / list.length, p50: sorted[Math.floor(sorted.length / 2)] as number };
  });
  out(`\n${title} (${ROUNDS} rounds, interleaved)`);
  const base = stats[0] as { mean: number; p50: number };
  for (const [n, variant] of variants.entries()) {
    const s = stats[n] as { mean: number; p50: number };
    const delta = n === 0 ? "" : `  (mean x${(s.mean / base.mean).toFixed(2)}, p50 x${(s.p50 / base.p50).toFixed(2)})`;
    out(`  ${variant.name.padEnd(44)} mean ${s.mean.toFixed(3)} ms  p50 ${s.p50.toFixed(3)} ms${delta}`);
  }
}

async function main() {
  let adminUrl = process.env.DATABASE_URL;
  let stopEmbedded: (() => Promise<void>) | undefined;
  if (!adminUrl) {
    const embedded = await startEmbeddedPostgres(join(tmpdir(), `camp-keys-bench-${process.pid}`), { persistent: false });
    adminUrl = embedded.adminUrl;
    stopEmbedded = embedded.stop;
  }
  const name = `camp_keys_bench_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const db = new Database(url.toString(), { max: 4 });
  try {
    await migrate(url.toString());
    const tenant = await createTenant(db, "Bench", "admin@bench.test");
    const app = createApp({ db, config: loadConfig({ RATE_LIMIT_PER_MINUTE: "0" }) });
    const adminHeaders = { "X-API-Key": tenant.api_key, "Content-Type": "application/json" };
    const request = async (method: string, path: string, headers: Record<string, string>, body?: unknown) => {
      const res = await app.request(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      const text = await res.text();
      if (res.status >= 400) throw new Error(`${method} ${path}: ${res.status} ${text}`);
      return text ? (JSON.parse(text) as { data: { id: string; key: string } }) : undefined;
    };

    // Users: "lone" holds one key; "busy" 50 live and 2,000 revoked (the create-and-revoke pattern).
    const lone = await addUser(db, tenant.tenant_id, "lone@bench.test", "staff");
    const busy = await addUser(db, tenant.tenant_id, "busy@bench.test", "staff");
    const loneKey = (await issueKeyFor(db, lone)).key;
    const busyKey = (await issueKeyFor(db, busy)).key;
    await db.asOwner((sql) =>
      sql.query(
        `insert into public.api_keys (tenant_id, user_id, key_hash, key_prefix, name, revoked_at)
         select $1, $2, sha256(gen_random_uuid()::text::bytea), 'camp_xxxx', 'old ' || g, now() from generate_series(1, 2000) g`,
        [tenant.tenant_id, busy.user_id],
      ),
    );
    await db.asOwner((sql) =>
      sql.query(
        `insert into public.api_keys (tenant_id, user_id, key_hash, key_prefix, name)
         select $1, $2, sha256(gen_random_uuid()::text::bytea), 'camp_xxxx', 'live ' || g from generate_series(1, 49) g`,
        [tenant.tenant_id, busy.user_id],
      ),
    );

    await compare("the key check of a request (GET /api-keys/my-key)", [
      {
        name: "user with 1 live key",
        run: async () => void (await request("GET", "/api/v1/api-keys/my-key", { "X-API-Key": loneKey })),
      },
      {
        name: "user with 50 live, 2,000 revoked keys",
        run: async () => void (await request("GET", "/api/v1/api-keys/my-key", { "X-API-Key": busyKey })),
      },
    ]);

    // Make room for one more key on the busy user (48 live), and free the others' first key.
    await db.asOwner((sql) =>
      sql.query("update public.api_keys set revoked_at = now() where user_id = $1 and name in ('live 48', 'live 49')", [
        busy.user_id,
      ]),
    );
    const fresh = await addUser(db, tenant.tenant_id, "fresh@bench.test", "staff");
    const issueAndRevoke = (path: string, body: (i: number) => unknown) => async (i: number) => {
      const issued = await request("POST", path, adminHeaders, body(i));
      await request("DELETE", `/api/v1/api-keys/${issued?.data.id}`, adminHeaders);
    };
    await compare("issuing a key, then revoking it by id", [
      { name: "generate: first key of a user", run: issueAndRevoke("/api/v1/api-keys/generate", () => ({ email: fresh.email })) },
      {
        name: "POST /api-keys: user with 1 live key",
        run: issueAndRevoke("/api/v1/api-keys", (i) => ({ email: lone.email, name: `n${i}`, scopes: ["read"] })),
      },
      {
        name: "POST /api-keys: user with 48 live, 2,002 revoked",
        run: issueAndRevoke("/api/v1/api-keys", (i) => ({ email: busy.email, name: `n${i}`, scopes: ["read"] })),
      },
    ]);
  } finally {
    await db.close();
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.end();
    await stopEmbedded?.();
  }
}

main().catch((error) => {
  process.stderr.write(`keys bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 1;
});
