import { getLogger, type Logger } from "@logtape/logtape";

/**
 * The service's log: one JSON object per event (LogTape's JSON-lines
 * formatter, which escapes control characters, so no value can forge a line).
 * The runtime-neutral core only writes events; each entry decides where they
 * go (node/logging.ts: stderr; the Edge Function: the console). Unconfigured
 * (in-process tests), events are dropped.
 *
 * Messages are constants; what varies goes in the properties. Never log a
 * credential, a request body, a query string or a participant's data: ids,
 * codes and route patterns only.
 */
export const log: Logger = getLogger(["camp"]);

/** What a log line may say of an error: its kind and codes, not its message when that may quote data. */
export function describeError(error: unknown): Record<string, unknown> {
  if (!(error instanceof Error)) return { error: typeof error };
  const pg = error as { code?: unknown; severity?: unknown; constraint?: unknown; routine?: unknown };
  // A Postgres error's message and detail may quote the row's values; its code and constraint say enough.
  if (typeof pg.severity === "string")
    return { error: "postgres", code: pg.code, constraint: pg.constraint, routine: pg.routine };
  // Not `message`: that key is the log line's own.
  return {
    error: error.name,
    code: typeof pg.code === "string" ? pg.code : undefined,
    error_message: error.message,
    stack: error.stack,
  };
}

/** The fields of the one log line each request writes (http/request-id.ts). */
export interface RequestLine {
  request_id: string;
  /** The client's own X-Request-Id, when it sent a safe one. */
  client_request_id?: string;
  method: string;
  route: string;
  status: number;
  ms: number;
}

let writeRequestLine: (line: RequestLine) => void = (line) => log.info("request", { ...line });

/**
 * Logs a request: event `request` at level info, as `log.info` would. An
 * entry may write these lines itself (node/logging.ts), in the same form as
 * its other lines: they are the one event of every request, and LogTape's
 * dispatch costs more per line than the whole of a read's other middleware.
 */
export function logRequest(line: RequestLine): void {
  writeRequestLine(line);
}

/** Who writes the request lines from now on (undefined: LogTape, like every other event). */
export function setRequestLineWriter(writer: ((line: RequestLine) => void) | undefined): void {
  writeRequestLine = writer ?? ((line) => log.info("request", { ...line }));
}
