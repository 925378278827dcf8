import { createHash } from "node:crypto";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { ERROR_STATUS } from "../../functions/errors.ts";

/**
 * Holds the service to its OpenAPI document: every answer the HTTP tests
 * receive is checked against the document the service serves (status,
 * headers, body; Ajv for the schemas), and any answer it does not allow is
 * recorded, which fails the test that got it (contract-setup.ts). Test apps
 * are wrapped by `validated()` (fixtures.ts testApp), servers started as
 * processes are reached through `validatingProxy()` (server-process.ts).
 */

// biome-ignore lint/suspicious/noExplicitAny: the document is plain JSON here
type Json = any;

/**
 * Headers of HTTP itself or of the platform, which no operation declares:
 * framing, CORS (answered for every route alike, docs/security.md), and the
 * nosniff every answer carries. `Allow` belongs to 405, which no operation
 * answers (the method is not one of the path's).
 */
const TRANSPORT_HEADERS = [
  "content-type",
  "content-length",
  "content-encoding",
  "transfer-encoding",
  "connection",
  "keep-alive",
  "date",
  "vary",
  "x-content-type-options",
];
const isTransport = (name: string) => TRANSPORT_HEADERS.includes(name) || name.startsWith("access-control-");

/** The documentation routes, which the document does not describe (functions/docs/routes.ts). */
const UNDOCUMENTED = [/^\/api\/v1\/openapi\.json$/, /^\/docs(\/.*)?$/];

const violations: string[] = [];

/** What the answers so far broke (and forgets them): contract-setup.ts fails the test with them. */
export function takeViolations(): string[] {
  return violations.splice(0);
}

export interface Answer {
  method: string;
  /** The request's path, without query. */
  path: string;
  status: number;
  headers: Headers;
  /** The body as text when it is JSON, else undefined (its type is still checked). */
  body?: string;
  /** Bytes in the body, when known (a 304 or HEAD must have none). */
  size?: number;
}

interface Route {
  template: string;
  regex: RegExp;
  literals: number;
  item: Json;
}

const decode = (pointer: string) => pointer.replace(/~1/g, "/").replace(/~0/g, "~");
const encode = (segment: string) => segment.replace(/~/g, "~0").replace(/\//g, "~1");

export class Contract {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true });
  private readonly routes: Route[];
  private readonly compiled = new Map<string, ValidateFunction>();
  /** The headers declared once for every answer (the document's `x-headers-on-every-answer`), as references. */
  private readonly everyAnswer: Array<{ name: string; on: "all" | "authenticated"; ref: { $ref: string } }>;

  constructor(private readonly document: Json) {
    this.everyAnswer = Object.entries((document["x-headers-on-every-answer"] ?? {}) as Record<string, Json>).map(
      ([name, header]) => ({ name, on: header.on, ref: { $ref: `#/x-headers-on-every-answer/${encode(name)}` } }),
    );
    addFormats(this.ajv);
    this.ajv.addSchema(document, "openapi.json");
    this.routes = Object.entries(document.paths as Record<string, Json>).map(([template, item]) => {
      const segments = template.split("/");
      const source = segments.map((s) => (/^\{.+\}$/.test(s) ? "[^/]+" : s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))).join("/");
      return {
        template,
        regex: new RegExp(`^${source}$`),
        literals: segments.filter((s) => !/^\{.+\}$/.test(s)).length,
        item,
      };
    });
  }

  private resolve(node: Json): { node: Json; pointer?: string } {
    let pointer: string | undefined;
    while (node && typeof node.$ref === "string") {
      pointer = node.$ref.slice(1);
      node = (pointer as string)
        .split("/")
        .slice(1)
        .reduce((at: Json, key: string) => at?.[decode(key)], this.document);
    }
    return { node, pointer };
  }

  /** Ajv's validator for the schema at this JSON pointer of the document. */
  private validator(pointer: string): ValidateFunction {
    let validate = this.compiled.get(pointer);
    if (!validate) {
      validate = this.ajv.compile({ $ref: `openapi.json#${pointer}` });
      this.compiled.set(pointer, validate);
    }
    return validate;
  }

  private schemaErrors(pointer: string, value: unknown): string | undefined {
    const validate = this.validator(pointer);
    if (validate(value)) return undefined;
    return this.ajv.errorsText(validate.errors, { dataVar: "body" });
  }

  /** Everything this answer breaks, in words; empty when the document allows it. */
  check(answer: Answer): string[] {
    const { method, path, status } = answer;
    if (method === "OPTIONS" || UNDOCUMENTED.some((pattern) => pattern.test(path))) return [];
    const where = `${method} ${path} → ${status}`;
    const matching = this.routes.filter((route) => route.regex.test(path)).sort((a, b) => b.literals - a.literals);
    const wanted = method === "HEAD" ? "get" : method.toLowerCase();
    // A path a route names literally is that resource (/api-keys/my-key is not an /api-keys/{id}), as the router decides.
    const best = matching[0]?.literals;
    const route = matching.filter((r) => r.literals === best).find((r) => r.item[wanted]);
    if (!route) return this.checkOutside(answer, where, matching.length > 0);

    const problems: string[] = [];
    const operationPointer = `/paths/${encode(route.template)}/${wanted}`;
    const operation = route.item[wanted];
    const declared = operation.responses?.[String(status)] ?? operation.responses?.[`${String(status)[0]}XX`];
    if (!declared) {
      const listed = Object.keys(operation.responses ?? {}).join(", ");
      return [`${where}: status ${status} is not declared for ${wanted.toUpperCase()} ${route.template} (it declares ${listed})`];
    }
    const resolved = this.resolve(declared);
    const response = resolved.node;
    const responsePointer = resolved.pointer ?? `${operationPointer}/responses/${status}`;

    // Headers: every required one present, every one sent declared (by the answer, or once for every answer), each
    // value as its schema says.
    const authenticated = (operation.security ?? this.document.security ?? []).length > 0;
    const common = this.everyAnswer.filter(({ on }) => on === "all" || (authenticated && status !== 401));
    const headers = Object.fromEntries(
      [...common.map(({ name, ref }) => [name, ref] as const), ...Object.entries(response.headers ?? {})].map(
        ([name, header]) => [name.toLowerCase(), { name, header }],
      ),
    );
    for (const { name, header } of Object.values(headers) as Array<{ name: string; header: Json }>) {
      const { node, pointer } = this.resolve(header);
      const value = answer.headers.get(name);
      if (value === null) {
        if (node?.required) problems.push(`${where}: required header ${name} is missing`);
        continue;
      }
      if (pointer && node?.schema) {
        const error = this.schemaErrors(`${pointer}/schema`, value);
        if (error) problems.push(`${where}: header ${name}: ${error}`);
      }
    }
    answer.headers.forEach((_, name) => {
      if (!isTransport(name) && !headers[name]) {
        problems.push(`${where}: header ${name} is not declared for this answer`);
      }
    });

    // Body: none where none is declared (304, HEAD), else of a declared type and, for JSON, of its schema.
    const contentType = answer.headers.get("content-type")?.split(";")[0]?.trim().toLowerCase();
    const content = response.content as Record<string, Json> | undefined;
    if (method === "HEAD" || status === 304 || !content) {
      if ((answer.size ?? 0) > 0 && method !== "HEAD") problems.push(`${where}: a body is sent where none is declared`);
      return problems;
    }
    if (!contentType || !content[contentType]) {
      problems.push(`${where}: Content-Type ${contentType ?? "(none)"} is not declared (${Object.keys(content).join(", ")})`);
      return problems;
    }
    // A JSON body too large to hold for the check (validating-proxy.ts) is checked by its type alone.
    if (contentType === "application/json" && answer.body !== undefined) {
      let body: unknown;
      try {
        body = JSON.parse(answer.body ?? "");
      } catch {
        problems.push(`${where}: the body is not JSON`);
        return problems;
      }
      const error = this.schemaErrors(`${responsePointer}/content/${encode(contentType)}/schema`, body);
      if (error) problems.push(`${where}: ${error}; body ${JSON.stringify(body).slice(0, 400)}`);
      const code = (body as { error?: { code?: keyof typeof ERROR_STATUS } })?.error?.code;
      if (status >= 400 && code && ERROR_STATUS[code] !== status) {
        problems.push(`${where}: error code ${code} belongs to status ${ERROR_STATUS[code]}`);
      }
    }
    return problems;
  }

  /** A path no operation has (404), or a method the path does not take (405): the envelope, and Allow on a 405. */
  private checkOutside(answer: Answer, where: string, knownPath: boolean): string[] {
    const expected = knownPath ? 405 : 404;
    if (answer.status !== expected) {
      return [`${where}: no operation is declared for this method and path, so only ${expected} may answer`];
    }
    if (expected === 405 && !answer.headers.get("allow")) return [`${where}: a 405 must say Allow`];
    if (answer.method === "HEAD") return [];
    const error = this.schemaErrors("/components/schemas/Error", JSON.parse(answer.body ?? "null"));
    return error ? [`${where}: ${error}`] : [];
  }
}

const contracts = new Map<string, Contract>();

/** The contract of a document, compiled once per document per test file. */
export function contractOf(documentText: string): Contract {
  const hash = createHash("sha256").update(documentText).digest("hex");
  let contract = contracts.get(hash);
  if (!contract) {
    contract = new Contract(JSON.parse(documentText));
    contracts.set(hash, contract);
  }
  return contract;
}

/** Checks one answer and records what it breaks. */
export function record(contract: Contract, answer: Answer): void {
  violations.push(...contract.check(answer));
}

/** Whether a body of this type is read for the check (JSON); others are checked by type only. */
export const isJson = (contentType: string | null) => /^application\/json\b/i.test(contentType ?? "");

type Fetch = (request: Request, env?: unknown, ctx?: never) => Response | Promise<Response>;

/**
 * The app, with every answer it gives checked against the document it
 * serves. `app.request` goes through `app.fetch`, so both are covered.
 */
export function validated<A extends { fetch: Fetch }>(app: A): A {
  const original = app.fetch;
  let contract: Promise<Contract> | undefined;
  app.fetch = (async (request: Request, env?: unknown, ctx?: never) => {
    const response = await original(request, env, ctx);
    contract ??= Promise.resolve(original(new Request("http://localhost/api/v1/openapi.json"), env, ctx))
      .then((r) => r.text())
      .then(contractOf);
    const json = isJson(response.headers.get("content-type"));
    const body = json ? await response.clone().text() : undefined;
    const length = response.headers.get("content-length");
    record(await contract, {
      method: request.method,
      path: new URL(request.url).pathname,
      status: response.status,
      headers: response.headers,
      body,
      size: body !== undefined ? body.length : length !== null ? Number(length) : response.body ? undefined : 0,
    });
    return response;
  }) as A["fetch"];
  return app;
}
