/**
 * A bounded load on a running server for the fault and shutdown tests: a fixed
 * number of workers, each sending one request at a time until told to stop,
 * recording what every request got (its status, or the error fetch threw: a
 * reset, a refused connection, a timeout).
 */

export interface Outcome {
  label: string;
  status?: number;
  error?: string;
  /** For a create: the user_id it sent. */
  userId?: string;
}

export interface RequestSpec {
  label: string;
  path: string;
  method?: string;
  body?: unknown;
  userId?: string;
}

export interface Load {
  outcomes: Outcome[];
  /** Stops the workers after their current request and resolves with every outcome. */
  stop(): Promise<Outcome[]>;
}

export async function send(baseUrl: string, key: string, spec: RequestSpec, timeoutMs = 20_000): Promise<Outcome> {
  try {
    const res = await fetch(`${baseUrl}${spec.path}`, {
      method: spec.method ?? "GET",
      headers: { "X-API-Key": key, ...(spec.body ? { "Content-Type": "application/json" } : {}) },
      body: spec.body ? JSON.stringify(spec.body) : undefined,
      signal: AbortSignal.timeout(timeoutMs),
    });
    await res.arrayBuffer();
    return { label: spec.label, status: res.status, userId: spec.userId };
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code;
    return { label: spec.label, error: `${(error as Error).name}: ${cause ?? (error as Error).message}`, userId: spec.userId };
  }
}

export function startLoad(baseUrl: string, key: string, workers: number, next: (n: number) => RequestSpec): Load {
  const outcomes: Outcome[] = [];
  let running = true;
  let count = 0;
  const loops = Array.from({ length: workers }, async () => {
    while (running) outcomes.push(await send(baseUrl, key, next(count++)));
  });
  return {
    outcomes,
    async stop() {
      running = false;
      await Promise.all(loops);
      return outcomes;
    },
  };
}

/** Outcome counts by status (or error) for a failure message. */
export function tally(outcomes: Outcome[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const o of outcomes) {
    const key = o.status !== undefined ? String(o.status) : (o.error ?? "?");
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}
