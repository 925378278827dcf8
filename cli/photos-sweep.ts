import type { Config } from "../functions/config.ts";
import type { Database } from "../functions/db/database.ts";
import { type SweepReport, sweepPhotos } from "../functions/photos/sweep.ts";
import { configuredPhotoStore } from "../node/runtime.ts";
import { progressBar } from "./progress.ts";

export interface SweepCliOptions {
  dryRun?: boolean;
  olderThan: number;
}

/** `camp photos sweep`: the configured store's orphaned and expired photos, with a progress bar on stderr. */
export async function sweepFromCli(db: Database, config: Config, options: SweepCliOptions): Promise<SweepReport> {
  const store = configuredPhotoStore(config);
  const bar = progressBar(options.dryRun ? "checking" : "deleting");
  let started = false;
  try {
    return await sweepPhotos(db, store, {
      dryRun: options.dryRun,
      olderThanDays: options.olderThan,
      onProgress: (done, total) => {
        if (!started) bar.start(total, 0, { item: "" });
        started = true;
        bar.update(done);
      },
    });
  } finally {
    if (started) bar.stop();
  }
}
