import { sha256 } from "@noble/hashes/sha2.js";

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
  return KEY_PREFIX + base64url(bytes);
}

/** Unpadded base64url (RFC 4648 §5), without loading jose for it at start. */
function base64url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
}

/** Cheap shape check, so malformed keys never cost a database round trip. */
export function looksLikeApiKey(value: string): boolean {
  return KEY_PATTERN.test(value);
}

export function displayPrefix(key: string): string {
  return key.slice(0, DISPLAY_LENGTH);
}

/**
 * SHA-256 of the whole key. Computed in JS (@noble/hashes): for 48 bytes this
 * takes microseconds, where WebCrypto's asynchronous digest is a thread-pool
 * job on every request: the digest must not wait for a thread.
 */
export async function hashApiKey(key: string): Promise<Uint8Array> {
  return sha256(new TextEncoder().encode(key));
}
