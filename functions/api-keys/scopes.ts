import { z } from "@hono/zod-openapi";

/**
 * Every scope a key may carry, in the order a key's scopes are stored and
 * returned. The one list: the API's schemas, the CLI's `--scopes`, the
 * principal's type and the demo key's "everything" all read it. Adding a
 * scope is a line here and the sets the database allows
 * (api_keys_scopes_check, which is the last word on combinations).
 */
export const SCOPES = ["read", "write", "care", "attendance"] as const;

export type Scope = (typeof SCOPES)[number];

/** A scope list as clients send it: any order, no repeats, always with `read`; returned in SCOPES order. */
export const scopeList = () =>
  z
    .array(z.enum(SCOPES))
    .min(1)
    .max(SCOPES.length)
    .refine((scopes) => new Set(scopes).size === scopes.length, "must not repeat a scope")
    .refine(
      (scopes) => scopes.includes("read") || (scopes.length === 1 && scopes[0] === "attendance"),
      'must include "read" (or be ["attendance"] alone)',
    )
    .transform((scopes) => SCOPES.filter((scope) => scopes.includes(scope)))
    .openapi({
      description:
        '["read"] (GET and HEAD only) or ["read", "write"] (everything the user\'s role allows), each optionally with "care": the user\'s care access to contacts, care records and consents (a key without it reaches none, whatever its user may), and "attendance": records movements and runs roll calls, and reads authorised pickups\' names in the roster. ["attendance"] alone reaches movements, roll calls, presence, rosters and the event feed, nothing else.',
      example: ["read", "write", "care"],
    });

/** The scopes of a comma-separated list (`camp keys issue --scopes read,care`), or the reason they are refused. */
export function parseScopes(text: string): { scopes: Scope[] } | { error: string } {
  const parsed = scopeList().safeParse(
    text
      .split(",")
      .map((s) => s.trim())
      .filter((s) => s !== ""),
  );
  if (parsed.success) return { scopes: parsed.data };
  const issue = parsed.error.issues[0];
  return { error: `${issue?.message ?? "is not a scope list"} (scopes: ${SCOPES.join(", ")})` };
}
