import { toApiError } from "../functions/http/error-handler.ts";
import { buildProgram } from "./program.ts";

/** The `camp` executable's body: the commands are in program.ts, which tests read without running anything. */
export async function main(argv = process.argv): Promise<void> {
  try {
    await buildProgram().parseAsync(argv);
  } catch (error) {
    const apiError = toApiError(error);
    const text = apiError.code !== "INTERNAL_ERROR" ? apiError.message : error instanceof Error ? error.message : String(error);
    // Exit only once the message is flushed: stderr may be a pipe.
    process.stderr.write(`camp: ${text}\n`, () => process.exit(1));
  }
}

await main();
