import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import http from "node:http";
import https from "node:https";
import { isIP } from "node:net";
import { addressRefusal } from "../functions/webhooks/address-policy.ts";
import {
  DeliveryError,
  type DeliveryLimits,
  type OutgoingWebhook,
  type ReceiverAnswer,
  type Transport,
} from "../functions/webhooks/transport.ts";

/** How a host name becomes addresses: the system's resolver (getaddrinfo), or a test's. */
export type Resolve = (hostname: string) => Promise<LookupAddress[]>;

const systemResolve: Resolve = (hostname) =>
  new Promise((done, fail) =>
    dnsLookup(hostname, { all: true, verbatim: true }, (error, addresses) => (error ? fail(error) : done(addresses))),
  );

type LookupCallback = (error: Error | null, address: string | LookupAddress[], family?: number) => void;

/**
 * Node's connection lookup, checked: the addresses it hands the socket are
 * the ones it checked, so the address connected to is an allowed one, whatever
 * the name resolves to next time (DNS rebinding). A name with any refused
 * address is refused whole.
 */
function checkedLookup(resolve: Resolve, allowPrivate: boolean) {
  return (hostname: string, options: { all?: boolean; family?: number | string }, callback: LookupCallback) => {
    resolve(hostname).then(
      (found) => {
        const family =
          options.family === 4 || options.family === "IPv4" ? 4 : options.family === 6 || options.family === "IPv6" ? 6 : 0;
        const addresses = found.filter((a) => family === 0 || a.family === family);
        if (addresses.length === 0) return callback(new DeliveryError(`${hostname} has no address`), []);
        if (!allowPrivate) {
          for (const a of addresses) {
            const refusal = addressRefusal(a.address);
            if (refusal) return callback(new DeliveryError(`address not allowed: ${hostname} resolves to ${refusal}`), []);
          }
        }
        if (options.all) return callback(null, addresses);
        const first = addresses[0] as LookupAddress;
        callback(null, first.address, first.family);
      },
      () => callback(new DeliveryError(`${hostname} could not be resolved`), []),
    );
  };
}

/** What an error on the way to an answer was, in words fit for an admin. */
function describe(error: unknown): DeliveryError {
  if (error instanceof DeliveryError) return error;
  const code = (error as { code?: string }).code ?? "";
  const known: Record<string, string> = {
    ECONNREFUSED: "connection refused",
    ECONNRESET: "connection reset by the receiver",
    EHOSTUNREACH: "host unreachable",
    ENETUNREACH: "network unreachable",
    EPIPE: "connection closed by the receiver",
    HPE_HEADER_OVERFLOW: "the answer's headers were too large",
  };
  if (known[code]) return new DeliveryError(known[code]);
  if (code.startsWith("ERR_TLS") || code.includes("CERT") || code.startsWith("UNABLE_TO"))
    return new DeliveryError(`TLS failed (${code})`);
  if (code.startsWith("HPE_")) return new DeliveryError("the answer was not valid HTTP");
  return new DeliveryError(code ? `connection failed (${code})` : "connection failed");
}

/**
 * Webhook delivery on Node: one fresh connection per attempt (no agent pool),
 * redirects never followed (node:http follows none), one deadline over the
 * whole attempt, and at most `maxResponseBytes` of the answer read.
 */
export function nodeTransport(resolve: Resolve = systemResolve): Transport {
  return (request: OutgoingWebhook, limits: DeliveryLimits) =>
    new Promise<ReceiverAnswer>((done, fail) => {
      let settled = false;
      const url = new URL(request.url);
      if (url.protocol !== "https:" && !(limits.allowPrivate && url.protocol === "http:")) {
        return fail(new DeliveryError(`${url.protocol} URLs are not allowed`));
      }
      // A literal address is connected to without a lookup: check it here.
      const literal = url.hostname.replace(/^\[|\]$/g, "");
      if (isIP(literal) && !limits.allowPrivate) {
        const refusal = addressRefusal(literal);
        if (refusal) return fail(new DeliveryError(`address not allowed: ${refusal}`));
      }
      const client = url.protocol === "https:" ? https : http;
      const req = client.request(url, {
        method: "POST",
        headers: { ...request.headers, "content-length": String(Buffer.byteLength(request.body)) },
        agent: false,
        lookup: checkedLookup(resolve, limits.allowPrivate) as never,
        maxHeaderSize: 16_384,
      });
      const finish = (outcome: () => void) => {
        if (settled) return;
        settled = true;
        clearTimeout(deadline);
        outcome();
        req.destroy();
      };
      const deadline = setTimeout(
        () => finish(() => fail(new DeliveryError(`no answer within ${Math.round(limits.timeoutMs / 1000)} s`))),
        limits.timeoutMs,
      );
      req.on("error", (error) => finish(() => fail(describe(error))));
      req.on("response", (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        const answer = () => done({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") });
        res.on("data", (chunk: Buffer) => {
          const room = limits.maxResponseBytes - size;
          if (room > 0) chunks.push(chunk.subarray(0, room));
          size += chunk.length;
          // Enough read: the rest of the body is never received.
          if (size >= limits.maxResponseBytes) finish(answer);
        });
        res.on("end", () => finish(answer));
        res.on("error", () => finish(answer));
        // A body that trickles is cut at the deadline; the status already counts.
        clearTimeout(deadline);
        setTimeout(() => finish(answer), Math.min(2_000, limits.timeoutMs)).unref();
      });
      req.end(request.body);
    });
}
