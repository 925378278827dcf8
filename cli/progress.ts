import cliProgress from "cli-progress";

/**
 * A progress bar on stderr, so stdout stays clean for JSON. It draws only on a
 * terminal: piped or redirected, stderr gets just the commands' own messages.
 */
export function progressBar(task: string): cliProgress.SingleBar {
  return new cliProgress.SingleBar(
    {
      stream: process.stderr,
      format: `${task} [{bar}] {value}/{total} {item}`,
      hideCursor: true,
      clearOnComplete: false,
      etaBuffer: 50,
    },
    cliProgress.Presets.shades_classic,
  );
}
