import { crc32, deflateSync } from "node:zlib";
import sharp from "sharp";

/**
 * Real images for the photo tests, made with sharp (libvips) so that they are
 * what cameras and editors produce, plus helpers that splice extra metadata
 * segments and chunks into them.
 */

/** Seconds of latitude 43.21″ as an EXIF rational (4321/100): findable in the bytes, in either byte order. */
export const GPS_BYTES = [Buffer.from([0, 0, 0x10, 0xe1, 0, 0, 0, 0x64]), Buffer.from([0xe1, 0x10, 0, 0, 0x64, 0, 0, 0])];

export const GPS_EXIF = {
  IFD0: { ImageDescription: "SECRET-DESCRIPTION", Make: "SECRET-CAMERA" },
  IFD3: { GPSLatitudeRef: "N", GPSLatitude: "51/1 30/1 4321/100", GPSLongitudeRef: "W", GPSLongitude: "0/1 7/1 3906/100" },
};

export const XMP =
  '<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">' +
  '<rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:creator>SECRET-XMP</dc:creator>' +
  "</rdf:Description></rdf:RDF></x:xmpmeta>";

/** Marker strings the metadata above and the helpers below plant; none may survive stripping. */
export const SECRETS = ["SECRET-DESCRIPTION", "SECRET-CAMERA", "SECRET-XMP", "SECRET-COMMENT", "SECRET-IPTC", "SECRET-TEXT"];

export function leaks(bytes: Uint8Array): string[] {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const found = SECRETS.filter((secret) => buffer.includes(secret));
  if (GPS_BYTES.some((gps) => buffer.includes(gps))) found.push("GPS");
  if (buffer.includes("Exif\0\0")) found.push("EXIF");
  if (buffer.includes("eXIf")) found.push("eXIf");
  if (buffer.includes("http://ns.adobe.com/xap/1.0/")) found.push("XMP packet");
  return found;
}

/** A small picture with some structure (a gradient), so a damaged decode would show. */
export function picture(width = 48, height = 32) {
  const pixels = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const at = (y * width + x) * 3;
      pixels[at] = (x * 5) & 0xff;
      pixels[at + 1] = (y * 7) & 0xff;
      pixels[at + 2] = ((x + y) * 3) & 0xff;
    }
  }
  return sharp(pixels, { raw: { width, height, channels: 3 } });
}

export type Format = "jpeg" | "png" | "gif" | "webp";

/** An image of the format, optionally carrying EXIF with GPS and an XMP packet (GIF: libvips writes none). */
export async function image(format: Format, options: { metadata?: boolean; orientation?: number } = {}): Promise<Buffer> {
  let pipeline = picture();
  if (options.metadata) {
    pipeline = pipeline.withExif(GPS_EXIF).withXmp(XMP);
  }
  if (options.orientation) pipeline = pipeline.withMetadata({ orientation: options.orientation });
  if (format === "webp") return pipeline.webp({ lossless: true }).toBuffer();
  return pipeline[format]().toBuffer();
}

/** Decoded RGBA pixels: equal before and after stripping, since no pixel data is touched. */
export async function pixels(bytes: Uint8Array, options: { animated?: boolean } = {}): Promise<Buffer> {
  return sharp(bytes, { animated: options.animated ?? false })
    .ensureAlpha()
    .raw()
    .toBuffer();
}

// --- JPEG --------------------------------------------------------------------

export function jpegSegment(marker: number, payload: Buffer | string): Buffer {
  const data = typeof payload === "string" ? Buffer.from(payload, "latin1") : payload;
  const header = Buffer.from([0xff, marker, 0, 0]);
  header.writeUInt16BE(data.length + 2, 2);
  return Buffer.concat([header, data]);
}

/** Inserts segments right after the start-of-image marker. */
export function withJpegSegments(jpeg: Buffer, ...segments: Buffer[]): Buffer {
  return Buffer.concat([jpeg.subarray(0, 2), ...segments, jpeg.subarray(2)]);
}

/** Inserts segments right before the end-of-image marker (after the last scan). */
export function withJpegSegmentsAtEnd(jpeg: Buffer, ...segments: Buffer[]): Buffer {
  return Buffer.concat([jpeg.subarray(0, jpeg.length - 2), ...segments, jpeg.subarray(jpeg.length - 2)]);
}

export const COMMENT_SEGMENT = jpegSegment(0xfe, "SECRET-COMMENT");
export const IPTC_SEGMENT = jpegSegment(
  0xed,
  "Photoshop 3.0\u00008BIM\u0004\u0004\u0000\u0000\u0000\u0000\u0000\u0010SECRET-IPTC",
);

// --- PNG ---------------------------------------------------------------------

export function pngChunk(type: string, data: Buffer | string): Buffer {
  const body = Buffer.concat([Buffer.from(type, "latin1"), typeof data === "string" ? Buffer.from(data, "latin1") : data]);
  const length = Buffer.alloc(4);
  length.writeUInt32BE(body.length - 4);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body) >>> 0);
  return Buffer.concat([length, body, crc]);
}

/** Inserts chunks right after IHDR (signature 8 bytes, IHDR 25). */
export function withPngChunks(png: Buffer, ...chunks: Buffer[]): Buffer {
  return Buffer.concat([png.subarray(0, 33), ...chunks, png.subarray(33)]);
}

/** The chunk types of a PNG, in order. */
export function pngChunkTypes(png: Uint8Array): string[] {
  const buffer = Buffer.from(png.buffer, png.byteOffset, png.byteLength);
  const types: string[] = [];
  for (let at = 8; at + 8 <= buffer.length; at += 12 + buffer.readUInt32BE(at)) {
    types.push(buffer.toString("latin1", at + 4, at + 8));
  }
  return types;
}

// --- WebP --------------------------------------------------------------------

/** The chunk types of a WebP, in order. */
export function webpChunkTypes(webp: Uint8Array): string[] {
  const buffer = Buffer.from(webp.buffer, webp.byteOffset, webp.byteLength);
  const types: string[] = [];
  for (let at = 12; at + 8 <= buffer.length; ) {
    const size = buffer.readUInt32LE(at + 4);
    types.push(buffer.toString("latin1", at, at + 4));
    at += 8 + size + (size & 1);
  }
  return types;
}

// --- GIF ---------------------------------------------------------------------

function subBlocks(data: Buffer): Buffer {
  const parts: Buffer[] = [];
  for (let at = 0; at < data.length; at += 255) {
    const piece = data.subarray(at, at + 255);
    parts.push(Buffer.from([piece.length]), piece);
  }
  parts.push(Buffer.from([0]));
  return Buffer.concat(parts);
}

export const GIF_COMMENT = Buffer.concat([Buffer.from([0x21, 0xfe]), subBlocks(Buffer.from("SECRET-COMMENT"))]);
export const GIF_XMP = Buffer.concat([
  Buffer.from([0x21, 0xff, 11]),
  Buffer.from("XMP DataXMP", "latin1"),
  subBlocks(Buffer.from(XMP)),
]);

/** Inserts blocks right after the header, screen descriptor and global colour table. */
export function withGifBlocks(gif: Buffer, ...blocks: Buffer[]): Buffer {
  const packed = gif[10] ?? 0;
  const table = packed & 0x80 ? 3 * 2 ** ((packed & 0x07) + 1) : 0;
  const at = 13 + table;
  return Buffer.concat([gif.subarray(0, at), ...blocks, gif.subarray(at)]);
}

// --- Oversized images ----------------------------------------------------------

/**
 * A PNG whose header claims `width` × `height` (8-bit grey): the one IDAT
 * holds only the first row, which is all the service ever reads (it never
 * decodes), so a 30000 × 30000 claim costs a few hundred bytes here.
 */
export function pngClaiming(width: number, height: number, ...extraChunks: Buffer[]): Buffer {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // bit depth; colour type 0 (grey), compression, filter, interlace 0
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk("IHDR", header),
    ...extraChunks,
    pngChunk("IDAT", deflateSync(Buffer.alloc(width + 1))),
    pngChunk("IEND", Buffer.alloc(0)),
  ]);
}

/** APNG's animation control chunk: `frames` announced, looping forever. */
export function acTL(frames: number): Buffer {
  const data = Buffer.alloc(8);
  data.writeUInt32BE(frames, 0);
  return pngChunk("acTL", data);
}

/**
 * A GIF of `frames` frames of `frameWidth` × `frameHeight` pixels on a
 * `width` × `height` screen, each frame a clear code and an end code
 * (14 bytes a frame, so 200,000 frames fit in 2.8 MB).
 */
export function gifOfFrames(frames: number, width = 1, height = 1, frameWidth = width, frameHeight = height): Buffer {
  const screen = Buffer.from("GIF89a\0\0\0\0\x80\0\0", "latin1");
  screen.writeUInt16LE(width, 6);
  screen.writeUInt16LE(height, 8);
  const palette = Buffer.from([0, 0, 0, 255, 255, 255]);
  const frame = Buffer.alloc(14);
  frame[0] = 0x2c; // image descriptor at 0,0
  frame.writeUInt16LE(frameWidth, 5);
  frame.writeUInt16LE(frameHeight, 7);
  frame[10] = 2; // LZW minimum code size
  frame.set([1, 0x2c, 0], 11); // one sub-block: clear (4) and end (5) as 3-bit codes; terminator
  return Buffer.concat([screen, palette, Buffer.alloc(frames * frame.length, frame), Buffer.from([0x3b])]);
}

// --- The metadata walker's worst cases ------------------------------------------

/**
 * A real PNG grown to `size` bytes with empty private chunks (12 bytes each,
 * all of them stripped): the most chunks a photo of that size can make the
 * metadata walker visit. `stripped` is the size it must come out at.
 */
export async function pngOfEmptyChunks(size: number): Promise<{ photo: Buffer; chunks: number; stripped: number }> {
  const png = await picture().png().toBuffer();
  const empty = pngChunk("prVt", Buffer.alloc(0));
  const chunks = Math.floor((size - png.length) / empty.length);
  return { photo: withPngChunks(png, Buffer.alloc(chunks * empty.length, empty)), chunks, stripped: png.length };
}

/**
 * A GIF of `frames` frames grown to `size` bytes with empty comment
 * extensions (3 bytes each, all of them stripped): the most blocks a photo of
 * that size can make the metadata walker visit.
 */
export function gifOfEmptyComments(size: number, frames: number): { photo: Buffer; comments: number; stripped: number } {
  const gif = gifOfFrames(frames);
  const comment = Buffer.from([0x21, 0xfe, 0]);
  const comments = Math.floor((size - gif.length) / comment.length);
  return { photo: withGifBlocks(gif, Buffer.alloc(comments * comment.length, comment)), comments, stripped: gif.length };
}
