/**
 * Whether a suite that needs a tool of the machine may run: the tool is there,
 * or this is CI, which installs it and must run the suite (a missing tool then
 * fails it). Anywhere else a missing tool skips the suite, and says so on
 * stderr with what would bring it, so a green run on a developer's machine
 * does not hide what it did not check.
 */
export function canRun(present: boolean, suite: string, remedy: string): boolean {
  if (present || process.env.CI === "true") return true;
  console.warn(`SKIPPED ${suite}: ${remedy}`);
  return false;
}

/** The name of a suite that `canRun` may skip: the reason stays with it in a verbose report. */
export const named = (suite: string, runs: boolean, remedy: string) => (runs ? suite : `${suite} (skipped: ${remedy})`);
