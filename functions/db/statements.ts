import type pg from "pg";

/**
 * Statement preparation. Parameterised statements are sent as named
 * (prepared) statements: each connection parses and plans a statement text
 * once, and Postgres may keep a generic plan, where an unnamed statement is
 * parsed, analysed and planned on every request (planning the participant
 * list costs more than running it). The names are per process and bounded,
 * as are the texts worth preparing: one-off texts (bulk inserts of n rows)
 * go unnamed. A statement a connection has prepared can also be sent as
 * EXECUTE with its values as literals, so that it travels with others in
 * one round trip.
 */
const MAX_NAMED_STATEMENTS = 1_000;
const MAX_NAMED_TEXT = 16_384;
const statementNames = new Map<string, string>();

/** The query to send for `text`: named when `prepare` and it is worth preparing. */
export function statement(text: string, values: unknown[] | undefined, prepare: boolean): pg.QueryConfig {
  if (!prepare || values === undefined || text.length > MAX_NAMED_TEXT) return { text, values };
  let name = statementNames.get(text);
  if (name === undefined) {
    if (statementNames.size >= MAX_NAMED_STATEMENTS) return { text, values };
    name = `camp_${statementNames.size}`;
    statementNames.set(text, name);
  }
  return { name, text, values };
}

/** The named statements each connection has prepared (it keeps them as long as it lives). */
const preparedOn = new WeakMap<pg.ClientBase, Set<string>>();

/**
 * A value as a quoted SQL literal: the text the extended protocol would send
 * for it as a parameter. Values the protocol sends another way (arrays,
 * dates, objects) have none; their statement is sent as usual.
 */
function literalOf(value: unknown): string | undefined {
  if (value === null || value === undefined) return "null";
  if (typeof value === "string") return quoteLiteral(value);
  if (typeof value === "boolean" || (typeof value === "number" && Number.isFinite(value))) return `'${value}'`;
  if (value instanceof Uint8Array) return `'\\x${hex(value)}'`;
  return undefined;
}

/**
 * A string as a quoted SQL literal, as pg's escapeLiteral writes it (quotes
 * doubled; with a backslash, backslashes doubled in an E'' literal), without
 * its character-by-character copy: every read's text carries a few.
 */
export function quoteLiteral(value: string): string {
  if (value.includes("\\")) return ` E'${value.replaceAll("\\", "\\\\").replaceAll("'", "''")}'`;
  return value.includes("'") ? `'${value.replaceAll("'", "''")}'` : `'${value}'`;
}

const HEX_DIGITS = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, "0"));

/** Bytes as lower-case hex, for a bytea literal (`'\x…'`). */
export const hex = (bytes: Uint8Array) => {
  let text = "";
  for (const b of bytes) text += HEX_DIGITS[b];
  return text;
};

/**
 * EXECUTE of a statement this connection has already prepared (the same
 * plan), its values as literals: a text that can travel with others in one
 * round trip (the simple protocol), where the extended protocol takes one
 * statement per round trip. Undefined when the statement is not yet
 * prepared here or a value has no literal form.
 */
export function executeText(client: pg.ClientBase, config: pg.QueryConfig): string | undefined {
  if (!config.name || !preparedOn.get(client)?.has(config.name)) return undefined;
  const literals: string[] = [];
  for (const value of config.values ?? []) {
    const literal = literalOf(value);
    if (literal === undefined) return undefined;
    literals.push(literal);
  }
  return `execute ${config.name}${literals.length ? `(${literals.join(", ")})` : ""}`;
}

/** Runs a statement, noting that the connection has prepared it when it is named. */
export async function runStatement(client: pg.ClientBase, config: pg.QueryConfig): Promise<pg.QueryResult> {
  const result = await client.query(config);
  if (config.name) {
    const names = preparedOn.get(client) ?? new Set<string>();
    preparedOn.set(client, names.add(config.name));
  }
  return result;
}
