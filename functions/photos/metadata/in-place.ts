/** An image whose structure cannot be followed: it is refused rather than stored unstripped. */
export class InvalidImageError extends Error {
  constructor(
    readonly format: string,
    reason: string,
  ) {
    super(`not a valid ${format}: ${reason}`);
    this.name = "InvalidImageError";
  }
}

/**
 * Rewrites a buffer in place, keeping byte ranges in their order. Stripping
 * only ever removes bytes, so the write position never passes the read
 * position and no second buffer of up to 5 MB is needed per upload.
 */
export class InPlaceWriter {
  private length = 0;

  constructor(private readonly bytes: Uint8Array) {}

  /** Where the next kept byte will land. */
  get position(): number {
    return this.length;
  }

  /** Keeps `bytes[start, end)`; `start` must not lie before the write position. */
  keep(start: number, end: number): void {
    if (start < this.length) throw new Error("InPlaceWriter: ranges must not go backwards");
    if (start !== this.length) this.bytes.copyWithin(this.length, start, end);
    this.length += end - start;
  }

  /** Writes new bytes; only safe where the bytes they replace have been read already. */
  write(data: Uint8Array, readPosition: number): void {
    if (this.length + data.length > readPosition) throw new Error("InPlaceWriter: write would overtake the reader");
    this.bytes.set(data, this.length);
    this.length += data.length;
  }

  result(): Uint8Array {
    return this.bytes.subarray(0, this.length);
  }
}

export const u16be = (b: Uint8Array, at: number) => ((b[at] ?? 0) << 8) | (b[at + 1] ?? 0);
export const u32be = (b: Uint8Array, at: number) =>
  (((b[at] ?? 0) << 24) >>> 0) + (((b[at + 1] ?? 0) << 16) | ((b[at + 2] ?? 0) << 8) | (b[at + 3] ?? 0));
export const u16le = (b: Uint8Array, at: number) => (b[at] ?? 0) | ((b[at + 1] ?? 0) << 8);
export const u24le = (b: Uint8Array, at: number) => (b[at] ?? 0) | ((b[at + 1] ?? 0) << 8) | ((b[at + 2] ?? 0) << 16);
export const u32le = (b: Uint8Array, at: number) =>
  (((b[at + 3] ?? 0) << 24) >>> 0) + (((b[at + 2] ?? 0) << 16) | ((b[at + 1] ?? 0) << 8) | (b[at] ?? 0));

export function ascii(b: Uint8Array, start: number, length: number): string {
  let text = "";
  for (let i = start; i < start + length && i < b.length; i++) text += String.fromCharCode(b[i] ?? 0);
  return text;
}

export function startsWith(b: Uint8Array, at: number, text: string): boolean {
  return ascii(b, at, text.length) === text;
}
