import { configure, getJsonLinesFormatter, type LogLevel, type LogRecord } from "@logtape/logtape";

/**
 * Where the service's log goes on Node: one JSON object per line on stderr
 * (stdout stays for the CLI's output meant for scripts). LOG_LEVEL sets the
 * least severe level written (`info` writes a line per request).
 */
export async function configureLogging(level: LogLevel = "info", write = (line: string) => process.stderr.write(line)) {
  const format = getJsonLinesFormatter({ categorySeparator: ".", message: "rendered", properties: "flatten" });
  await configure({
    reset: true,
    sinks: { stderr: (record: LogRecord) => write(format(record)) },
    loggers: [
      { category: ["camp"], lowestLevel: level, sinks: ["stderr"] },
      { category: ["logtape", "meta"], lowestLevel: "warning", sinks: ["stderr"] },
    ],
  });
}
