import { describe, expect, it } from "vitest";
import { batchedLines } from "../node/logging.ts";
import { run, TSX } from "./support/processes.ts";

/**
 * The Node server's log leaves in one write per turn of the event loop, not one
 * per line, and loses nothing when the process exits right after logging.
 */

describe("batched log lines", () => {
  it("writes the lines of one turn in one write, in order, and the next turn's in another", async () => {
    const writes: string[] = [];
    const lines = batchedLines((text) => writes.push(text));
    lines.write("a\n");
    lines.write("b\n");
    expect(writes).toEqual([]);
    await new Promise((done) => setImmediate(done));
    expect(writes).toEqual(["a\nb\n"]);
    lines.write("c\n");
    await new Promise((done) => setImmediate(done));
    expect(writes).toEqual(["a\nb\n", "c\n"]);
  });

  it("writes what is pending at once when flushed, and nothing twice", async () => {
    const writes: string[] = [];
    const lines = batchedLines((text) => writes.push(text));
    lines.write("a\n");
    lines.flush();
    expect(writes).toEqual(["a\n"]);
    await new Promise((done) => setImmediate(done));
    lines.flush();
    expect(writes).toEqual(["a\n"]);
  });

  it("loses no line of a process that exits in the turn it logged them", async () => {
    const script = [
      'import { configureLogging } from "./node/logging.ts";',
      'import { getLogger } from "@logtape/logtape";',
      'await configureLogging("info");',
      'for (let i = 0; i < 500; i++) getLogger(["camp", "test"]).info("line {i}", { i });',
      "process.exit(3);",
    ].join("\n");
    const result = await run(TSX, ["--input-type=module", "-e", script], {});
    expect(result.code).toBe(3);
    const events = result.stderr
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { i: number });
    expect(events.map((e) => e.i)).toEqual([...Array(500).keys()]);
  });
});
