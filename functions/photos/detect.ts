import { isPhotoType, type PhotoType } from "./limits.ts";

/**
 * The photo's type from its bytes (magic numbers), never from the file name
 * or the declared Content-Type. An animated PNG is a PNG. Undefined for
 * anything that is not one of the four accepted types.
 */
export async function detectPhotoType(bytes: Uint8Array): Promise<PhotoType | undefined> {
  // Loaded on first use: only photo uploads need it, and it stays out of the Edge Function's cold start.
  const { fileTypeFromBuffer } = await import("file-type/core");
  const detected = await fileTypeFromBuffer(bytes);
  if (!detected) return undefined;
  const mime = detected.mime === "image/apng" ? "image/png" : detected.mime;
  return isPhotoType(mime) ? mime : undefined;
}
