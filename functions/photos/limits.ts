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

/**
 * What a stored photo may cost whoever shows it: a browser decodes every
 * frame into width × height × 4 bytes, whatever the file's size (a 0.87 MB
 * PNG can claim 30000 × 30000 pixels, a GIF of under 5 MB 200,000 frames).
 * A side of 8000 px and 40 megapixels (160 MB decoded) take any camera's
 * full-size photo up to 40 MP; 1000 frames and 400 megapixels over all frames
 * take any sticker or short clip.
 */
export const MAX_PHOTO_SIDE = 8000;
export const MAX_PHOTO_PIXELS = 40_000_000;
export const MAX_PHOTO_FRAMES = 1000;
export const MAX_ANIMATION_PIXELS = 400_000_000;
