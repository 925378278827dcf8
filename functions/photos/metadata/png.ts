import { ascii, InPlaceWriter, InvalidImageError, u32be } from "./in-place.ts";

const SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

/**
 * Ancillary chunks that change how the picture looks (transparency, colour,
 * pixel size, animation). All others go: eXIf, tEXt, zTXt, iTXt (where XMP
 * lives), tIME and any private chunk an application added.
 */
const KEPT_ANCILLARY = new Set([
  "tRNS",
  "cHRM",
  "gAMA",
  "iCCP",
  "sBIT",
  "sRGB",
  "cICP",
  "mDCv",
  "cLLi",
  "bKGD",
  "hIST",
  "pHYs",
  "sPLT",
  "acTL",
  "fcTL",
  "fdAT",
]);

const invalid = (reason: string) => new InvalidImageError("PNG", reason);

/** A chunk is critical when the first letter of its type is upper case; decoders need every one of those. */
const isCritical = (type: string) => type.charCodeAt(0) < 0x61;

/**
 * Removes metadata chunks from a PNG (or APNG), in place, copying the kept
 * chunks byte for byte with their CRCs; nothing after IEND is kept.
 * Returns a view of `bytes`, which it overwrites.
 */
export function stripPng(bytes: Uint8Array): Uint8Array {
  if (!SIGNATURE.every((b, i) => bytes[i] === b)) throw invalid("no PNG signature");
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
    if (isCritical(type) || KEPT_ANCILLARY.has(type)) out.keep(pos, end);
    if (type === "IEND") return out.result();
    pos = end;
  }
  throw invalid("no IEND chunk");
}
