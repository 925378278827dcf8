import { addressRefusal, isIpLiteral } from "./address-policy.ts";

export const MAX_URL_LENGTH = 2_000;

/**
 * Names that never point at a public host: localhost (RFC 6761), mDNS `.local`
 * (RFC 6762), ICANN's private-use `.internal`, `home.arpa` (RFC 8375) and the
 * common `localdomain`.
 */
const INTERNAL_SUFFIXES = ["localhost", "local", "internal", "home.arpa", "localdomain"];

/** Said with every refusal of a scheme or an address: a developer's local receiver is the common case. */
export const DEVELOPMENT_HINT =
  "; for development against a local receiver, the server's WEBHOOK_ALLOW_PRIVATE_NETWORKS=true allows http and internal addresses";

/**
 * Why an endpoint URL is refused when an admin sets it, or undefined. Only
 * https, no credentials in the URL, and no host that is plainly internal
 * (an internal IP address, localhost). A name is checked again, on the
 * address each delivery actually connects to (the transports), since what it
 * resolves to can change (DNS rebinding). `allowPrivate`
 * (WEBHOOK_ALLOW_PRIVATE_NETWORKS) allows http and internal hosts, for
 * development and tests.
 */
export function endpointUrlIssue(value: string, allowPrivate: boolean): string | undefined {
  if (value.length > MAX_URL_LENGTH) return `must be at most ${MAX_URL_LENGTH} characters`;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return "must be an absolute URL";
  }
  if (url.protocol !== "https:" && !(allowPrivate && url.protocol === "http:")) {
    return allowPrivate ? "must be an http or https URL" : `must be an https URL${DEVELOPMENT_HINT}`;
  }
  if (url.username || url.password) return "must not carry a user name or password";
  if (url.hash) return "must not have a fragment";
  if (allowPrivate) return undefined;
  // The URL parser has already turned decimal, octal and hexadecimal IPv4 forms
  // (2130706433, 0177.0.0.1, 0x7f.1) into dotted decimal; a name's trailing
  // dots only make it fully qualified (localhost. is localhost).
  const host = url.hostname.toLowerCase().replace(/\.+$/, "");
  const internalName = !host.includes(".") || INTERNAL_SUFFIXES.some((suffix) => host === suffix || host.endsWith(`.${suffix}`));
  if (!isIpLiteral(host) && internalName) return `must name a public host${DEVELOPMENT_HINT}`;
  if (isIpLiteral(host)) {
    const refusal = addressRefusal(host);
    if (refusal) return `must name a public host (${refusal})${DEVELOPMENT_HINT}`;
  }
  return undefined;
}
