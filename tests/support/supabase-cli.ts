import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT, type RunResult, run } from "./processes.ts";

/** The Supabase CLI from npm (no Docker needed for the database commands used here). */
export const SUPABASE = `${ROOT}node_modules/.bin/supabase`;

/** Runs `supabase <args>` from the repository root; telemetry and update checks off. */
export async function supabase(args: string[], timeoutMs = 120_000): Promise<RunResult> {
  // The CLI (a Bun executable) unpacks a native module into TMPDIR at each start: a directory of its own, removed after.
  const tmp = mkdtempSync(join(tmpdir(), "camp-supabase-"));
  try {
    return await run(
      SUPABASE,
      args,
      { SUPABASE_TELEMETRY_DISABLED: "1", SUPABASE_NO_UPDATE_NOTIFIER: "1", DO_NOT_TRACK: "1", TMPDIR: tmp },
      timeoutMs,
    );
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
