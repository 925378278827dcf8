import { ROOT, type RunResult, run } from "./processes.ts";

/** The Supabase CLI from npm (no Docker needed for the database commands used here). */
export const SUPABASE = `${ROOT}node_modules/.bin/supabase`;

/** Runs `supabase <args>` from the repository root; telemetry and update checks off. */
export function supabase(args: string[], timeoutMs = 120_000): Promise<RunResult> {
  return run(
    SUPABASE,
    args,
    { SUPABASE_TELEMETRY_DISABLED: "1", SUPABASE_NO_UPDATE_NOTIFIER: "1", DO_NOT_TRACK: "1" },
    timeoutMs,
  );
}
