import { configure, getJsonLinesFormatter, type LogLevel, type LogRecord } from "@logtape/logtape";
import { type RequestLine, setRequestLineWriter } from "../functions/log.ts";

/**
 * Where the service's log goes on Node: one JSON object per line on stderr
 * (stdout stays for the CLI's output meant for scripts). LOG_LEVEL sets the
 * least severe level written (`info` writes a line per request).
 * `write` replaces stderr (tests read the lines); it gets each line as it is logged.
 */
export async function configureLogging(level: LogLevel = "info", write: (line: string) => unknown = stderrLines.write) {
  const format = getJsonLinesFormatter({ categorySeparator: ".", message: "rendered", properties: "flatten" });
  // The request lines bypass LogTape's dispatch, in the form its formatter gives every line.
  setRequestLineWriter(level === "debug" || level === "info" ? (line) => write(requestLine(line)) : () => {});
  await configure({
    reset: true,
    sinks: { stderr: (record: LogRecord) => write(format(record)) },
    loggers: [
      { category: ["camp"], lowestLevel: level, sinks: ["stderr"] },
      { category: ["logtape", "meta"], lowestLevel: "warning", sinks: ["stderr"] },
    ],
  });
}

/**
 * A request's line as the JSON-lines formatter writes an info event
 * `request` of category `camp` with these properties (tests/log-batching.test.ts
 * holds the two to the same text): JSON.stringify escapes every value.
 */
export function requestLine(line: RequestLine, at?: Date): string {
  const stamp = at ? at.toISOString() : isoNow();
  return `{"@timestamp":"${stamp}","level":"INFO","message":"request","logger":"camp",${JSON.stringify(line).slice(1)}\n`;
}

/** The time as ISO text, formatted once per millisecond however many lines share it. */
let lastMs = -1;
let lastIso = "";
function isoNow(): string {
  const ms = Date.now();
  if (ms !== lastMs) {
    lastMs = ms;
    lastIso = new Date(ms).toISOString();
  }
  return lastIso;
}

/**
 * Collects lines and writes them in one write at most `maxDelayMs` after the
 * first of them, or as soon as `maxBytes` are pending: a write per line is a
 * system call per request, on the requests' own thread. What is pending when
 * the process exits is written then, synchronously (stderr to a file or a
 * pipe is synchronous on Linux), so no line is lost to an exit; a SIGKILL
 * loses at most the last `maxDelayMs` of lines. The timer does not keep the
 * process alive.
 */
export function batchedLines(writeText: (text: string) => unknown, { maxDelayMs = 25, maxBytes = 64 * 1024 } = {}) {
  let pending: string[] = [];
  let bytes = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const flush = () => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    if (pending.length === 0) return;
    const text = pending.join("");
    pending = [];
    bytes = 0;
    writeText(text);
  };
  const write = (line: string) => {
    pending.push(line);
    bytes += line.length;
    if (bytes >= maxBytes) flush();
    else if (timer === undefined) {
      timer = setTimeout(flush, maxDelayMs);
      timer.unref?.();
    }
  };
  return { write, flush };
}

const stderrLines = batchedLines((text) => process.stderr.write(text));
process.on("exit", stderrLines.flush);
