/**
 * Finishes the generated OpenAPI document for code generators, in one place
 * rather than on each route: an operationId on every operation (from its
 * method and path, so it is stable), an explicit (empty) security on public
 * ones, and the error answers every operation
 * can give whatever it declares (405, 500, 503; 429 for authenticated ones;
 * 413 and 415 for those with a body), each in the Error envelope.
 */

// biome-ignore lint/suspicious/noExplicitAny: the document is plain JSON here
type Json = any;

const ERROR = { $ref: "#/components/schemas/Error" };
const errorAnswer = (description: string) => ({ description, content: { "application/json": { schema: ERROR } } });

const ALWAYS: Record<string, string> = {
  "405": "Method not allowed on this path (see Allow)",
  "500": "Internal error (the log has the cause under error.request_id)",
  "503": "Database or photo storage unavailable; Retry-After says when to try again",
};
const AUTHENTICATED: Record<string, string> = { "429": "Rate limit spent; Retry-After says when to come back" };
const WITH_BODY: Record<string, string> = {
  "413": "Body too large",
  "415": "Body of a type this operation does not take",
};

/** `get /api/v1/participants/{id}` → `getParticipantsById`. */
export function operationIdOf(method: string, path: string): string {
  const words = path
    .split("/")
    .filter((part) => part && part !== "api" && part !== "v1")
    .flatMap((part) => {
      const param = /^\{(.+)\}$/.exec(part);
      return param ? ["by", param[1] as string] : part.split(/[^A-Za-z0-9]+/);
    })
    .filter(Boolean);
  return [method, ...words].map((word, i) => (i === 0 ? word : word[0]?.toUpperCase() + word.slice(1))).join("");
}

export function clientReady(document: Json): Json {
  for (const [path, item] of Object.entries(document.paths ?? {}) as Array<[string, Json]>) {
    for (const [method, operation] of Object.entries(item) as Array<[string, Json]>) {
      operation.operationId ??= operationIdOf(method, path);
      // An operation without credentials says so, rather than leaving it to be guessed.
      operation.security ??= [];
      const add = (answers: Record<string, string>) => {
        for (const [status, description] of Object.entries(answers)) operation.responses[status] ??= errorAnswer(description);
      };
      add(ALWAYS);
      if (operation.security?.length) add(AUTHENTICATED);
      if (operation.requestBody) add(WITH_BODY);
    }
  }
  return document;
}
