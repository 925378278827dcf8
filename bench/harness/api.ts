import autocannon from "autocannon";
import type { Scenario, Vars } from "./scenarios.ts";
import { CAPTURE_HEADER } from "./server-protocol.ts";
import { figures, Latencies, type LoadFigures } from "./stats.ts";

export interface ApiRun {
  url: string;
  scenario: Scenario;
  vars: () => Vars;
  connections: number;
  seconds: number;
  /** Headers beyond the key and content type (the floor's vars). */
  headers?: (v: Vars) => Record<string, string>;
}

/** One request of the scenario, outside any load (for the statement capture). */
export async function sendOne(url: string, scenario: Scenario, v: Vars): Promise<void> {
  const response = await fetch(`${url}${scenario.path(v)}`, {
    method: scenario.method,
    headers: { "x-api-key": v.key, "content-type": "application/json", [CAPTURE_HEADER]: "1" },
    ...(scenario.body ? { body: scenario.body(v) } : {}),
  });
  const text = await response.text();
  if (response.status !== scenario.status) {
    throw new Error(`${scenario.name}: expected ${scenario.status}, got ${response.status}: ${text.slice(0, 300)}`);
  }
}

/**
 * autocannon against a server (the API or the floor): `connections` keep-alive connections, each
 * request with the vars of a fresh pick. Latency is recorded from autocannon's
 * per-response timing (sub-millisecond) into the same histogram type as the
 * raw baseline; anything but the scenario's status counts as an error.
 */
export async function runApi(run: ApiRun): Promise<LoadFigures & { sent: number }> {
  const latencies = new Latencies();
  let ok = 0;
  let failed = 0;
  let finished: (result: autocannon.Result) => void = () => {};
  let failedRun: (error: Error) => void = () => {};
  const done = new Promise<autocannon.Result>((resolve, reject) => {
    finished = resolve;
    failedRun = reject;
  });
  const instance = autocannon(
    {
      url: run.url,
      connections: run.connections,
      duration: run.seconds,
      requests: [
        {
          method: run.scenario.method,
          setupRequest: (request) => {
            const v = run.vars();
            const headers = { "x-api-key": v.key, "content-type": "application/json", ...run.headers?.(v) };
            const body = run.scenario.body?.(v);
            return { ...request, path: run.scenario.path(v), headers, ...(body ? { body } : {}) };
          },
        },
      ],
    },
    (error, result) => (error ? failedRun(error) : finished(result)),
  );
  instance.on("response", (_client, statusCode, _bytes, responseTime) => {
    if (statusCode === run.scenario.status) {
      ok++;
      latencies.recordMs(responseTime);
    } else {
      failed++;
    }
  });
  const result = await done;
  // autocannon counts timeouts among its errors.
  const errors = failed + result.errors;
  return { ...figures(ok, errors, result.duration, latencies), sent: result.requests.sent };
}
