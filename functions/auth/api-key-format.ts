import { base64url } from "jose";

/**
 * API keys: `camp_` followed by 32 random bytes in base64url (43 characters).
 * The prefix makes a leaked key recognisable to people and secret scanners;
 * only a SHA-256 of the whole key is stored, with the first characters kept for
 * display so a user can tell their keys apart.
 */
export const KEY_PREFIX = "camp_";
const RANDOM_BYTES = 32;
const DISPLAY_LENGTH = KEY_PREFIX.length + 8;
const KEY_PATTERN = /^camp_[A-Za-z0-9_-]{43,}$/;

export function newApiKey(): string {
  const bytes = new Uint8Array(RANDOM_BYTES);
  crypto.getRandomValues(bytes);
  return KEY_PREFIX + base64url.encode(bytes);
}

/** Cheap shape check, so malformed keys never cost a database round trip. */
export function looksLikeApiKey(value: string): boolean {
  return KEY_PATTERN.test(value);
}

export function displayPrefix(key: string): string {
  return key.slice(0, DISPLAY_LENGTH);
}

export async function hashApiKey(key: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(key)));
}
