/**
 * The conventions that make edit forms safe, with types from openapi-typescript
 * (default options) and openapi-fetch: who am I (/me), a retry-safe create
 * (Idempotency-Key), an edit that cannot overwrite someone else's (the ETag of
 * a read in If-Match), a photo sent as a Blob, and a 400 mapped onto the form.
 *
 *   CAMP_URL=http://localhost:8000 CAMP_API_KEY=camp_... npx tsx client-openapi-fetch.ts
 */
import { randomUUID } from "node:crypto";
import createClient from "openapi-fetch";
import { fieldErrors } from "./form-errors.ts";
import type { components, paths } from "./generated/api.d.ts";

const baseUrl = process.env.CAMP_URL ?? "http://localhost:8000";
const apiKey = process.env.CAMP_API_KEY;
if (!apiKey) throw new Error("set CAMP_API_KEY to an API key of your tenant");
const camp = createClient<paths>({ baseUrl, headers: { "X-API-Key": apiKey } });

function must<T>(result: { data?: T; error?: unknown; response: Response }, what: string): T {
  if (result.data === undefined) throw new Error(`${what}: HTTP ${result.response.status} ${JSON.stringify(result.error)}`);
  return result.data;
}

// Who am I: the menus to show.
const me = must(await camp.GET("/api/v1/me"), "me").data;
const canWrite = me.credential.scopes.includes("write");
const via = me.credential.type === "api_key" ? `key ${me.credential.name ?? me.credential.id}` : `token ${me.credential.subject}`;
console.log(`openapi-fetch: ${me.user.email} (${me.user.role}) of ${me.tenant.name} via ${via}, can write: ${canWrite}`);

// A create that is safe to retry: the same Idempotency-Key replays the first answer.
const idempotencyKey = randomUUID();
const body = { name: `Form camp ${idempotencyKey.slice(0, 8)}`, start_date: "2027-07-01", end_date: "2027-07-14" };
const first = await camp.POST("/api/v1/instances", { body, params: { header: { "Idempotency-Key": idempotencyKey } } });
const retry = await camp.POST("/api/v1/instances", { body, params: { header: { "Idempotency-Key": idempotencyKey } } });
const instance = must(first, "create").data;
console.log(
  `openapi-fetch: retried create replayed ${retry.response.headers.get("Idempotent-Replayed")}, same id ${must(retry, "retry").data.id === instance.id}`,
);

// A 400 mapped onto the form's fields.
type InstanceField = keyof components["schemas"]["CreateInstance"];
const typo = await camp.POST("/api/v1/instances", {
  body: { name: "", end_date: "2027-06-01", start_date: "2027-07-01" },
});
const errors = fieldErrors(typo.error?.error.details, ["name", "start_date", "end_date"] satisfies InstanceField[]);
console.log(`openapi-fetch: form errors ${JSON.stringify(errors)}`);

// An edit that cannot overwrite someone else's: the ETag of the read goes back in If-Match.
const read = await camp.GET("/api/v1/instances/{id}", { params: { path: { id: instance.id } } });
const etag = read.response.headers.get("ETag") ?? "";
const edited = await camp.PATCH("/api/v1/instances/{id}", {
  params: { path: { id: instance.id }, header: { "If-Match": etag } },
  body: { ...must(read, "read").data, location: "Ambleside" },
});
const stale = await camp.PATCH("/api/v1/instances/{id}", {
  params: { path: { id: instance.id }, header: { "If-Match": etag } },
  body: { location: "Keswick" },
});
console.log(`openapi-fetch: edit ${edited.response.status}, stale edit ${stale.response.status} ${stale.error?.error.code}`);

// A photo as a Blob.
const participant = must(
  await camp.POST("/api/v1/participants", {
    body: { user_id: `form-${idempotencyKey.slice(0, 8)}`, instance_id: instance.id, first_name: "Ada", surname: "Lovelace" },
  }),
  "participant",
).data;
const png = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
  "base64",
);
const photo = must(
  await camp.POST("/api/v1/photos/user/{userId}", {
    params: { path: { userId: participant.id } },
    body: { photo: new Blob([png], { type: "image/png" }) },
    bodySerializer: (value) => {
      const form = new FormData();
      form.append("photo", value.photo as Blob, "photo.png");
      return form;
    },
  }),
  "photo",
).data;
console.log(`openapi-fetch: photo ${photo.content_type} ${photo.size} bytes`);
