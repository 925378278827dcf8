import { randomBytes } from "node:crypto";
import type { Dirent } from "node:fs";
import { access, constants, mkdir, open, readdir, rename, rm, stat } from "node:fs/promises";
import { dirname, join, relative, resolve, sep } from "node:path";
import { Readable } from "node:stream";
import { assertPhotoKey, type PhotoStore, PhotoStoreError, type StoreHealth } from "../functions/photos/store.ts";

const TEMP_SUFFIX = ".tmp";

const isMissing = (error: unknown) => (error as { code?: string }).code === "ENOENT";

function failed(operation: string, error: unknown): PhotoStoreError {
  return new PhotoStoreError(`photo file ${operation} failed: ${(error as Error).message}`, { cause: error });
}

/**
 * Photos as files under a directory (DATA_DIR/photos by default):
 * `<root>/<tenant_id>/<participant_id>/<sha256>.<ext>`. A write goes to a
 * temporary file that is synced and then renamed over the final name, so a
 * reader sees the whole old object or the whole new one, never part of one.
 */
export class FilePhotoStore implements PhotoStore {
  readonly root: string;

  constructor(root: string) {
    this.root = resolve(root);
  }

  private path(key: string): string {
    assertPhotoKey(key);
    return join(this.root, ...key.split("/"));
  }

  /** The content type is not kept: the database row holds it, and serves it. */
  async put(key: string, bytes: Uint8Array, _contentType?: string): Promise<void> {
    const path = this.path(key);
    const temp = `${path}.${randomBytes(6).toString("hex")}${TEMP_SUFFIX}`;
    try {
      await mkdir(dirname(path), { recursive: true, mode: 0o700 });
      const file = await open(temp, "wx", 0o600);
      try {
        await file.writeFile(bytes);
        await file.sync();
      } finally {
        await file.close();
      }
      await rename(temp, path);
    } catch (error) {
      await rm(temp, { force: true }).catch(() => {});
      throw failed("write", error);
    }
  }

  async get(key: string): Promise<ReadableStream<Uint8Array> | undefined> {
    const path = this.path(key);
    try {
      // Open first, so a missing file is an answer here and not an error mid-stream.
      const file = await open(path, "r");
      return Readable.toWeb(file.createReadStream()) as ReadableStream<Uint8Array>;
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw failed("read", error);
    }
  }

  async delete(key: string): Promise<void> {
    const path = this.path(key);
    try {
      // The participant's folder stays: a concurrent upload may be about to write into it.
      await rm(path, { force: true });
    } catch (error) {
      throw failed("delete", error);
    }
  }

  async removeAbandoned(olderThanMs: number, dryRun: boolean): Promise<string[]> {
    const cutoff = Date.now() - olderThanMs;
    const found: string[] = [];
    for await (const path of this.files()) {
      if (!path.endsWith(TEMP_SUFFIX)) continue;
      // A write in progress renames its file within moments; one this old belongs to a process that died.
      const written = await stat(path).then(
        (s) => s.mtimeMs,
        () => Number.POSITIVE_INFINITY,
      );
      if (written >= cutoff) continue;
      if (!dryRun) await rm(path, { force: true });
      found.push(this.keyOf(path));
    }
    return found.sort();
  }

  async list(prefix: string): Promise<string[]> {
    const keys: string[] = [];
    for await (const path of this.files()) {
      if (!path.endsWith(TEMP_SUFFIX)) keys.push(this.keyOf(path));
    }
    return keys.filter((key) => key.startsWith(prefix)).sort();
  }

  /** Every file under the root, temporary ones included; a directory removed meanwhile is skipped. */
  private async *files(dir = this.root): AsyncGenerator<string> {
    let entries: Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (error) {
      if (isMissing(error)) return;
      throw failed("list", error);
    }
    for (const entry of entries) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) yield* this.files(path);
      else yield path;
    }
  }

  private keyOf(path: string): string {
    return relative(this.root, path).split(sep).join("/");
  }

  /** Ok when the directory exists (or can be made) and the service may write in it. */
  async health(): Promise<StoreHealth> {
    try {
      await mkdir(this.root, { recursive: true, mode: 0o700 });
      await access(this.root, constants.R_OK | constants.W_OK);
      return "ok";
    } catch {
      return "misconfigured";
    }
  }
}
