import type { Hook } from "@hono/zod-openapi";
import type { AppEnv } from "../app-env.ts";
import { ApiError, type FieldIssue } from "../errors.ts";

interface ZodIssueLike {
  path: PropertyKey[];
  message: string;
}

/** Zod's issues as the contract's field list: `[{field, issue}]`. */
export function fieldIssues(issues: readonly ZodIssueLike[]): FieldIssue[] {
  return issues.map((issue) => ({
    field: issue.path.length > 0 ? issue.path.map(String).join(".") : "body",
    issue: /received undefined$/.test(issue.message) ? "is required" : issue.message,
  }));
}

export function validationError(issues: readonly ZodIssueLike[]): ApiError {
  const details = fieldIssues(issues);
  const summary = details.map((d) => `${d.field}: ${d.issue}`).join("; ");
  return new ApiError("VALIDATION_ERROR", `invalid request: ${summary}`, details);
}

/** Every route validates through this hook, so every 400 names its fields the same way. */
export const validationHook: Hook<unknown, AppEnv, string, unknown> = (result) => {
  if (!result.success) throw validationError(result.error.issues);
};
