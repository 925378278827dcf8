import type { Hook } from "@hono/zod-openapi";
import type { AppEnv } from "../app-env.ts";
import { ApiError, type FieldIssue } from "../errors.ts";
import { checkJsonText } from "./json-shape.ts";

interface ZodIssueLike {
  code?: string;
  path: PropertyKey[];
  message: string;
  /** Of an `unrecognized_keys` issue: the fields a strict body does not know. */
  keys?: string[];
}

const fieldName = (path: readonly PropertyKey[]) => (path.length > 0 ? path.map(String).join(".") : "body");

/** Zod's issues as the contract's field list: `[{field, issue}]`, each unknown field named on its own. */
export function fieldIssues(issues: readonly ZodIssueLike[]): FieldIssue[] {
  return issues.flatMap((issue) =>
    issue.code === "unrecognized_keys" && issue.keys
      ? issue.keys.map((key) => ({ field: fieldName([...issue.path, key]), issue: "is not a field of this operation" }))
      : [
          {
            field: fieldName(issue.path),
            issue: /received undefined$/.test(issue.message) ? "is required" : issue.message,
          },
        ],
  );
}

export function validationError(issues: readonly ZodIssueLike[]): ApiError {
  const details = fieldIssues(issues);
  const summary = details.map((d) => `${d.field}: ${d.issue}`).join("; ");
  return new ApiError("VALIDATION_ERROR", `invalid request: ${summary}`, details);
}

/**
 * Every route validates through this hook, so every 400 names its fields the
 * same way. A JSON body is first checked whole (checkJsonText), the fields no
 * schema reads included: the body as sent, which Hono parsed once and keeps.
 */
export const validationHook: Hook<unknown, AppEnv, string, unknown> = async (result, c) => {
  if (result.target === "json") checkJsonText(await c.req.json());
  if (!result.success) throw validationError(result.error.issues);
};
