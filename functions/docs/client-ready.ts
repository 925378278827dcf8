import { EVERY_ANSWER_HEADERS } from "../http/openapi.ts";

/**
 * Finishes the generated OpenAPI document for code generators, in one place
 * rather than on each route: an operationId on every operation (from its
 * method and path, so it is stable), the tags' descriptions, and the headers
 * of every answer (`x-headers-on-every-answer`, http/openapi.ts). What each
 * operation answers is declared with the route (http/operation.ts).
 */

// biome-ignore lint/suspicious/noExplicitAny: the document is plain JSON here
type Json = any;

/** Every tag an operation may carry, with what it groups. */
export const TAGS: Array<{ name: string; description: string }> = [
  { name: "me", description: "Who the caller is: user, tenant and credential" },
  { name: "instances", description: "Camps (instances): the top of every tenant's structure" },
  { name: "supergroups", description: "Groups of an instance, each holding subgroups" },
  { name: "subgroups", description: "Groups within a supergroup, where participants are placed" },
  { name: "blocks", description: "Buildings (blocks) of an instance, each holding rooms" },
  { name: "rooms", description: "Rooms of a block, with their capacity" },
  { name: "participants", description: "People at a camp: one at a time, in bulk, and as CSV" },
  {
    name: "safeguarding",
    description: "Children's contacts, care records and consents: need-to-know (care access, and a key's care scope)",
  },
  {
    name: "health centre",
    description:
      "Medications, the medication administration record, the medication pass and incidents: need-to-know (care access, and a key's care scope); the record is append-only",
  },
  {
    name: "on-site",
    description: "Check-in, check-out to an authorised pickup, presence, roll calls and offline sync (the attendance scope)",
  },
  { name: "photos", description: "Participants' photos: upload (metadata removed) and download" },
  { name: "tenant", description: "The tenant's settings: every caller reads them, admins change them" },
  { name: "users", description: "The tenant's users and their roles (admins)" },
  { name: "api-keys", description: "API keys: issue, rotate, revoke and list" },
  { name: "audit", description: "The audit trail: who changed what (admins)" },
  { name: "events", description: "The change feed: what changed, in commit order (no personal data)" },
  { name: "webhooks", description: "Webhook endpoints and their deliveries, signed as Standard Webhooks (admins)" },
  { name: "health", description: "Liveness and dependency checks (no credential)" },
];

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
  const used = new Set<string>();
  for (const [path, item] of Object.entries(document.paths ?? {}) as Array<[string, Json]>) {
    for (const [method, operation] of Object.entries(item) as Array<[string, Json]>) {
      operation.operationId ??= operationIdOf(method, path);
      for (const tag of operation.tags ?? []) used.add(tag);
    }
  }
  // Tags a route names but this list lacks still appear, so nothing is hidden; a test wants each described.
  const known = new Set(TAGS.map((tag) => tag.name));
  document.tags = [
    ...TAGS.filter((tag) => used.has(tag.name)),
    ...[...used].filter((name) => !known.has(name)).map((name) => ({ name })),
  ];
  document["x-headers-on-every-answer"] = EVERY_ANSWER_HEADERS;
  return document;
}
