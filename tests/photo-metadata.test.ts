import { deflateSync } from "node:zlib";
import { fileTypeFromBuffer } from "file-type";
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { detectPhotoType } from "../functions/photos/detect.ts";
import { InvalidImageError, stripMetadata } from "../functions/photos/metadata/index.ts";
import {
  acTL,
  COMMENT_SEGMENT,
  GIF_COMMENT,
  GIF_XMP,
  gifOfFrames,
  IPTC_SEGMENT,
  image,
  jpegSegment,
  leaks,
  picture,
  pixels,
  pngChunk,
  pngChunkTypes,
  pngClaiming,
  webpChunkTypes,
  withGifBlocks,
  withJpegSegments,
  withJpegSegmentsAtEnd,
  withPngChunks,
} from "./support/images.ts";

/** Strips a copy (the strippers work in place) and returns the result. */
const strip = (bytes: Buffer, type: Parameters<typeof stripMetadata>[1]) => stripMetadata(Uint8Array.from(bytes), type).bytes;

describe("JPEG metadata stripping", () => {
  it("removes EXIF with GPS, XMP, IPTC and comments and leaves the pixels as they were", async () => {
    const original = withJpegSegments(await image("jpeg", { metadata: true }), IPTC_SEGMENT, COMMENT_SEGMENT);
    expect(leaks(original)).toEqual(expect.arrayContaining(["GPS", "EXIF", "SECRET-XMP", "SECRET-IPTC", "SECRET-COMMENT"]));

    const stripped = strip(original, "image/jpeg");

    expect(leaks(stripped)).toEqual([]);
    expect(stripped.length).toBeLessThan(original.length);
    expect((await fileTypeFromBuffer(stripped))?.mime).toBe("image/jpeg");
    const metadata = await sharp(stripped).metadata();
    expect(metadata.exif).toBeUndefined();
    expect(metadata.xmp).toBeUndefined();
    expect(await pixels(stripped)).toEqual(await pixels(original));
  });

  it("keeps the orientation alone, so a phone photo still shows upright", async () => {
    const original = await image("jpeg", { metadata: true, orientation: 6 });
    expect((await sharp(original).metadata()).orientation).toBe(6);

    const stripped = strip(original, "image/jpeg");

    expect((await sharp(stripped).metadata()).orientation).toBe(6);
    expect(leaks(stripped)).toEqual(["EXIF"]); // the 36-byte segment holding only the orientation
    expect(Buffer.from(stripped).indexOf("Exif\0\0")).toBe(Buffer.from(stripped).lastIndexOf("Exif\0\0"));
    expect(await pixels(stripped)).toEqual(await pixels(original));
  });

  it("drops whatever follows the end of the image, such as an appended second image with its own EXIF", async () => {
    const first = await image("jpeg");
    const original = Buffer.concat([first, await image("jpeg", { metadata: true })]);

    const stripped = strip(original, "image/jpeg");

    expect(leaks(stripped)).toEqual([]);
    expect(Buffer.from(stripped)).toEqual(first);
  });

  it("keeps the ICC colour profile", async () => {
    const original = await picture()
      .withIccProfile("p3")
      .withExif({ IFD0: { Make: "SECRET-CAMERA" } })
      .jpeg()
      .toBuffer();

    const stripped = strip(original, "image/jpeg");

    expect((await sharp(stripped).metadata()).icc).toBeDefined();
    expect(leaks(stripped)).toEqual([]);
  });

  it("follows a progressive JPEG's scans, dropping a comment that sits between the last scan and the end", async () => {
    const original = withJpegSegmentsAtEnd(await picture().jpeg({ progressive: true }).toBuffer(), COMMENT_SEGMENT);

    const stripped = strip(original, "image/jpeg");

    expect(leaks(stripped)).toEqual([]);
    expect(await pixels(stripped)).toEqual(await pixels(original));
  });

  it("leaves a JPEG without metadata byte for byte as it was", async () => {
    const original = await picture().jpeg().toBuffer();
    expect(Buffer.from(strip(original, "image/jpeg"))).toEqual(original);
  });

  it("refuses a JPEG whose structure cannot be followed rather than store it unstripped", async () => {
    const whole = await image("jpeg", { metadata: true });
    expect(() => strip(whole.subarray(0, whole.length - 40), "image/jpeg")).toThrow(InvalidImageError);
    expect(() => strip(withJpegSegments(whole, Buffer.from([0xff, 0xe1, 0xff, 0xff, 1, 2])), "image/jpeg")).toThrow(
      /runs past the end/,
    );
    expect(() => strip(Buffer.from("not a jpeg"), "image/jpeg")).toThrow(InvalidImageError);
  });

  it("treats an APP1 segment too short for the orientation as metadata and drops it", async () => {
    const original = withJpegSegments(await picture().jpeg().toBuffer(), jpegSegment(0xe1, "Exif\0\0MM\0*"));
    expect(leaks(strip(original, "image/jpeg"))).toEqual([]);
  });
});

describe("PNG metadata stripping", () => {
  it("removes eXIf, tEXt, zTXt, iTXt and tIME chunks and leaves the pixels as they were", async () => {
    const original = withPngChunks(
      await image("png", { metadata: true }),
      pngChunk("tEXt", "Comment\0SECRET-TEXT"),
      pngChunk("zTXt", Buffer.concat([Buffer.from("Comment\0\0"), (await import("node:zlib")).deflateSync("SECRET-TEXT")])),
      pngChunk("iTXt", "Description\0\0\0\0\0SECRET-COMMENT"),
      pngChunk("tIME", Buffer.from([0x07, 0xe9, 1, 2, 3, 4, 5])),
      pngChunk("gAMA", Buffer.from([0, 0, 0xb1, 0x8f])),
    );
    expect(pngChunkTypes(original)).toEqual(expect.arrayContaining(["eXIf", "tEXt", "zTXt", "iTXt", "tIME"]));
    expect(leaks(original)).toEqual(expect.arrayContaining(["GPS", "SECRET-TEXT", "SECRET-COMMENT"]));

    const stripped = strip(Buffer.concat([original, Buffer.from("trailing SECRET-TEXT")]), "image/png");

    const types = pngChunkTypes(stripped);
    expect(types).not.toEqual(expect.arrayContaining(["eXIf"]));
    expect(types.filter((t) => ["eXIf", "tEXt", "zTXt", "iTXt", "tIME"].includes(t))).toEqual([]);
    expect(types[0]).toBe("IHDR");
    expect(types.at(-1)).toBe("IEND");
    expect(types).toContain("gAMA");
    expect(leaks(stripped)).toEqual([]);
    const metadata = await sharp(stripped).metadata();
    expect(metadata.exif).toBeUndefined();
    expect(metadata.xmp).toBeUndefined();
    expect(await pixels(stripped)).toEqual(await pixels(original));
  });

  it("keeps a palette and transparency", async () => {
    const original = await picture().png({ palette: true, colours: 16 }).toBuffer();
    const stripped = strip(original, "image/png");
    expect(pngChunkTypes(stripped)).toContain("PLTE");
    expect(Buffer.from(stripped)).toEqual(original);
  });

  it("refuses a PNG that does not start with IHDR or has no IEND", async () => {
    const png = await image("png");
    expect(() => strip(png.subarray(0, png.length - 12), "image/png")).toThrow(/no IEND/);
    const noHeader = Buffer.concat([png.subarray(0, 8), pngChunk("tEXt", "a\0b"), png.subarray(8)]);
    expect(() => strip(noHeader, "image/png")).toThrow(/IHDR/);
    expect(() => strip(png.subarray(0, 40), "image/png")).toThrow(InvalidImageError);
  });
});

describe("PNG chunks kept", () => {
  it("keeps only the critical chunks and those that change how the picture shows, whatever the case of a chunk's name", async () => {
    const gps = "GPS 51.5123 N 0.1235 W SECRET-TEXT";
    const base = await image("png", { metadata: true });
    const original = withPngChunks(
      base,
      pngChunk("EXIF", gps), // private, but upper case: its name claims "critical"
      pngChunk("EXIf", gps),
      pngChunk("gpSi", gps),
      pngChunk("tEXt", `GPS\0${gps}`),
      pngChunk("iTXt", `GPS\0\0\0\0\0${gps}`),
      pngChunk("zTXt", Buffer.concat([Buffer.from("GPS\0\0"), deflateSync(gps)])),
      pngChunk("sPLT", Buffer.concat([Buffer.from(`${gps}\0`), Buffer.from([8, 0, 0, 0, 0xff, 0, 1])])),
      pngChunk("bKGD", Buffer.from([0, 0])),
      pngChunk("gAMA", Buffer.from([0, 0, 0xb1, 0x8f])),
      pngChunk("sRGB", Buffer.from([0])),
    );
    expect(pngChunkTypes(original)).toEqual(expect.arrayContaining(["eXIf", "EXIF", "tEXt", "iTXt", "zTXt"]));
    expect(leaks(original)).toEqual(expect.arrayContaining(["GPS", "SECRET-TEXT", "eXIf"]));

    const stripped = strip(original, "image/png");

    expect(pngChunkTypes(stripped)).toEqual(["IHDR", "gAMA", "sRGB", "pHYs", "IDAT", "IEND"]);
    expect(Buffer.from(stripped).includes("GPS")).toBe(false);
    expect(leaks(stripped)).toEqual([]);
    // The original does not even decode: libpng refuses a critical chunk it does not know.
    expect(await pixels(stripped)).toEqual(await pixels(base));
  });
});

describe("image geometry", () => {
  const geometry = (bytes: Buffer, type: Parameters<typeof stripMetadata>[1]) =>
    stripMetadata(Uint8Array.from(bytes), type).geometry;

  it("reads each format's size and frame count as a decoder does", async () => {
    const still = { width: 48, height: 32, frames: 1 };
    expect(geometry(await image("jpeg", { metadata: true }), "image/jpeg")).toEqual(still);
    expect(geometry(await picture().jpeg({ progressive: true }).toBuffer(), "image/jpeg")).toEqual(still);
    expect(geometry(await image("png"), "image/png")).toEqual(still);
    expect(geometry(await image("gif"), "image/gif")).toEqual(still);
    expect(geometry(await image("webp"), "image/webp")).toEqual(still);
    expect(geometry(await picture().webp({ quality: 80 }).toBuffer(), "image/webp")).toEqual(still);
    expect(geometry(await picture(300, 7).withIccProfile("p3").webp().toBuffer(), "image/webp")).toEqual({
      width: 300,
      height: 7,
      frames: 1,
    });
    const gif = await animatedGif();
    expect(geometry(gif, "image/gif")).toEqual({ width: 16, height: 16, frames: 3 });
    const webp = await sharp(gif, { animated: true }).webp({ lossless: true }).toBuffer();
    expect(geometry(webp, "image/webp")).toEqual({ width: 16, height: 16, frames: 3 });
  });

  it("counts the frames an APNG announces, and a frame reaching past the canvas grows it", async () => {
    expect(geometry(pngClaiming(30_000, 20_000), "image/png")).toEqual({ width: 30_000, height: 20_000, frames: 1 });
    expect(geometry(pngClaiming(16, 16, acTL(5000)), "image/png")).toEqual({ width: 16, height: 16, frames: 5000 });
    expect(geometry(gifOfFrames(200_000), "image/gif")).toEqual({ width: 1, height: 1, frames: 200_000 });
    expect(geometry(gifOfFrames(2, 10, 10, 9000, 20), "image/gif")).toEqual({ width: 9000, height: 20, frames: 2 });
  });

  it("refuses a JPEG without a frame header", async () => {
    expect(() => strip(Buffer.from([0xff, 0xd8, 0xff, 0xd9]), "image/jpeg")).toThrow(/no frame header/);
  });
});

describe("WebP metadata stripping", () => {
  it("removes the EXIF and XMP chunks, clears their VP8X flags and fixes the RIFF size", async () => {
    const original = await picture()
      .withIccProfile("p3")
      .withExif({ IFD3: { GPSLatitude: "51/1 30/1 4321/100" } })
      .withXmp(
        '<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description rdf:about="">SECRET-XMP</rdf:Description></rdf:RDF></x:xmpmeta>',
      )
      .webp({ lossless: true })
      .toBuffer();
    expect(webpChunkTypes(original)).toEqual(expect.arrayContaining(["VP8X", "ICCP", "EXIF", "XMP "]));
    expect((original[20] ?? 0) & 0x0c).toBe(0x0c);

    const stripped = strip(original, "image/webp");

    expect(webpChunkTypes(stripped)).toEqual(["VP8X", "ICCP", "VP8L"]);
    expect(stripped[20]).toBe(0x20); // only the ICC flag is left
    expect(Buffer.from(stripped).readUInt32LE(4)).toBe(stripped.length - 8);
    expect(leaks(stripped)).toEqual([]);
    expect((await fileTypeFromBuffer(stripped))?.mime).toBe("image/webp");
    const metadata = await sharp(stripped).metadata();
    expect(metadata.exif).toBeUndefined();
    expect(metadata.xmp).toBeUndefined();
    expect(metadata.icc).toBeDefined();
    expect(await pixels(stripped)).toEqual(await pixels(original));
  });

  it("removes GPS from a lossy WebP and still decodes it", async () => {
    const original = await picture()
      .withExif({ IFD3: { GPSLatitude: "51/1 30/1 4321/100" } })
      .webp({ quality: 80 })
      .toBuffer();
    expect(leaks(original)).toContain("GPS");

    const stripped = strip(Buffer.concat([original, Buffer.from("SECRET-TEXT")]), "image/webp");

    expect(leaks(stripped)).toEqual([]);
    expect(await pixels(stripped)).toEqual(await pixels(original));
  });

  it("keeps every frame of an animated WebP", async () => {
    const frames = await sharp(await animatedGif(), { animated: true })
      .withExif({ IFD0: { Make: "SECRET-CAMERA" } })
      .webp({ lossless: true })
      .toBuffer();
    expect(leaks(frames)).toContain("SECRET-CAMERA");

    const stripped = strip(frames, "image/webp");

    expect(leaks(stripped)).toEqual([]);
    expect((await sharp(stripped, { animated: true }).metadata()).pages).toBe(3);
    expect(await pixels(stripped, { animated: true })).toEqual(await pixels(frames, { animated: true }));
  });

  it("leaves a simple WebP without metadata as it was, and refuses a truncated one", async () => {
    const original = await picture().webp().toBuffer();
    expect(Buffer.from(strip(original, "image/webp"))).toEqual(original);
    expect(() => strip(original.subarray(0, original.length - 10), "image/webp")).toThrow(InvalidImageError);
  });
});

/** Three frames, looping (NETSCAPE2.0 extension). */
async function animatedGif(): Promise<Buffer> {
  const frame = (r: number) => picture(16, 16).tint({ r, g: 40, b: 90 }).raw().toBuffer();
  const stacked = Buffer.concat(await Promise.all([frame(10), frame(120), frame(240)]));
  return sharp(stacked, { raw: { width: 16, height: 48, channels: 3, pageHeight: 16 } as never })
    .gif({ loop: 0 })
    .toBuffer();
}

describe("GIF metadata stripping", () => {
  it("removes comment and XMP extensions and keeps frames, timing and looping", async () => {
    const animated = await animatedGif();
    const original = withGifBlocks(animated, GIF_COMMENT, GIF_XMP);
    expect(leaks(original)).toEqual(expect.arrayContaining(["SECRET-COMMENT", "SECRET-XMP"]));

    const stripped = strip(Buffer.concat([original, Buffer.from("SECRET-TEXT")]), "image/gif");

    expect(leaks(stripped)).toEqual([]);
    expect(Buffer.from(stripped).includes("NETSCAPE2.0")).toBe(true);
    expect(Buffer.from(stripped)).toEqual(animated);
    const metadata = await sharp(stripped, { animated: true }).metadata();
    expect(metadata.pages).toBe(3);
    expect(metadata.loop).toBe(0);
  });

  it("refuses a GIF cut short", async () => {
    const gif = await image("gif");
    expect(() => strip(gif.subarray(0, gif.length - 5), "image/gif")).toThrow(InvalidImageError);
  });
});

describe("photo type detection", () => {
  it("knows the four types by their bytes and nothing else", async () => {
    expect(await detectPhotoType(await image("jpeg"))).toBe("image/jpeg");
    expect(await detectPhotoType(await image("png"))).toBe("image/png");
    expect(await detectPhotoType(await image("gif"))).toBe("image/gif");
    expect(await detectPhotoType(await image("webp"))).toBe("image/webp");
    expect(await detectPhotoType(Buffer.from("just some text, in a file named photo.png"))).toBeUndefined();
    expect(await detectPhotoType(await picture().tiff().toBuffer())).toBeUndefined();
    expect(await detectPhotoType(Buffer.from("%PDF-1.7\n"))).toBeUndefined();
  });
});
