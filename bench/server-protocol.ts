/** What bench/load.ts and the instrumented server (bench/server.ts) say to each other over IPC. */

export interface CapturedStatement {
  /** Which pg client sent it, numbered in order of first use within the capture. */
  client: number;
  text: string;
  /** Set when the API sent it as a named (prepared) statement; the replay does the same. */
  name?: string;
  values?: unknown[];
  /** Rows it returned (the last statement's, for several in one text); the replay expects rows where it had rows. */
  rows: number;
}

export type ServerRequest = { type: "count" } | { type: "capture"; on: boolean };
export type ServerReply = { type: "count"; queries: number } | { type: "capture"; statements: CapturedStatement[] };

/** Sent by the bench on the one request whose statements it captures. */
export const CAPTURE_HEADER = "x-bench-capture";
