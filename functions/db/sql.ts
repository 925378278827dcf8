/**
 * What data-access functions are given: queries inside the request's
 * transaction. A type of its own so that data access (the resources, the
 * error mapping's helpers) depends on this and nothing of how it is run.
 */
export interface Sql {
  query<R extends object = Record<string, unknown>>(text: string, values?: unknown[]): Promise<R[]>;
  /** The first row, or undefined. */
  one<R extends object = Record<string, unknown>>(text: string, values?: unknown[]): Promise<R | undefined>;
  /** Hands each row to `onRow` as it arrives and keeps none: for results too large to hold at once. */
  each<R extends object = Record<string, unknown>>(text: string, values: unknown[], onRow: (row: R) => void): Promise<void>;
}
