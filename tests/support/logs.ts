import { reset } from "@logtape/logtape";
import { afterAll, beforeAll } from "vitest";
import { configureLogging } from "../../node/logging.ts";

/**
 * The service's log lines, as the Node server writes them (node/logging.ts),
 * kept for a test file to read instead of written to stderr. Use once per
 * file, at the top: `const logs = useLogCapture();` then `logs.lines`.
 */
export function useLogCapture() {
  const capture = { lines: [] as string[], events: () => capture.lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
  beforeAll(async () => {
    await configureLogging("debug", (line) => {
      capture.lines.push(line);
      return true;
    });
  });
  afterAll(async () => {
    await reset();
  });
  return capture;
}
