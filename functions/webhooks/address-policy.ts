import ipaddr from "ipaddr.js";

/**
 * Which addresses a webhook may connect to: public unicast only. Loopback,
 * private, link-local (cloud metadata at 169.254.169.254), carrier-grade NAT,
 * unique-local, multicast, documentation, NAT64 and 6to4 (which embed an IPv4
 * address) are refused; an IPv4-mapped IPv6 address is judged as the IPv4
 * address it is. The ranges are ipaddr.js's.
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
  return range === "unicast" ? undefined : `${parsed.toString()} is a ${range} address`;
}

/** Whether a URL's host is written as an IP address (no name to resolve). */
export const isIpLiteral = (hostname: string): boolean => ipaddr.isValid(hostname.replace(/^\[|\]$/g, ""));
