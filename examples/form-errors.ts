/**
 * A 400's `details` mapped onto a form: each issue under the field it names
 * (`participants.3.first_name` under that path), anything the form has no
 * field for under `form`. Works with the error type of any generated client:
 * they all type `details` as a list of `{field, issue}`.
 */
export function fieldErrors<F extends string>(
  details: ReadonlyArray<{ field: string; issue: string }> | undefined,
  fields: readonly F[],
): Partial<Record<F | "form", string>> {
  const errors: Partial<Record<F | "form", string>> = {};
  for (const { field, issue } of details ?? []) {
    const key: F | "form" = (fields as readonly string[]).includes(field) ? (field as F) : "form";
    errors[key] = errors[key] ? `${errors[key]}; ${field}: ${issue}` : key === "form" ? `${field}: ${issue}` : issue;
  }
  return errors;
}
