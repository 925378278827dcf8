import { ApiError, invalidField } from "../errors.ts";
import { MAX_PHOTO_BYTES, MULTIPART_OVERHEAD_BYTES } from "./limits.ts";

export const FIELD = "photo";

export const tooLarge = () =>
  new ApiError("PAYLOAD_TOO_LARGE", "photos are limited to 5 MB (5,242,880 bytes)", {
    field: "photo",
    issue: `must be at most ${MAX_PHOTO_BYTES} bytes`,
  });

/**
 * The bytes of the `photo` part of a multipart/form-data request, read as the
 * body streams in. No part may exceed 5,242,880 bytes (413 as soon as one
 * does), so at most one photo is ever held per request. Other fields are
 * read and ignored.
 */
export async function readPhotoPart(request: Request): Promise<Uint8Array> {
  // Loaded on first use: only photo uploads need it, and it stays out of the Edge Function's cold start.
  const { MaxFileSizeExceededError, MaxTotalSizeExceededError, MultipartParseError, parseMultipartRequest } = await import(
    "@remix-run/multipart-parser"
  );
  let photo: Uint8Array | undefined;
  try {
    const parts = parseMultipartRequest(request, {
      maxFileSize: MAX_PHOTO_BYTES,
      maxTotalSize: MAX_PHOTO_BYTES + MULTIPART_OVERHEAD_BYTES,
      maxParts: 16,
      maxHeaderSize: 8 * 1024,
    });
    for await (const part of parts) {
      if (part.name !== FIELD) continue;
      if (photo) throw invalidField(FIELD, "must be sent once");
      photo = part.bytes;
      // The parser's chunks are copied into `photo`: let them go now, not at the end of the request.
      part.content.length = 0;
    }
  } catch (error) {
    if (error instanceof MaxFileSizeExceededError || error instanceof MaxTotalSizeExceededError) throw tooLarge();
    if (error instanceof MultipartParseError) {
      throw new ApiError("VALIDATION_ERROR", `malformed multipart body: ${error.message}`, {
        field: "body",
        issue: error.message,
      });
    }
    throw error;
  }
  if (!photo) throw invalidField(FIELD, "is required (a multipart file part named 'photo')");
  if (photo.length === 0) throw invalidField(FIELD, "must not be empty");
  return photo;
}
