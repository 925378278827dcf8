/** The photo contract (docs/photos.md): size limit and accepted types. */

export const MAX_PHOTO_BYTES = 5_242_880;

/** Room for the multipart framing around the file part (boundaries, part headers, small fields). */
export const MULTIPART_OVERHEAD_BYTES = 64 * 1024;

/** Accepted media types and the extension their objects are stored under. */
export const PHOTO_TYPES = {
  "image/jpeg": "jpg",
  "image/png": "png",
  "image/gif": "gif",
  "image/webp": "webp",
} as const;

export type PhotoType = keyof typeof PHOTO_TYPES;

export const ALLOWED_PHOTO_TYPES = Object.keys(PHOTO_TYPES) as PhotoType[];

export const isPhotoType = (value: string): value is PhotoType => Object.hasOwn(PHOTO_TYPES, value);
