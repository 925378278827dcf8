import { bodyLimit } from "hono/body-limit";
import { createMiddleware } from "hono/factory";
import { ApiError } from "../errors.ts";
import { checkJsonShape } from "./json-shape.ts";

/** What request bodies a path accepts. */
export interface BodyRule {
  pattern: RegExp;
  mediaTypes: string[];
  maxBytes: number;
  /** How to describe the limit in a 413. */
  limitText: string;
  /**
   * The route reads the body as a stream and stops at the limit itself; a
   * body without Content-Length is then passed on unread rather than
   * buffered here first.
   */
  countsItsOwnBytes?: boolean;
}

export const JSON_BODY_LIMIT = 1_048_576;

/** Every other path takes JSON up to 1 MB. */
const JSON_BODIES: BodyRule = {
  pattern: /.*/,
  mediaTypes: ["application/json"],
  maxBytes: JSON_BODY_LIMIT,
  limitText: "JSON bodies are limited to 1 MB",
};

const BODYLESS = new Set(["GET", "HEAD", "OPTIONS"]);

function hasBody(headers: Headers): boolean {
  const length = headers.get("content-length");
  if (length !== null) return Number(length) > 0;
  return headers.has("transfer-encoding");
}

/**
 * 415 for a body of a type the path does not take, 413 for a body over its
 * limit: decided from Content-Length when it is sent, and by counting bytes as
 * they stream when it is not, so an oversized body is never read whole.
 * A body with a Content-Length is judged here without touching the request's
 * body stream: hono/body-limit asks for it first, and on Node that turns
 * @hono/node-server's light request into a full web Request with a stream,
 * where the route could have read the bytes directly.
 * The HTTP server reads exactly Content-Length bytes, no more.
 */
export function bodyPolicy(special: BodyRule[]) {
  // The features' own rules (photos, bulk create, CSV import), else JSON: the first whose pattern matches.
  const rules = [...special, JSON_BODIES];
  return createMiddleware(async (c, next) => {
    const headers = c.req.raw.headers;
    if (BODYLESS.has(c.req.method) || !hasBody(headers)) return next();
    const rule = rules.find((r) => r.pattern.test(c.req.path)) as BodyRule;
    const mediaType = (c.req.header("content-type") ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
    if (!rule.mediaTypes.includes(mediaType)) {
      throw new ApiError("UNSUPPORTED_MEDIA_TYPE", `Content-Type must be ${rule.mediaTypes.join(" or ")}`, {
        field: "content-type",
        issue: `'${mediaType || "none"}' is not accepted here`,
      });
    }
    const tooLarge = () => {
      throw new ApiError("PAYLOAD_TOO_LARGE", rule.limitText, {
        field: "body",
        issue: `must be at most ${rule.maxBytes} bytes`,
      });
    };
    // JSON bodies: their shape is checked before any JSON.parse (json-shape.ts);
    // the text is kept by Hono for the route's validator, so it is read once.
    const then =
      mediaType === "application/json"
        ? async () => {
            await checkJsonShape(await c.req.text());
            await next();
          }
        : next;
    const length = headers.get("content-length");
    if (length !== null && !headers.has("transfer-encoding")) {
      return Number(length) > rule.maxBytes ? tooLarge() : then();
    }
    if (rule.countsItsOwnBytes) {
      // Counted as it streams, unbuffered: whoever reads it (the route, or the
      // idempotency check hashing it whole) stops at the first byte past the limit.
      const body = c.req.raw.body;
      if (body) {
        c.req.raw = new Request(c.req.raw, { body: counted(body, rule.maxBytes, tooLarge), duplex: "half" } as RequestInit);
      }
      return next();
    }
    return bodyLimit({ maxSize: rule.maxBytes, onError: tooLarge })(c, then);
  });
}

/**
 * The body as it streams, failing at the first chunk past `maxBytes`. The
 * source is let go rather than cancelled when it fails: cancelling destroys
 * the connection before the 413 is written, while the HTTP server discards
 * what is left after the answer.
 */
function counted(body: ReadableStream<Uint8Array>, maxBytes: number, tooLarge: () => never): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let total = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) return controller.close();
      total += value.byteLength;
      if (total <= maxBytes) return controller.enqueue(value);
      reader.releaseLock();
      try {
        tooLarge();
      } catch (error) {
        controller.error(error);
      }
    },
    cancel() {
      reader.releaseLock();
    },
  });
}
