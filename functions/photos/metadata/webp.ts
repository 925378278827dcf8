import { GeometryCollector, type StrippedImage } from "./geometry.ts";
import { ascii, InPlaceWriter, InvalidImageError, startsWith, u16le, u24le, u32le } from "./in-place.ts";

/** The chunks a WebP decoder uses; EXIF, "XMP " and unknown chunks are dropped. */
const KEPT = new Set(["VP8 ", "VP8L", "VP8X", "ALPH", "ANIM", "ANMF", "ICCP"]);

// VP8X feature flags that announce the dropped chunks.
const EXIF_FLAG = 0x08;
const XMP_FLAG = 0x04;

const invalid = (reason: string) => new InvalidImageError("WebP", reason);

/**
 * The sizes a top-level chunk declares (its data starting at `data`): the
 * extended header's canvas, a still image's bitstream header, an animation
 * frame's rectangle (offsets are stored halved, sizes minus one).
 */
function readGeometry(bytes: Uint8Array, type: string, data: number, geometry: GeometryCollector): void {
  if (type === "VP8X") geometry.extent(u24le(bytes, data + 4) + 1, u24le(bytes, data + 7) + 1);
  // A key frame: 3-byte frame tag, start code, then 14-bit width and height.
  if (type === "VP8 ") geometry.extent(u16le(bytes, data + 6) & 0x3fff, u16le(bytes, data + 8) & 0x3fff);
  if (type === "VP8L") {
    // After the 0x2f signature: 14 bits of width - 1, then 14 bits of height - 1.
    const bits = u32le(bytes, data + 1);
    geometry.extent((bits & 0x3fff) + 1, ((bits >>> 14) & 0x3fff) + 1);
  }
  if (type === "ANMF") {
    geometry.frame();
    geometry.extent(2 * u24le(bytes, data) + u24le(bytes, data + 6) + 1, 2 * u24le(bytes, data + 3) + u24le(bytes, data + 9) + 1);
  }
}

/**
 * Removes EXIF and XMP chunks from a WebP, in place, without touching the
 * image data, then clears their VP8X flags and rewrites the RIFF size so the
 * file stays valid. Anything after the RIFF container is dropped.
 * Returns a view of `bytes`, which it overwrites.
 */
export function stripWebp(bytes: Uint8Array): StrippedImage {
  if (!startsWith(bytes, 0, "RIFF") || !startsWith(bytes, 8, "WEBP")) throw invalid("no RIFF/WEBP header");
  const riffEnd = 8 + u32le(bytes, 4);
  if (riffEnd > bytes.length) throw invalid("the RIFF size exceeds the file");
  const out = new InPlaceWriter(bytes);
  out.keep(0, 12);
  let pos = 12;
  let vp8xAt: number | undefined;
  let imageChunks = 0;
  const geometry = new GeometryCollector();

  while (pos < riffEnd) {
    if (pos + 8 > riffEnd) throw invalid("a chunk header runs past the RIFF size");
    const type = ascii(bytes, pos, 4);
    const size = u32le(bytes, pos + 4);
    // Chunks are padded to an even size; a missing pad on the last one is tolerated.
    const end = Math.min(pos + 8 + size + (size & 1), riffEnd);
    if (pos + 8 + size > riffEnd) throw invalid(`the ${type.trim()} chunk runs past the RIFF size`);
    readGeometry(bytes, type, pos + 8, geometry);
    if (KEPT.has(type)) {
      if (type === "VP8X") vp8xAt = out.position;
      if (type === "VP8 " || type === "VP8L" || type === "ANMF") imageChunks++;
      out.keep(pos, end);
    }
    pos = end;
  }
  if (imageChunks === 0) throw invalid("no image data");

  const result = out.result();
  if (vp8xAt !== undefined) {
    const flags = vp8xAt + 8;
    result[flags] = (result[flags] ?? 0) & ~(EXIF_FLAG | XMP_FLAG);
  }
  new DataView(result.buffer, result.byteOffset, result.byteLength).setUint32(4, result.length - 8, true);
  return geometry.result(result);
}
