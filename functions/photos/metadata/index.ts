import type { PhotoType } from "../limits.ts";
import type { StrippedImage } from "./geometry.ts";
import { stripGif } from "./gif.ts";
import { stripJpeg } from "./jpeg.ts";
import { stripPng } from "./png.ts";
import { stripWebp } from "./webp.ts";

export type { ImageGeometry, StrippedImage } from "./geometry.ts";
export { InvalidImageError } from "./in-place.ts";

const STRIPPERS: Record<PhotoType, (bytes: Uint8Array) => StrippedImage> = {
  "image/jpeg": stripJpeg,
  "image/png": stripPng,
  "image/gif": stripGif,
  "image/webp": stripWebp,
};

/**
 * The photo without its metadata (EXIF, GPS, XMP, IPTC, comments), pixels
 * untouched, and its geometry (canvas and frames), read in the same walk over
 * its structure. Works in place: the result's bytes are a view of `bytes`,
 * which is overwritten. Throws InvalidImageError when the file's structure
 * cannot be followed, so nothing unstripped is ever stored.
 */
export function stripMetadata(bytes: Uint8Array, type: PhotoType): StrippedImage {
  return STRIPPERS[type](bytes);
}
