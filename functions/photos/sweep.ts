import type { Database } from "../db/database.ts";
import { uploadLock } from "./data.ts";
import type { PhotoStore } from "./store.ts";

export interface SweepOptions {
  /** List what would be deleted, delete nothing. */
  dryRun?: boolean;
  /** Photos of participants soft-deleted longer ago than this many days go too. */
  olderThanDays: number;
  /** Called after each object is looked at, for a progress bar. */
  onProgress?: (done: number, total: number) => void;
}

export interface SweepReport {
  listed: number;
  kept: number;
  /** Objects no row points at: replacements whose delete failed, uploads that never committed. */
  orphaned: string[];
  /** Photos of participants deleted longer than the retention period ago. */
  expired: string[];
  /** Partial writes of crashed uploads (a file store's temporary files), by path. */
  abandoned: string[];
  deleted: number;
  failed: Array<{ key: string; error: string }>;
  dry_run: boolean;
}

/** An upload intent older than this is a crashed upload, not one in progress. */
const UPLOAD_INTENT_HOURS = 24;
/** A temporary file is renamed into place within moments of being written; one an hour old is a crashed write's. */
const ABANDONED_WRITE_MS = 3_600_000;

/**
 * Deletes the photo objects no live participant points at. Safe beside a
 * running server: the store is listed first, then the rows and the uploads
 * in progress are read in one snapshot, so any object the listing saw is
 * either claimed by an upload intent or by the row that committed it (see
 * sql/migrations/*_photo_uploads.sql). Rows of participants deleted longer
 * ago than the retention keep their photo_key; the API never serves it.
 */
export async function sweepPhotos(db: Database, store: PhotoStore, options: SweepOptions): Promise<SweepReport> {
  const listed = await store.list("");
  const rows = await db.asOwner((sql) =>
    sql.query<{ key: string; live: boolean }>(
      `select photo_key as key, deleted_at is null or deleted_at > now() - make_interval(days => $1) as live
       from public.participants where photo_key is not null
       union all
       select key, true from public.photo_uploads where started_at > now() - make_interval(hours => $2)`,
      [options.olderThanDays, UPLOAD_INTENT_HOURS],
    ),
  );
  const live = new Set(rows.filter((r) => r.live).map((r) => r.key));
  const known = new Set(rows.map((r) => r.key));
  const orphaned = listed.filter((key) => !known.has(key));
  const expired = listed.filter((key) => known.has(key) && !live.has(key));

  const report: SweepReport = {
    listed: listed.length,
    kept: listed.length - orphaned.length - expired.length,
    orphaned,
    expired,
    abandoned: (await store.removeAbandoned?.(ABANDONED_WRITE_MS, Boolean(options.dryRun))) ?? [],
    deleted: 0,
    failed: [],
    dry_run: Boolean(options.dryRun),
  };
  if (!options.dryRun) {
    await db.asOwner((sql) =>
      sql.query("delete from public.photo_uploads where started_at <= now() - make_interval(hours => $1)", [UPLOAD_INTENT_HOURS]),
    );
  }
  const doomed = [...orphaned, ...expired];
  for (const [i, key] of doomed.entries()) {
    try {
      const remove = options.dryRun ? async () => {} : () => store.delete(key);
      if (await removeUnclaimed(db, key, options.olderThanDays, remove)) {
        if (!options.dryRun) report.deleted++;
      } else {
        // An upload of it is in progress, or has just committed: it is no orphan.
        report.orphaned = report.orphaned.filter((k) => k !== key);
        report.expired = report.expired.filter((k) => k !== key);
        report.kept++;
      }
    } catch (error) {
      report.failed.push({ key, error: (error as Error).message });
    }
    options.onProgress?.(i + 1, doomed.length);
  }
  return report;
}

/**
 * Deletes the object (`remove`) unless an upload of it is in progress (its transaction
 * holds the key's lock: an intent not yet committed, as under an
 * Idempotency-Key) or a row claims it now. Decided and done under the key's
 * lock, so no upload of it can commit in between.
 */
async function removeUnclaimed(db: Database, key: string, olderThanDays: number, remove: () => Promise<void>): Promise<boolean> {
  return db.asOwner(async (sql) => {
    const lock = await sql.one<{ free: boolean }>(`select pg_try_advisory_xact_lock(${uploadLock("$1")}) as free`, [key]);
    if (!lock?.free) return false;
    // A statement of its own, so its snapshot is taken with the lock held: it sees an upload that just committed.
    const claim = await sql.one<{ claimed: boolean }>(
      `select exists (select from public.participants
                      where photo_key = $1 and (deleted_at is null or deleted_at > now() - make_interval(days => $2)))
              or exists (select from public.photo_uploads where key = $1 and started_at > now() - make_interval(hours => $3))
              as claimed`,
      [key, olderThanDays, UPLOAD_INTENT_HOURS],
    );
    if (claim?.claimed) return false;
    await remove();
    return true;
  });
}
