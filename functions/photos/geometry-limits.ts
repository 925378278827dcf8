import { ApiError } from "../errors.ts";
import { MAX_ANIMATION_PIXELS, MAX_PHOTO_FRAMES, MAX_PHOTO_PIXELS, MAX_PHOTO_SIDE } from "./limits.ts";
import type { ImageGeometry } from "./metadata/index.ts";

const tooBig = (message: string, issue: string) => new ApiError("PAYLOAD_TOO_LARGE", message, { field: "photo", issue });

const count = (n: number) => n.toLocaleString("en-US");

/**
 * Refuses (413, naming the photo) an image that would exhaust a browser that
 * shows it, judged from the sizes its headers and frames declare, before
 * anything is stored (limits.ts says why these limits).
 */
export function checkGeometry({ width, height, frames }: ImageGeometry): void {
  const size = `${width} × ${height} pixels`;
  if (width > MAX_PHOTO_SIDE || height > MAX_PHOTO_SIDE) {
    throw tooBig(
      `photos are limited to ${count(MAX_PHOTO_SIDE)} pixels a side; this one is ${size}`,
      `must be at most ${MAX_PHOTO_SIDE} pixels wide and high (is ${size})`,
    );
  }
  if (width * height > MAX_PHOTO_PIXELS) {
    throw tooBig(
      `photos are limited to ${MAX_PHOTO_PIXELS / 1e6} megapixels; this one is ${size}`,
      `must have at most ${MAX_PHOTO_PIXELS} pixels (has ${width * height})`,
    );
  }
  if (frames > MAX_PHOTO_FRAMES) {
    throw tooBig(
      `animated photos are limited to ${count(MAX_PHOTO_FRAMES)} frames; this one has ${count(frames)}`,
      `must have at most ${MAX_PHOTO_FRAMES} frames (has ${frames})`,
    );
  }
  if (width * height * frames > MAX_ANIMATION_PIXELS) {
    throw tooBig(
      `animated photos are limited to ${MAX_ANIMATION_PIXELS / 1e6} megapixels over all frames; this one has ${frames} frames of ${size}`,
      `must have at most ${MAX_ANIMATION_PIXELS} pixels over all frames (has ${width * height * frames})`,
    );
  }
}
