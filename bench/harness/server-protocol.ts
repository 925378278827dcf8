import type { Slot, Vars } from "./scenarios.ts";

/** What bench/peers/load.ts and its servers (bench/harness/server.ts, bench/peers/floor-server.ts) say to each other. */

export interface CapturedStatement {
  /** Which pg client sent it, numbered in order of first use within the capture. */
  client: number;
  text: string;
  /** Set when the API sent it as a named (prepared) statement; the replay does the same. */
  name?: string;
  values?: unknown[];
  /**
   * For a text with `execute <name>(…)` in it (the key check and a
   * one-statement transaction's statement sent with begin and commit), the
   * statements it runs, which the API's connection prepared earlier: the
   * replay prepares them too.
   */
  prepared?: Array<{ name: string; text: string }>;
  /** Rows it returned (the last statement's, for several in one text); the replay expects rows where it had rows. */
  rows: number;
}

/** A captured statement with the request's own values marked as slots (bench/peers/raw.ts compile), replayed with another request's. */
export interface Template {
  client: number;
  /** Whether the captured statement returned rows: a replay that returns none has gone wrong. */
  rows: boolean;
  name?: string;
  /** See CapturedStatement.prepared. */
  prepared?: Array<{ name: string; text: string }>;
  text: Part[];
  values?: Value[];
}
export type Part = string | { slot: Slot };
export type Value = { value: unknown } | { slot: Slot };

export type ServerRequest = { type: "count" } | { type: "capture"; on: boolean };
export type ServerReply = { type: "count"; queries: number } | { type: "capture"; statements: CapturedStatement[] };

/** bench/conventions/switch-server.ts: which of its two apps answers from now on (the one with the convention, or the one without). */
export type SwitchRequest = { type: "switch"; serve: "on" | "off" };
export type SwitchReply = { type: "switched"; serving: "on" | "off" };

/** Sent by the bench on the one request whose statements it captures. */
export const CAPTURE_HEADER = "x-bench-capture";

/**
 * The Node floor (bench/peers/floor-server.ts) is told the statements to replay,
 * and the status to answer with, once per scenario.
 */
export type FloorRequest = { type: "serve"; templates: Template[]; status: number };
export type FloorReply = { type: "serving" };

/** Carries a floor request's Vars (JSON, the key hash as hex): the floor does no routing or parsing of its own. */
export const FLOOR_VARS_HEADER = "x-bench-vars";

export const encodeVars = (v: Vars): string => JSON.stringify({ ...v, keyHash: v.keyHash.toString("hex") });

export function decodeVars(header: string): Vars {
  const parsed = JSON.parse(header) as Omit<Vars, "keyHash"> & { keyHash: string };
  return { ...parsed, keyHash: Buffer.from(parsed.keyHash, "hex") };
}
