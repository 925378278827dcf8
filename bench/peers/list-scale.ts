/**
 * npm run bench:list-scale [-- --sizes 10000,100000 --duration 8 --rounds 3 --connections 32]
 *
 * Does a list page cost what a page is, whatever the instance holds? For
 * each size, a database of 2 tenants with one instance of that many
 * participants (made once, reused by later runs), and `npm run bench`'s
 * list and get scenarios on it: the API, the hand-written server and
 * PostGraphile side by side in alternating rounds. Then, per size, the
 * API's list ÷ get (a get costs the same at any size, so it is the
 * yardstick of the machine at that moment) and list ÷ PostGraphile's list
 * (same fields, total included), and whether list ÷ get at the largest
 * size is at least 0.75 of that at the smallest. DATABASE_URL names the
 * server and the base name of the databases (its own database is not used).
 */
import { execFileSync } from "node:child_process";
import { mkdtemp, readdir, readFile } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { say } from "../../node/runtime.ts";
import { countParticipants, createSeeded, databaseName, sibling } from "../harness/databases.ts";
import { type PeersRun, throughputRatio } from "../harness/peers-report.ts";
import { readSeedFile } from "../harness/seed-file.ts";

const { values: args } = parseArgs({
  options: {
    sizes: { type: "string", default: "10000,100000" },
    duration: { type: "string", default: "8" },
    rounds: { type: "string", default: "3" },
    connections: { type: "string", default: "32" },
  },
});
const sizes = (args.sizes as string).split(",").map(Number);
const TENANTS = 2;

/** The database of one size, seeded when an earlier run did not leave it. */
async function database(serverUrl: string, size: number): Promise<string> {
  const name = `${databaseName(serverUrl)}_lists_${size}`;
  const url = sibling(serverUrl, name);
  const known = await readSeedFile(url);
  if (known && (await countParticipants(url).catch(() => -1)) === size * TENANTS) return url;
  say(`creating ${name}: ${TENANTS} tenants, one instance of ${size.toLocaleString("en")} participants each (once)`);
  await createSeeded(serverUrl, name, {
    tenants: TENANTS,
    instancesPerTenant: 1,
    participantsPerInstance: size,
    staffPerTenant: 1,
    label: `lists ${size}`,
    log: say,
  });
  return url;
}

async function main() {
  const serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) throw new Error("set DATABASE_URL to a Postgres server the bench may create databases on");
  const rows: Array<{
    size: number;
    list: number;
    get: number;
    listOverGet: number;
    overPostgraphile: number;
    overHand: number;
  }> = [];
  for (const size of sizes) {
    const url = await database(serverUrl, size);
    const out = await mkdtemp(join(tmpdir(), "camp-list-scale-"));
    say(`size ${size.toLocaleString("en")}: list and get, API, hand-written and PostGraphile (load ${loadavg()[0]?.toFixed(1)})`);
    execFileSync(
      process.execPath,
      [
        "--import",
        "tsx",
        "bench/peers/load.ts",
        "--skip-conventions",
        "--scenarios",
        "list,get",
        "--duration",
        args.duration as string,
        "--rounds",
        args.rounds as string,
        "--connections",
        args.connections as string,
        "--out",
        out,
      ],
      { stdio: ["ignore", process.stderr, process.stderr], env: { ...process.env, DATABASE_URL: url } },
    );
    const file = (await readdir(out)).find((f) => f.endsWith("-peers.json"));
    if (!file) throw new Error(`the peers run at ${size} wrote no figures`);
    const run = JSON.parse(await readFile(join(out, file), "utf8")) as PeersRun;
    const scenario = (name: string) => {
      const found = run.peers.find((p) => p.scenario === name);
      if (!found) throw new Error(`no ${name} figures at ${size}`);
      const [api, hand, postgraphile] = found.sides;
      if (!api || !hand || !postgraphile) throw new Error(`incomplete ${name} figures at ${size}`);
      if (api.errors + hand.errors + postgraphile.errors > 0) say(`errors at ${size} in ${name}: ${api.first_error ?? ""}`);
      return { api, hand, postgraphile };
    };
    const list = scenario("list");
    const get = scenario("get");
    rows.push({
      size,
      list: list.api.rps,
      get: get.api.rps,
      listOverGet: list.api.rps / get.api.rps,
      overPostgraphile: throughputRatio(list.api, list.postgraphile),
      overHand: throughputRatio(list.api, list.hand),
    });
  }
  const line = (cells: string[]) => process.stdout.write(`| ${cells.join(" | ")} |\n`);
  process.stdout.write(`\nlist page of 50 with its total, GET /participants?instance_id=…&limit=50, ${TENANTS} tenants\n\n`);
  line(["participants in the instance", "list req/s", "get req/s", "list ÷ get", "list ÷ PostGraphile", "list ÷ hand-written"]);
  line(["---", "---", "---", "---", "---", "---"]);
  for (const r of rows) {
    line([
      r.size.toLocaleString("en"),
      r.list.toFixed(0),
      r.get.toFixed(0),
      r.listOverGet.toFixed(3),
      `${r.overPostgraphile.toFixed(2)}×`,
      `${r.overHand.toFixed(2)}×`,
    ]);
  }
  const [first, last] = [rows[0], rows[rows.length - 1]];
  if (first && last && first !== last) {
    const kept = last.listOverGet / first.listOverGet;
    process.stdout.write(
      `\nlist ÷ get at ${last.size.toLocaleString("en")} is ${kept.toFixed(2)} of that at ${first.size.toLocaleString("en")} (target ≥ 0.75): ${kept >= 0.75 ? "met" : "NOT MET"}\n`,
    );
  }
  const peers = rows.every((r) => r.overPostgraphile >= 3);
  process.stdout.write(`list ÷ PostGraphile ≥ 3× at every size: ${peers ? "met" : "NOT MET"}\n`);
}

main().catch((error) => {
  say(`list-scale bench failed: ${(error as Error).stack ?? error}`);
  process.exit(1);
});
