import { readFile } from "node:fs/promises";

/** The guides /docs links to, read from the checkout's docs/ at each request (an edit shows at once). */
export async function readGuide(file: string): Promise<string | undefined> {
  try {
    return await readFile(new URL(`../docs/${file}`, import.meta.url), "utf8");
  } catch {
    return undefined;
  }
}
