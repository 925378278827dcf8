import { pacer } from "../http/pace.ts";
import { fieldIssues } from "../http/validation.ts";
import { CreateBody, type CreateInput } from "../participants/schemas.ts";

/**
 * The rows of a bulk create or a CSV import, on their way to the table. Each
 * carries `at`, what the client knows it by: its index in the JSON batch, or
 * its line in the CSV file.
 */

/** A structure record given by name (CSV import) instead of, or as well as, by id. */
export const NAMED_REFERENCES = ["supergroup", "subgroup", "block", "room"] as const;
export type NamedReference = (typeof NAMED_REFERENCES)[number];

export interface Candidate {
  at: number;
  /** The participant as sent: validated with the create schema of single creates. */
  input: unknown;
  names?: Partial<Record<NamedReference, string>>;
}

/** A row that passed the schema: what the create endpoint would accept. */
export interface ValidRow {
  at: number;
  data: CreateInput;
  names: Partial<Record<NamedReference, string>>;
}

/** One problem of one row; `field` is a participant field, or a NamedReference. */
export interface RowIssue {
  at: number;
  field: string;
  issue: string;
}

/**
 * Every row through the participant create schema; rows with problems are
 * reported, not returned. 20,000 lines take a while: in turns (pace.ts).
 */
export async function validateRows(candidates: Candidate[]): Promise<{ rows: ValidRow[]; issues: RowIssue[] }> {
  const rows: ValidRow[] = [];
  const issues: RowIssue[] = [];
  const turn = pacer();
  for (const candidate of candidates) {
    await turn();
    const parsed = CreateBody.safeParse(candidate.input);
    if (parsed.success) rows.push({ at: candidate.at, data: parsed.data, names: candidate.names ?? {} });
    else {
      // A row that is not an object at all has no field to name.
      for (const { field, issue } of fieldIssues(parsed.error.issues)) {
        issues.push({ at: candidate.at, field: field === "body" ? "row" : field, issue });
      }
    }
  }
  return { rows, issues };
}

/**
 * Ids for new rows, ascending in row order: the rows of one transaction share
 * created_at, and lists order by (created_at, id), so a batch or a file is
 * listed and exported in the order it was sent.
 */
export function orderedIds(count: number): string[] {
  return Array.from({ length: count }, () => crypto.randomUUID()).sort();
}
