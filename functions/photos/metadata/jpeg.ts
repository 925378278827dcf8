import { orientationSegment, readOrientation } from "./exif-orientation.ts";
import { GeometryCollector, type StrippedImage } from "./geometry.ts";
import { InPlaceWriter, InvalidImageError, startsWith, u16be } from "./in-place.ts";

const SOI = 0xd8;
const EOI = 0xd9;
const SOS = 0xda;
const APP0 = 0xe0;
const APP1 = 0xe1;
const APP2 = 0xe2;
const APP14 = 0xee;
const APP15 = 0xef;
const COM = 0xfe;

const invalid = (reason: string) => new InvalidImageError("JPEG", reason);

/** Start-of-frame markers (every coding process); C4, C8 and CC are other segments. */
const isStartOfFrame = (marker: number) =>
  marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;

/**
 * Which marker segments may stay. Everything an application writes (APPn, COM)
 * goes, except what decoding needs: the JFIF header, an ICC colour profile and
 * Adobe's colour-transform flag. That removes EXIF (GPS, camera, time) and XMP
 * (APP1), Photoshop/IPTC (APP13), MPF (APP2, which points at further images
 * carrying their own EXIF) and comments.
 */
function keepSegment(marker: number, payload: Uint8Array): boolean {
  if (marker === COM) return false;
  if (marker < APP0 || marker > APP15) return true;
  if (marker === APP0) return startsWith(payload, 0, "JFIF\0");
  if (marker === APP2) return startsWith(payload, 0, "ICC_PROFILE\0");
  if (marker === APP14) return startsWith(payload, 0, "Adobe");
  return false;
}

/** The offset of the marker that ends an entropy-coded scan starting at `from`. */
function endOfScan(bytes: Uint8Array, from: number): number {
  let at = from;
  for (;;) {
    at = bytes.indexOf(0xff, at);
    if (at < 0 || at + 1 >= bytes.length) throw invalid("ends inside image data");
    const next = bytes[at + 1] as number;
    // 0xFF00 is an escaped data byte and 0xFFD0–D7 are restart markers: both belong to the scan.
    if (next === 0x00 || (next >= 0xd0 && next <= 0xd7)) {
      at += 2;
      continue;
    }
    return at;
  }
}

/**
 * Removes metadata from a JPEG without touching the compressed image: the kept
 * segments are copied byte for byte, in place. Anything after the end-of-image
 * marker (trailers, appended preview images) is dropped; the EXIF orientation
 * is kept as a minimal EXIF segment so the photo still displays upright.
 * The size is the frame header's. Returns a view of `bytes`, which it overwrites.
 */
export function stripJpeg(bytes: Uint8Array): StrippedImage {
  if (bytes[0] !== 0xff || bytes[1] !== SOI) throw invalid("no start-of-image marker");
  const geometry = new GeometryCollector();
  let framed = false;
  const out = new InPlaceWriter(bytes);
  out.keep(0, 2);
  let pos = 2;
  let orientationKept = false;

  for (;;) {
    if (bytes[pos] !== 0xff) throw invalid(pos >= bytes.length ? "no end-of-image marker" : "expected a marker");
    while (bytes[pos] === 0xff) pos++; // fill bytes may precede a marker
    const marker = bytes[pos];
    pos++;
    if (marker === undefined) throw invalid("no end-of-image marker");
    if (marker === EOI) {
      if (!framed) throw invalid("no frame header");
      out.keep(pos - 2, pos);
      return geometry.result(out.result());
    }
    if (marker === SOI || marker === 0x00) throw invalid("unexpected marker");
    if (marker >= 0xd0 && marker <= 0xd7) {
      out.keep(pos - 2, pos);
      continue;
    }
    const length = u16be(bytes, pos);
    const end = pos + length;
    if (length < 2 || end > bytes.length) throw invalid("a segment runs past the end of the file");
    const payload = bytes.subarray(pos + 2, end);
    if (isStartOfFrame(marker)) {
      // A height of 0 defers it to a DNL marker, which browsers' decoders do not support.
      if (payload.length < 5 || u16be(payload, 1) === 0) throw invalid("a frame header has no size");
      geometry.extent(u16be(payload, 3), u16be(payload, 1));
      framed = true;
    }

    if (keepSegment(marker, payload)) {
      out.keep(pos - 2, end);
    } else if (marker === APP1 && !orientationKept) {
      // The EXIF segment is replaced, where it stood, by one holding only the
      // orientation; that one (36 bytes) is never longer than what it replaces.
      const orientation = readOrientation(payload);
      const segment = orientation !== undefined && orientation !== 1 ? orientationSegment(orientation) : undefined;
      if (segment && end - (pos - 2) >= segment.length) {
        out.write(segment, end);
        orientationKept = true;
      }
    }
    pos = end;

    if (marker === SOS) {
      const scanEnd = endOfScan(bytes, pos);
      out.keep(pos, scanEnd);
      pos = scanEnd;
    }
  }
}
