// Webhook delivery on Deno (the Edge Function's scheduled drain). Deno's fetch
// resolves names itself and takes no resolver, so a check before fetch could
// be undone by a second answer of the same name (DNS rebinding). Instead this
// resolves the name once, checks every address, connects to a checked address
// itself (Deno.connect), starts TLS on that connection for the URL's host name
// (certificate and SNI as fetch would check them), and speaks the one request
// of HTTP/1.1 a webhook is: a POST with Connection: close, of whose answer
// only the status line and the start of the body are read.
import { addressRefusal, isIpLiteral } from "../../../functions/webhooks/address-policy.ts";
import {
  DeliveryError,
  type DeliveryLimits,
  type OutgoingWebhook,
  type ReceiverAnswer,
  type Transport,
} from "../../../functions/webhooks/transport.ts";

/** A host name's addresses; Deno.resolveDns by default, a test's stand-in otherwise. */
export type Resolve = (hostname: string) => Promise<string[]>;

const denoResolve: Resolve = async (hostname) => {
  const answers = await Promise.allSettled([Deno.resolveDns(hostname, "A"), Deno.resolveDns(hostname, "AAAA")]);
  return answers.flatMap((answer) => (answer.status === "fulfilled" ? answer.value : []));
};

const MAX_HEAD = 16_384;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

function indexOfHeadEnd(bytes: Uint8Array): number {
  for (let i = 3; i < bytes.length; i++) {
    if (bytes[i - 3] === 13 && bytes[i - 2] === 10 && bytes[i - 1] === 13 && bytes[i] === 10) return i + 1;
  }
  return -1;
}

/** The body bytes of a chunked answer, as far as they were read (an excerpt needs no more). */
function dechunk(bytes: Uint8Array): Uint8Array {
  const parts: Uint8Array[] = [];
  let at = 0;
  while (at < bytes.length) {
    const lineEnd = bytes.indexOf(10, at);
    if (lineEnd < 0) break;
    const size = Number.parseInt(decoder.decode(bytes.subarray(at, lineEnd)).trim(), 16);
    if (!Number.isFinite(size) || size <= 0) break;
    parts.push(bytes.subarray(lineEnd + 1, Math.min(lineEnd + 1 + size, bytes.length)));
    at = lineEnd + 1 + size + 2;
  }
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const p of parts) {
    out.set(p, offset);
    offset += p.length;
  }
  return out;
}

async function connectChecked(host: string, port: number, tls: boolean, resolve: Resolve, allowPrivate: boolean) {
  const addresses = isIpLiteral(host) ? [host] : await resolve(host).catch(() => []);
  if (addresses.length === 0) throw new DeliveryError(`${host} could not be resolved`);
  if (!allowPrivate) {
    for (const address of addresses) {
      const refusal = addressRefusal(address);
      if (refusal)
        throw new DeliveryError(`address not allowed: ${isIpLiteral(host) ? refusal : `${host} resolves to ${refusal}`}`);
    }
  }
  let lastError: unknown;
  for (const address of addresses) {
    try {
      const tcp = await Deno.connect({ hostname: address, port });
      return tls ? await Deno.startTls(tcp, { hostname: host }) : tcp;
    } catch (error) {
      lastError = error;
    }
  }
  const name = (lastError as Error | undefined)?.name ?? "";
  throw new DeliveryError(
    name === "ConnectionRefused" ? "connection refused" : name ? `connection failed (${name})` : "connection failed",
  );
}

export function denoTransport(resolve: Resolve = denoResolve): Transport {
  return async (request: OutgoingWebhook, limits: DeliveryLimits): Promise<ReceiverAnswer> => {
    const url = new URL(request.url);
    const tls = url.protocol === "https:";
    if (!tls && !(limits.allowPrivate && url.protocol === "http:"))
      throw new DeliveryError(`${url.protocol} URLs are not allowed`);
    const host = url.hostname.replace(/^\[|\]$/g, "");
    const port = Number(url.port) || (tls ? 443 : 80);
    let conn: Deno.Conn | undefined;
    let timedOut = false;
    const deadline = setTimeout(() => {
      timedOut = true;
      try {
        conn?.close();
      } catch {
        // Already closed.
      }
    }, limits.timeoutMs);
    try {
      conn = await connectChecked(host, port, tls, resolve, limits.allowPrivate);
      if (timedOut) throw new DeliveryError(`no answer within ${Math.round(limits.timeoutMs / 1000)} s`);
      const body = encoder.encode(request.body);
      const headers = Object.entries(request.headers)
        .map(([name, value]) => `${name}: ${value}\r\n`)
        .join("");
      await conn.write(
        encoder.encode(
          `POST ${url.pathname}${url.search} HTTP/1.1\r\nhost: ${url.host}\r\nconnection: close\r\ncontent-length: ${body.length}\r\n${headers}\r\n`,
        ),
      );
      await conn.write(body);

      // The status line and headers, at most MAX_HEAD bytes, then the start of the body.
      let read = new Uint8Array(0);
      let headEnd = -1;
      const chunk = new Uint8Array(8_192);
      while (headEnd < 0) {
        const n = await conn.read(chunk);
        if (n === null) break;
        const next = new Uint8Array(read.length + n);
        next.set(read);
        next.set(chunk.subarray(0, n), read.length);
        read = next;
        headEnd = indexOfHeadEnd(read);
        if (headEnd < 0 && read.length > MAX_HEAD) throw new DeliveryError("the answer's headers were too large");
      }
      if (headEnd < 0) throw new DeliveryError("the answer was not valid HTTP");
      const head = decoder.decode(read.subarray(0, headEnd));
      const status = /^HTTP\/1\.[01] ([1-5][0-9]{2})/.exec(head);
      if (!status) throw new DeliveryError("the answer was not valid HTTP");
      let rest = read.subarray(headEnd);
      clearTimeout(deadline);
      const bodyDeadline = setTimeout(() => conn?.close(), Math.min(2_000, limits.timeoutMs));
      try {
        while (rest.length < limits.maxResponseBytes) {
          const n = await conn.read(chunk).catch(() => null);
          if (n === null) break;
          const next = new Uint8Array(rest.length + n);
          next.set(rest);
          next.set(chunk.subarray(0, n), rest.length);
          rest = next;
        }
      } finally {
        clearTimeout(bodyDeadline);
      }
      rest = rest.subarray(0, limits.maxResponseBytes);
      const chunked = /\r\ntransfer-encoding:[^\r]*chunked/i.test(head);
      return { status: Number(status[1]), body: decoder.decode(chunked ? dechunk(rest) : rest) };
    } catch (error) {
      if (timedOut) throw new DeliveryError(`no answer within ${Math.round(limits.timeoutMs / 1000)} s`);
      if (error instanceof DeliveryError) throw error;
      throw new DeliveryError(`connection failed (${(error as Error).name})`);
    } finally {
      clearTimeout(deadline);
      try {
        conn?.close();
      } catch {
        // Already closed.
      }
    }
  };
}
