import { GeometryCollector, type StrippedImage } from "./geometry.ts";
import { InPlaceWriter, InvalidImageError, startsWith, u16le } from "./in-place.ts";

const IMAGE = 0x2c;
const EXTENSION = 0x21;
const TRAILER = 0x3b;
const GRAPHIC_CONTROL = 0xf9;
const PLAIN_TEXT = 0x01;
const APPLICATION = 0xff;

const invalid = (reason: string) => new InvalidImageError("GIF", reason);

/** Application extensions that animation needs (loop count); others (XMP, private data) go. */
const KEPT_APPLICATIONS = ["NETSCAPE2.0", "ANIMEXTS1.0"];

/** The end of a run of data sub-blocks starting at `at` (after its zero terminator). */
function skipSubBlocks(bytes: Uint8Array, at: number): number {
  let pos = at;
  for (;;) {
    const size = bytes[pos];
    if (size === undefined) throw invalid("ends inside a block");
    pos += 1 + size;
    if (size === 0) return pos;
  }
}

/** Size of a colour table announced by a packed flags byte, or 0. */
const colourTable = (packed: number) => (packed & 0x80 ? 3 * 2 ** ((packed & 0x07) + 1) : 0);

/**
 * Removes comment extensions and foreign application extensions (XMP among
 * them) from a GIF, in place; image data, palettes, frame timing and looping
 * are copied byte for byte. Nothing after the trailer is kept. Each image
 * descriptor is a frame; the canvas is the logical screen grown to any frame
 * reaching past it. Returns a view of `bytes`, which it overwrites.
 */
export function stripGif(bytes: Uint8Array): StrippedImage {
  if (!startsWith(bytes, 0, "GIF87a") && !startsWith(bytes, 0, "GIF89a")) throw invalid("no GIF header");
  if (bytes.length < 13) throw invalid("no logical screen descriptor");
  const geometry = new GeometryCollector();
  geometry.extent(u16le(bytes, 6), u16le(bytes, 8));
  const out = new InPlaceWriter(bytes);
  let pos = 13 + colourTable(bytes[10] ?? 0);
  out.keep(0, pos);

  for (;;) {
    const block = bytes[pos];
    if (block === TRAILER) {
      out.keep(pos, pos + 1);
      return geometry.result(out.result());
    }
    if (block === IMAGE) {
      geometry.frame();
      geometry.extent(u16le(bytes, pos + 1) + u16le(bytes, pos + 5), u16le(bytes, pos + 3) + u16le(bytes, pos + 7));
      const descriptorEnd = pos + 10 + colourTable(bytes[pos + 9] ?? 0);
      const end = skipSubBlocks(bytes, descriptorEnd + 1); // +1: the LZW minimum code size
      if (end > bytes.length) throw invalid("an image runs past the end of the file");
      out.keep(pos, end);
      pos = end;
    } else if (block === EXTENSION) {
      const label = bytes[pos + 1];
      const end = skipSubBlocks(bytes, pos + 2);
      if (end > bytes.length) throw invalid("an extension runs past the end of the file");
      const keep =
        label === GRAPHIC_CONTROL ||
        label === PLAIN_TEXT ||
        (label === APPLICATION && bytes[pos + 2] === 11 && KEPT_APPLICATIONS.some((id) => startsWith(bytes, pos + 3, id)));
      if (keep) out.keep(pos, end);
      pos = end;
    } else {
      throw invalid(block === undefined ? "no trailer" : "unknown block");
    }
  }
}
