// Code generators that use TypeScript's compiler API (@hey-api/openapi-ts) need
// TypeScript 5: the project's own TypeScript 7 has no such API. npm may hoist
// the generator to the root, next to TypeScript 7; this makes `typescript`
// resolve to this workspace's TypeScript 5 wherever it is imported from:
//   node --import ./examples/typescript-5.mjs node_modules/@hey-api/openapi-ts/bin/run.js …
import { register } from "node:module";

const workspace = new URL("./package.json", import.meta.url).href;
register(
  `data:text/javascript,${encodeURIComponent(`
    export async function resolve(specifier, context, next) {
      return specifier === "typescript" ? next(specifier, { ...context, parentURL: ${JSON.stringify(workspace)} }) : next(specifier, context);
    }`)}`,
);
