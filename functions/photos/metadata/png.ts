import { GeometryCollector, type StrippedImage } from "./geometry.ts";
import { ascii, InPlaceWriter, InvalidImageError, u32be } from "./in-place.ts";

const SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

/**
 * The only chunks kept: the four critical chunks of the standard and the
 * ancillary ones that change how a browser shows the picture (transparency,
 * colour, pixel aspect, animation). Everything else goes, whatever the case
 * of its name: eXIf, tEXt, zTXt, iTXt (where XMP lives), tIME, and any chunk
 * an application made up, an upper-case `EXIF` included (its name says
 * "critical", but no decoder knows it, so it can only be someone's data).
 * Also gone, though defined: bKGD, sBIT, hIST and sPLT, which browsers do not
 * use (sPLT carries a free-text name).
 */
const KEPT = new Set([
  "IHDR",
  "PLTE",
  "IDAT",
  "IEND",
  "tRNS",
  "gAMA",
  "cHRM",
  "sRGB",
  "iCCP",
  "cICP",
  "mDCv",
  "cLLi",
  "pHYs",
  "acTL",
  "fcTL",
  "fdAT",
]);

const invalid = (reason: string) => new InvalidImageError("PNG", reason);

/**
 * Removes metadata chunks from a PNG (or APNG), in place, copying the kept
 * chunks byte for byte with their CRCs; nothing after IEND is kept. The
 * canvas is IHDR's, grown to any animation frame reaching past it; the frame
 * count is the larger of the frames found and those acTL announces.
 * Returns a view of `bytes`, which it overwrites.
 */
export function stripPng(bytes: Uint8Array): StrippedImage {
  if (!SIGNATURE.every((b, i) => bytes[i] === b)) throw invalid("no PNG signature");
  const geometry = new GeometryCollector();
  const out = new InPlaceWriter(bytes);
  out.keep(0, SIGNATURE.length);
  let pos = SIGNATURE.length;
  let first = true;

  while (pos + 12 <= bytes.length) {
    const length = u32be(bytes, pos);
    const type = ascii(bytes, pos + 4, 4);
    const end = pos + 12 + length;
    if (end > bytes.length) throw invalid(`the ${type} chunk runs past the end of the file`);
    if (first && type !== "IHDR") throw invalid("the first chunk is not IHDR");
    first = false;
    const data = pos + 8;
    if (type === "IHDR") geometry.extent(u32be(bytes, data), u32be(bytes, data + 4));
    if (type === "acTL") geometry.announce(u32be(bytes, data));
    if (type === "fcTL") {
      // sequence, width, height, x offset, y offset
      geometry.frame();
      geometry.extent(u32be(bytes, data + 12) + u32be(bytes, data + 4), u32be(bytes, data + 16) + u32be(bytes, data + 8));
    }
    if (KEPT.has(type)) out.keep(pos, end);
    if (type === "IEND") return geometry.result(out.result());
    pos = end;
  }
  throw invalid("no IEND chunk");
}
