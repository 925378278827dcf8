import { getJsonLinesFormatter } from "@logtape/logtape";
import { describe, expect, it } from "vitest";
import { logRequest, setRequestLineWriter } from "../functions/log.ts";
import { batchedLines, configureLogging, requestLine } from "../node/logging.ts";
import { run, TSX } from "./support/processes.ts";

/**
 * The Node server's log leaves in one write per 25 ms (or 64 KiB), not one per
 * line, and loses nothing when the process exits right after logging.
 */

describe("batched log lines", () => {
  it("writes the lines of a short while in one write, in order, and later ones in another", async () => {
    const writes: string[] = [];
    const lines = batchedLines((text) => writes.push(text), { maxDelayMs: 20 });
    lines.write("a\n");
    await new Promise((done) => setTimeout(done, 5));
    lines.write("b\n");
    expect(writes).toEqual([]);
    await new Promise((done) => setTimeout(done, 40));
    expect(writes).toEqual(["a\nb\n"]);
    lines.write("c\n");
    await new Promise((done) => setTimeout(done, 40));
    expect(writes).toEqual(["a\nb\n", "c\n"]);
  });

  it("writes at once when the pending lines reach the size bound", () => {
    const writes: string[] = [];
    const lines = batchedLines((text) => writes.push(text), { maxDelayMs: 60_000, maxBytes: 10 });
    lines.write("12345\n");
    expect(writes).toEqual([]);
    lines.write("67890\n");
    expect(writes).toEqual(["12345\n67890\n"]);
    lines.flush();
    expect(writes).toHaveLength(1);
  });

  it("writes what is pending at once when flushed, and nothing twice", async () => {
    const writes: string[] = [];
    const lines = batchedLines((text) => writes.push(text), { maxDelayMs: 5 });
    lines.write("a\n");
    lines.flush();
    expect(writes).toEqual(["a\n"]);
    await new Promise((done) => setTimeout(done, 20));
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

describe("request lines", () => {
  it("are written as LogTape's JSON-lines formatter writes the same event, control characters escaped", async () => {
    const line = { request_id: "r-1", method: "GET", route: '/api/v1/x/:id"\n\u0000', status: 200, ms: 1.5 };
    const at = new Date("2026-11-25T10:00:00.123Z");
    const format = getJsonLinesFormatter({ categorySeparator: ".", message: "rendered", properties: "flatten" });
    const expected = format({
      category: ["camp"],
      level: "info",
      message: ["request"],
      rawMessage: "request",
      timestamp: at.getTime(),
      properties: { ...line },
    });
    expect(requestLine(line, at)).toBe(expected);
  });

  it("go to the configured writer at level info, and nowhere at warning", async () => {
    const lines: string[] = [];
    await configureLogging("info", (l) => lines.push(l));
    logRequest({ request_id: "a", method: "GET", route: "/", status: 200, ms: 1 });
    await configureLogging("warning", (l) => lines.push(l));
    logRequest({ request_id: "b", method: "GET", route: "/", status: 200, ms: 1 });
    expect(lines.map((l) => JSON.parse(l).request_id)).toEqual(["a"]);
    setRequestLineWriter(undefined);
  });
});
