#!/usr/bin/env node
// Adds to package-lock.json the platform-specific optional packages (biome,
// deno, supabase, esbuild, sharp… built for other systems) that npm left out.
//
// Why: the npm registry this project's machines reach serves only the
// linux-x64 builds of such packages, so `npm install` here silently drops the
// others from the lock, and `npm ci` then refuses the lock as out of sync
// ("Missing: @biomejs/cli-darwin-arm64@ from lock file"). An entry with the
// right os/cpu/libc lets `npm ci` see the package as one for another platform
// and skip it, as it would with a complete lock.
//
// Run it after any `npm install` that changes the lock: node scripts/complete-lockfile.mjs
// (and for the examples' own lock: node scripts/complete-lockfile.mjs examples/package-lock.json).
import { readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";

const path = process.argv[2] ? resolve(process.argv[2]) : new URL("../package-lock.json", import.meta.url);
const lock = JSON.parse(readFileSync(path, "utf8"));
const packages = lock.packages;

/** os, cpu and libc of a platform package, read from its name (…-darwin-arm64, …-linux-x64-musl, …-win32-x64). */
function platformOf(name) {
  const n = name.toLowerCase();
  const os = [
    ["darwin", "darwin"],
    ["win32", "win32"],
    ["windows", "win32"],
    ["android", "android"],
    ["freebsd", "freebsd"],
    ["openbsd", "openbsd"],
    ["netbsd", "netbsd"],
    ["sunos", "sunos"],
    ["aix", "aix"],
    ["linuxmusl", "linux"],
    ["linux", "linux"],
    ["wasm", null],
  ].find(([key]) => n.includes(key));
  const cpu = [
    ["arm64", "arm64"],
    ["aarch64", "arm64"],
    ["x64", "x64"],
    ["x86_64", "x64"],
    ["ia32", "ia32"],
    ["arm", "arm"],
    ["ppc64", "ppc64"],
    ["s390x", "s390x"],
    ["riscv64", "riscv64"],
    ["loong64", "loong64"],
    ["mips64el", "mips64el"],
    ["wasm32", "wasm32"],
  ].find(([key]) => n.includes(key));
  const entry = {};
  if (os?.[1]) entry.os = [os[1]];
  if (cpu) entry.cpu = [cpu[1]];
  if (n.includes("musl")) entry.libc = ["musl"];
  else if (os?.[1] === "linux" && (n.includes("gnu") || n.includes("glibc"))) entry.libc = ["glibc"];
  return entry;
}

let added = 0;
for (const [location, pkg] of Object.entries(packages)) {
  for (const [name, spec] of Object.entries(pkg.optionalDependencies ?? {})) {
    const base = location === "" ? "" : `${location}/`;
    // npm resolves a dependency next to its parent or in any node_modules above it.
    const candidates = [`${base}node_modules/${name}`, `node_modules/${name}`];
    if (candidates.some((c) => packages[c])) continue;
    const platform = platformOf(name);
    if (!platform.os && !platform.cpu) continue; // not a platform build: leave it to npm
    const version = String(spec).replace(/^[=^~]/, "");
    packages[`node_modules/${name}`] = { version, dev: pkg.dev || undefined, optional: true, ...platform };
    added++;
  }
}

const sorted = Object.fromEntries(
  Object.entries(packages).sort(([a], [b]) => (a === "" ? -1 : b === "" ? 1 : a.localeCompare(b))),
);
lock.packages = sorted;
writeFileSync(path, `${JSON.stringify(lock, null, 2)}\n`);
process.stderr.write(`complete-lockfile: added ${added} platform package entr${added === 1 ? "y" : "ies"}\n`);
