import * as hdr from "hdr-histogram-js";

/** Latencies in microseconds, summarised the same way for the API and the raw baseline. */
export class Latencies {
  private readonly histogram = hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 120_000_000,
    numberOfSignificantValueDigits: 3,
  });

  recordMs(ms: number): void {
    this.histogram.recordValue(Math.max(1, Math.round(ms * 1000)));
  }

  /** Adds another's recorded latencies to this one's. */
  merge(other: Latencies): void {
    this.histogram.add(other.histogram);
  }

  /** The percentile in milliseconds. */
  percentileMs(p: number): number {
    return this.histogram.getValueAtPercentile(p) / 1000;
  }
}

export interface LoadFigures {
  requests: number;
  errors: number;
  seconds: number;
  rps: number;
  p50_ms: number;
  p99_ms: number;
  /** The first error's message, to tell what went wrong. */
  first_error?: string;
}

export function figures(requests: number, errors: number, seconds: number, latencies: Latencies): LoadFigures {
  return {
    requests,
    errors,
    seconds,
    rps: requests / seconds,
    p50_ms: latencies.percentileMs(50),
    p99_ms: latencies.percentileMs(99),
  };
}
