import ipaddr from "ipaddr.js";

/**
 * Which addresses a webhook may connect to: public unicast only. Loopback,
 * private, link-local (cloud metadata at 169.254.169.254), carrier-grade NAT,
 * unique-local, multicast, documentation, NAT64, 6to4 and Teredo (which embed
 * an IPv4 address) are refused, so are IPv4-compatible addresses (::a.b.c.d)
 * and IPv6 outside 2000::/3; an IPv4-mapped IPv6 address is judged as the
 * IPv4 address it is. The ranges are ipaddr.js's.
 */
export function addressRefusal(address: string): string | undefined {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(address.replace(/^\[|\]$/g, ""));
  } catch {
    return `${address} is not an IP address`;
  }
  if (parsed.kind() === "ipv6" && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) {
    parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  }
  const range = parsed.range();
  if (range !== "unicast") return `${parsed.toString()} is a ${range} address`;
  if (parsed.kind() === "ipv6") {
    const parts = (parsed as ipaddr.IPv6).parts;
    // ::a.b.c.d, the deprecated IPv4-compatible form (::127.0.0.1): ipaddr.js calls it unicast.
    if (parts.slice(0, 6).every((part) => part === 0)) return `${parsed.toString()} is an IPv4-compatible address`;
    // Only 2000::/3 is global unicast; the rest is unassigned or reserved.
    if (((parts[0] as number) & 0xe000) !== 0x2000) return `${parsed.toString()} is not a global unicast address`;
  }
  return undefined;
}

/** Whether a URL's host is written as an IP address (no name to resolve). */
export const isIpLiteral = (hostname: string): boolean => ipaddr.isValid(hostname.replace(/^\[|\]$/g, ""));
