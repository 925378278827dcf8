import { readFileSync } from "node:fs";
import type { Command } from "commander";
import { describe, expect, it } from "vitest";
import { buildProgram } from "../cli/program.ts";
import { ROOT } from "./support/processes.ts";

/**
 * The README's table of `camp` commands is read by people, the CLI's commander
 * definitions by the machine: every command and every option of the one must
 * be in the other, so neither can drift.
 */

interface Leaf {
  path: string;
  options: string[];
}

/** Every command that runs something (no subcommands), with its options' long flags. */
function leaves(command: Command, prefix = ""): Leaf[] {
  const path = `${prefix} ${command.name()}`.trim();
  if (command.commands.length === 0) return [{ path, options: command.options.map((o) => o.long ?? o.flags) }];
  return command.commands.flatMap((sub) => leaves(sub, path));
}

/** The first cell of each row of the README's CLI table: `camp tenant create <name> --admin <email>`. */
function readmeRows(): string[] {
  const readme = readFileSync(`${ROOT}README.md`, "utf8");
  const section = readme.slice(readme.indexOf("## The `camp` CLI"));
  const table = section.slice(0, section.indexOf("\n## "));
  return [...table.matchAll(/^\| `(camp [^`]+)` \|/gm)].map((m) => m[1] as string);
}

describe("the README's CLI table", () => {
  // The program itself is `camp`: its commands' paths start below it.
  const commands = buildProgram().commands.flatMap((command) => leaves(command));
  const rows = readmeRows();
  const rowOf = (path: string) => rows.find((row) => row === `camp ${path}` || row.startsWith(`camp ${path} `));

  it("finds the commands (a broken parse would pass everything below)", () => {
    expect(commands.length).toBeGreaterThan(15);
    expect(commands.map((c) => c.path)).toContain("participants import");
    expect(rows.length).toBeGreaterThan(10);
  });

  it("has a row for every command, naming every option", () => {
    const missing: string[] = [];
    for (const command of commands) {
      const row = rowOf(command.path);
      if (!row) missing.push(`camp ${command.path}`);
      else for (const option of command.options) if (!row.includes(option)) missing.push(`camp ${command.path} ${option}`);
    }
    expect(missing).toEqual([]);
  });

  it("names no command or option the CLI does not have", () => {
    const known = new Map(commands.map((c) => [c.path, c.options]));
    const unknown: string[] = [];
    for (const row of rows) {
      const words = row.slice("camp ".length).split(" ");
      const path = [...known.keys()]
        .filter((p) => words.slice(0, p.split(" ").length).join(" ") === p)
        .sort((a, b) => b.length - a.length)[0];
      if (!path) {
        unknown.push(row);
        continue;
      }
      for (const flag of row.match(/--[a-z-]+/g) ?? []) if (!known.get(path)?.includes(flag)) unknown.push(`${row}: ${flag}`);
    }
    expect(unknown).toEqual([]);
  });
});
