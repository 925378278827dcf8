/**
 * What a browser must decode to show an image: its canvas (the largest extent
 * any header or frame claims, since decoders grow the canvas to a frame that
 * reaches past the declared size) and how many frames it animates.
 */
export interface ImageGeometry {
  width: number;
  height: number;
  frames: number;
}

/** A stripped image: the bytes to store (a view of the input) and what they decode to. */
export interface StrippedImage {
  bytes: Uint8Array;
  geometry: ImageGeometry;
}

/** Collects an image's geometry as a stripper walks its structure. */
export class GeometryCollector {
  private width = 0;
  private height = 0;
  private frameCount = 0;
  private claimedFrames = 0;

  /** A header or frame that covers `[0, right) × [0, bottom)`. */
  extent(right: number, bottom: number): void {
    this.width = Math.max(this.width, right);
    this.height = Math.max(this.height, bottom);
  }

  /** One more frame found in the file. */
  frame(): void {
    this.frameCount++;
  }

  /** A frame count the file announces (APNG's acTL): counted even when fewer frames follow. */
  announce(frames: number): void {
    this.claimedFrames = Math.max(this.claimedFrames, frames);
  }

  result(bytes: Uint8Array): StrippedImage {
    return {
      bytes,
      geometry: { width: this.width, height: this.height, frames: Math.max(1, this.frameCount, this.claimedFrames) },
    };
  }
}
