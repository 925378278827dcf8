import { startsWith } from "./in-place.ts";

const ORIENTATION_TAG = 0x0112;

/**
 * The EXIF Orientation (1–8) in an APP1 payload (the bytes after the length
 * field), or undefined. Phones store pictures sideways and rely on this tag, so
 * it is the one EXIF value worth keeping: it says nothing about who or where.
 */
export function readOrientation(payload: Uint8Array): number | undefined {
  if (!startsWith(payload, 0, "Exif\0\0")) return undefined;
  const tiff = 6;
  const little = startsWith(payload, tiff, "II*\0");
  if (!little && !startsWith(payload, tiff, "MM\0*")) return undefined;
  const view = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
  if (payload.length < tiff + 8) return undefined;
  const ifd = tiff + view.getUint32(tiff + 4, little);
  if (ifd + 2 > payload.length) return undefined;
  const count = view.getUint16(ifd, little);
  for (let i = 0; i < count; i++) {
    const entry = ifd + 2 + i * 12;
    if (entry + 12 > payload.length) return undefined;
    if (view.getUint16(entry, little) !== ORIENTATION_TAG) continue;
    // SHORT, one value, stored in the first two bytes of the value field.
    if (view.getUint16(entry + 2, little) !== 3 || view.getUint32(entry + 4, little) !== 1) return undefined;
    const value = view.getUint16(entry + 8, little);
    return value >= 1 && value <= 8 ? value : undefined;
  }
  return undefined;
}

/** A complete APP1 segment (marker included) holding only the Orientation tag: 36 bytes. */
export function orientationSegment(orientation: number): Uint8Array {
  // biome-ignore format: the byte layout reads best one structure per line
  return Uint8Array.from([
    0xff, 0xe1, 0x00, 0x22,                   // APP1, length 34
    0x45, 0x78, 0x69, 0x66, 0x00, 0x00,       // "Exif\0\0"
    0x4d, 0x4d, 0x00, 0x2a, 0, 0, 0, 0x08,    // big-endian TIFF header, IFD0 at 8
    0x00, 0x01,                               // one entry
    0x01, 0x12, 0x00, 0x03, 0, 0, 0, 0x01,    // Orientation, SHORT, count 1
    0x00, orientation, 0x00, 0x00,            // the value
    0, 0, 0, 0,                               // no next IFD
  ]);
}
