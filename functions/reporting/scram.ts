/**
 * A SCRAM-SHA-256 verifier, the form in which Postgres stores a password
 * (`SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`, RFC 5802/7677).
 * Sending Postgres the verifier instead of the password keeps the password out
 * of the server's statement logs, as psql's \password does. Web Crypto only,
 * so this runs on Node and Deno alike.
 */

const ITERATIONS = 4096; // Postgres' own default (scram_iterations)
const SALT_BYTES = 16;

/**
 * Postgres runs SASLprep on passwords before hashing; for printable ASCII it
 * changes nothing, so only such passwords (what the CLI generates) are taken.
 */
const PRINTABLE_ASCII = /^[\x21-\x7e]+$/;

const encoder = new TextEncoder();
const base64 = (bytes: Uint8Array): string => btoa(String.fromCharCode(...bytes));

async function hmac(key: Uint8Array<ArrayBuffer>, text: string): Promise<Uint8Array<ArrayBuffer>> {
  const hmacKey = await crypto.subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return new Uint8Array(await crypto.subtle.sign("HMAC", hmacKey, encoder.encode(text)));
}

export async function scramSha256Verifier(
  password: string,
  options: { salt?: Uint8Array<ArrayBuffer>; iterations?: number } = {},
): Promise<string> {
  if (!PRINTABLE_ASCII.test(password)) throw new Error("only printable ASCII passwords are supported");
  const salt = options.salt ?? crypto.getRandomValues(new Uint8Array(SALT_BYTES));
  const iterations = options.iterations ?? ITERATIONS;
  const passwordKey = await crypto.subtle.importKey("raw", encoder.encode(password), "PBKDF2", false, ["deriveBits"]);
  const salted = new Uint8Array(
    await crypto.subtle.deriveBits({ name: "PBKDF2", hash: "SHA-256", salt, iterations }, passwordKey, 256),
  );
  const clientKey = await hmac(salted, "Client Key");
  const storedKey = new Uint8Array(await crypto.subtle.digest("SHA-256", clientKey));
  const serverKey = await hmac(salted, "Server Key");
  return `SCRAM-SHA-256$${iterations}:${base64(salt)}$${base64(storedKey)}:${base64(serverKey)}`;
}
