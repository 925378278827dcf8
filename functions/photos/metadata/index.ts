import type { PhotoType } from "../limits.ts";
import { stripGif } from "./gif.ts";
import { stripJpeg } from "./jpeg.ts";
import { stripPng } from "./png.ts";
import { stripWebp } from "./webp.ts";

export { InvalidImageError } from "./in-place.ts";

const STRIPPERS: Record<PhotoType, (bytes: Uint8Array) => Uint8Array> = {
  "image/jpeg": stripJpeg,
  "image/png": stripPng,
  "image/gif": stripGif,
  "image/webp": stripWebp,
};

/**
 * The photo without its metadata (EXIF, GPS, XMP, IPTC, comments), pixels
 * untouched. Works in place: the result is a view of `bytes`, which is
 * overwritten. Throws InvalidImageError when the file's structure cannot be
 * followed, so nothing unstripped is ever stored.
 */
export function stripMetadata(bytes: Uint8Array, type: PhotoType): Uint8Array {
  return STRIPPERS[type](bytes);
}
