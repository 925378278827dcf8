import { parseArgs } from "node:util";
import { Database } from "../../functions/db/database.ts";
import { migrate } from "../../node/migrate.ts";
import { say } from "../../node/runtime.ts";
import { seed } from "./seed-data.ts";
import { recordSeed } from "./seed-file.ts";

/**
 * npm run bench:seed -- --tenants 10 --instances 20 --participants 500
 * Seeds DATABASE_URL (migrated first) with tenants × instances × participants
 * live-or-deleted participants and writes the tenants' keys to
 * bench/results/seed-<database>.json for `npm run bench`.
 */
const { values } = parseArgs({
  options: {
    tenants: { type: "string", default: "10" },
    instances: { type: "string", default: "20" },
    participants: { type: "string", default: "500" },
    staff: { type: "string", default: "3" },
  },
});

const count = (name: string, value: string | undefined) => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer`);
  return n;
};

async function main() {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error("set DATABASE_URL to the database to seed (a scratch database: the seed adds tenants to it)");
  const options = {
    tenants: count("tenants", values.tenants),
    instancesPerTenant: count("instances", values.instances),
    participantsPerInstance: count("participants", values.participants),
    staffPerTenant: Number(values.staff),
    label: `bench ${new Date().toISOString().slice(0, 19)}`,
    log: say,
  };
  const total = options.tenants * options.instancesPerTenant * options.participantsPerInstance;
  say(`seeding ${total.toLocaleString("en")} participants into ${new URL(url).pathname.slice(1)}`);
  await migrate(url, say);
  const db = new Database(url, { max: 2 });
  try {
    const tenants = await seed(db, options);
    const file = await recordSeed(url, tenants, total);
    say(`keys of ${file.tenants.length} tenants in bench/results/seed-${file.database}.json`);
  } finally {
    await db.close();
  }
}

main().catch((error) => {
  say(`bench:seed failed: ${(error as Error).message}`);
  process.exit(1);
});
