import { AsyncLocalStorage } from "node:async_hooks";
import { Server } from "node:http";
import pg from "pg";
import { startServer } from "../../node/server.ts";
import { CAPTURE_HEADER, type CapturedStatement, type ServerReply, type ServerRequest } from "./server-protocol.ts";

/**
 * The Node server as `npm start` runs it, with one addition for the bench:
 * every pg Client.query call is counted (one call is one round trip: pg sends
 * a query and waits for Postgres to be ready again before the next), and on
 * request the statements are captured with their values, so the raw baseline
 * replays exactly what the API sent. Driven over the IPC channel of
 * child_process.fork by bench/harness/server-process.ts.
 */

let queries = 0;
/** The text of every named statement the server has sent, by name (see CapturedStatement.prepared). */
const namedTexts = new Map<string, string>();
let capture: CapturedStatement[] | undefined;
let clientIds = new WeakMap<object, number>();

// Requests carrying the capture header run in a context of their own, so
// statements of requests still in flight from a previous load are not captured.
// The storage is disabled again when the capture ends: while any is enabled,
// Node runs its hooks on every promise of every request, a cost `npm start`
// does not pay (bench/README.md, "What moved the figures", item 14).
const captured = new AsyncLocalStorage<true>();
const emit = Server.prototype.emit;
Server.prototype.emit = function (this: Server, event: string, ...args: unknown[]) {
  const request = args[0] as { headers?: Record<string, unknown> } | undefined;
  if (event === "request" && capture && request?.headers?.[CAPTURE_HEADER]) {
    return captured.run(true, () => emit.call(this, event, ...args));
  }
  return emit.call(this, event, ...args);
} as typeof emit;

type Query = (this: pg.Client, config: unknown, values?: unknown, callback?: unknown) => unknown;
const proto = pg.Client.prototype as unknown as { query: Query };
const original = proto.query;
proto.query = function (this: pg.Client, config: unknown, values?: unknown, callback?: unknown) {
  queries++;
  const named = config as { name?: string; text?: string } | string;
  if (typeof named === "object" && named.name && named.text && !namedTexts.has(named.name)) {
    namedTexts.set(named.name, named.text);
  }
  if (capture && captured.getStore()) {
    let client = clientIds.get(this);
    if (client === undefined) {
      client = new Set(capture.map((s) => s.client)).size;
      clientIds.set(this, client);
    }
    const text = typeof config === "string" ? config : (config as { text: string }).text;
    const name = typeof config === "string" ? undefined : (config as { name?: string }).name;
    const params = Array.isArray(values) ? values : (config as { values?: unknown[] }).values;
    const entry: CapturedStatement = { client, text, rows: 0 };
    if (name) entry.name = name;
    if (params) entry.values = params.map(serialisable);
    const prepared = [...text.matchAll(/(?:^|;\s*)execute (\w+)/g)].flatMap(([, name]) => {
      const preparedText = name && namedTexts.get(name);
      return name && preparedText ? [{ name, text: preparedText }] : [];
    });
    if (prepared.length) entry.prepared = prepared;
    capture.push(entry);
    const count = (result: unknown) => {
      entry.rows = rowCount(result);
    };
    // pg-pool's pool.query passes a callback; everything else awaits the promise.
    if (typeof values === "function" || typeof callback === "function") {
      const done = (typeof callback === "function" ? callback : values) as (error: unknown, result: unknown) => void;
      const wrapped = (error: unknown, result: unknown) => {
        if (!error) count(result);
        done(error, result);
      };
      return typeof callback === "function" ? original.call(this, config, values, wrapped) : original.call(this, config, wrapped);
    }
    const result = original.call(this, config, values, callback) as Promise<unknown>;
    result.then(count, () => {});
    return result;
  }
  return original.call(this, config, values, callback);
};

/** Rows of a result; of the last statement's result for a multi-statement text. */
function rowCount(result: unknown): number {
  const last = Array.isArray(result) ? result.at(-1) : result;
  return (last as { rows?: unknown[] } | undefined)?.rows?.length ?? 0;
}

/** Bytes (the key hash) cross the IPC channel as {bytes: hex}. */
function serialisable(value: unknown): unknown {
  if (value instanceof Uint8Array) return { bytes: Buffer.from(value).toString("hex") };
  if (value instanceof Date) return value.toISOString();
  return value;
}

process.on("message", (message: ServerRequest) => {
  if (message.type === "count") {
    process.send?.({ type: "count", queries } satisfies ServerReply);
    queries = 0;
  } else if (message.on) {
    capture = [];
    clientIds = new WeakMap();
    process.send?.({ type: "capture", statements: [] } satisfies ServerReply);
  } else {
    process.send?.({ type: "capture", statements: capture ?? [] } satisfies ServerReply);
    capture = undefined;
    captured.disable();
  }
});

// The bench that started this server is gone: nothing else would stop it.
process.on("disconnect", () => process.exit(0));

await startServer();
