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
  /** CSV import: each field's cell as the file wrote it (for the summary's samples; care cells never). */
  raw?: Record<string, string>;
  /** CSV import: the line's non-empty care cells, by column (care-columns.ts). */
  care?: Record<string, string>;
}

/** A row that passed the schema: what the create endpoint would accept. */
export interface ValidRow {
  at: number;
  data: CreateInput;
  names: Partial<Record<NamedReference, string>>;
  /**
   * A row with problems of its own, checked against the rules with its bad
   * fields left out, so that one pass reports everything: never written.
   */
  failed?: boolean;
  /** Its user_id was one of the bad fields: no duplicate check. */
  noUserId?: boolean;
}

/** One problem of one row; `field` is a participant field, or a NamedReference. */
export interface RowIssue {
  at: number;
  field: string;
  issue: string;
  /** The problem without what is particular to the line, for the summary (defaults to `issue`). */
  kind?: string;
}

/**
 * Every row through the participant create schema; rows with problems are
 * reported, not returned. 20,000 lines take a while: in turns (pace.ts).
 */
export async function validateRows(
  candidates: Candidate[],
  /** Rows already known to have problems (found while reading the file). */
  known: Set<number> = new Set(),
): Promise<{ rows: ValidRow[]; issues: RowIssue[] }> {
  const rows: ValidRow[] = [];
  const issues: RowIssue[] = [];
  const turn = pacer();
  for (const candidate of candidates) {
    await turn();
    const parsed = CreateBody.safeParse(candidate.input);
    if (parsed.success) {
      rows.push({ at: candidate.at, data: parsed.data, names: candidate.names ?? {}, failed: known.has(candidate.at) });
      continue;
    }
    const found = fieldIssues(parsed.error.issues);
    // A row that is not an object at all has no field to name.
    for (const { field, issue } of found) issues.push({ at: candidate.at, field: field === "body" ? "row" : field, issue });
    const partial = withoutBadFields(candidate.input, new Set(found.map((i) => i.field)));
    const again = partial && CreateBody.safeParse(partial.input);
    if (again?.success) {
      rows.push({ at: candidate.at, data: again.data, names: candidate.names ?? {}, failed: true, noUserId: partial?.noUserId });
    }
  }
  return { rows, issues };
}

/** Stand-ins for the required fields a bad row lacks, so that the rest of it can still be checked. */
const STAND_INS: Record<string, string> = { first_name: "-", surname: "-", user_id: "-" };

/** A row's input without its bad fields (required ones stood in for), or undefined when it is no object. */
function withoutBadFields(input: unknown, bad: Set<string>): { input: Record<string, unknown>; noUserId: boolean } | undefined {
  if (typeof input !== "object" || input === null || Array.isArray(input) || bad.has("body") || bad.has("instance_id"))
    return undefined;
  const out: Record<string, unknown> = { ...(input as Record<string, unknown>) };
  for (const field of bad) {
    if (field in STAND_INS) out[field] = STAND_INS[field];
    else delete out[field];
  }
  return { input: out, noUserId: bad.has("user_id") };
}

/**
 * Ids for new rows, ascending in row order: the rows of one transaction share
 * created_at, and lists order by (created_at, id), so a batch or a file is
 * listed and exported in the order it was sent.
 */
export function orderedIds(count: number): string[] {
  return Array.from({ length: count }, () => crypto.randomUUID()).sort();
}
