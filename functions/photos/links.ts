import { isUuid } from "../resources/fields.ts";
import { isPhotoType, PHOTO_TYPES } from "./limits.ts";

/** Where the service serves a participant's photo, relative to its base URL. */
export const photoPath = (participantId: string) => `/api/v1/photos/user/${participantId}`;

const OWN_PHOTO_PATH = /^\/api\/v1\/photos\/user\/([^/?#]+)$/;

/**
 * What a client may store in a participant's `photo_link`, which every user of
 * the tenant sees and exports and a front end may put in an `href` or `src`:
 * an absolute http(s) URL, or the service's own relative photo path. Never a
 * `javascript:`, `data:` or any other scheme, nor a scheme-relative `//host`.
 */
export function isSafePhotoLink(value: string): boolean {
  const own = OWN_PHOTO_PATH.exec(value);
  if (own) return isUuid(own[1] as string);
  if (!/^https?:\/\//i.test(value)) return false;
  try {
    const url = new URL(value);
    return (url.protocol === "https:" || url.protocol === "http:") && url.hostname !== "";
  } catch {
    return false;
  }
}

/** A file name for Content-Disposition made only of the id and the type's extension: nothing a client wrote. */
export function photoFileName(participantId: string, contentType: string): string {
  const extension = isPhotoType(contentType) ? PHOTO_TYPES[contentType] : "bin";
  return `photo-${participantId}.${extension}`;
}
