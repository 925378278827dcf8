/**
 * Long work of one request in turns: a loop calls the pacer's turn() once per
 * item, and every SLICE_MS of work it waits for a timer, which lets the event
 * loop answer other requests (and read their sockets) in between. One
 * request's parsing or checking then delays another tenant's request by at
 * most about one slice, however large the body. setTimeout is what Node and
 * Deno both have (setImmediate is Node's only).
 */

/** Milliseconds of work between two turns: short against a request's latency, long against a timer's cost. */
export const SLICE_MS = 10;

export function pacer(sliceMs = SLICE_MS): () => Promise<void> | undefined {
  let since = performance.now();
  return () => {
    if (performance.now() - since < sliceMs) return undefined;
    return new Promise<void>((resume) =>
      setTimeout(() => {
        since = performance.now();
        resume();
      }, 0),
    );
  };
}
