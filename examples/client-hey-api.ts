/**
 * The same safe-form conventions with the SDK @hey-api/openapi-ts generates
 * (default options): /me, Idempotency-Key, If-Match with the ETag of a read,
 * a photo as a Blob, and a 400's details on the form's fields.
 *
 *   CAMP_URL=http://localhost:8000 CAMP_API_KEY=camp_... npx tsx client-hey-api.ts
 */
import { randomUUID } from "node:crypto";
import { fieldErrors } from "./form-errors.ts";
import { client } from "./generated/hey-api/client.gen";
import {
  getInstancesById,
  getMe,
  patchInstancesById,
  postInstances,
  postParticipants,
  postPhotosUserByUserId,
} from "./generated/hey-api/sdk.gen";
import type { CreateInstance } from "./generated/hey-api/types.gen";

const apiKey = process.env.CAMP_API_KEY;
if (!apiKey) throw new Error("set CAMP_API_KEY to an API key of your tenant");
client.setConfig({ baseUrl: process.env.CAMP_URL ?? "http://localhost:8000", headers: { "X-API-Key": apiKey } });

function must<T>(result: { data?: T; error?: unknown; response?: Response }, what: string): T {
  if (result.data === undefined) throw new Error(`${what}: HTTP ${result.response?.status} ${JSON.stringify(result.error)}`);
  return result.data;
}

const me = must(await getMe(), "me").data;
console.log(`hey-api: ${me.user.email} (${me.user.role}) via ${me.credential.type}`);

const idempotencyKey = randomUUID();
const body = { name: `Hey camp ${idempotencyKey.slice(0, 8)}` };
const first = must(await postInstances({ body, headers: { "Idempotency-Key": idempotencyKey } }), "create").data;
const retry = await postInstances({ body, headers: { "Idempotency-Key": idempotencyKey } });
console.log(`hey-api: retried create replayed ${retry.response?.headers.get("Idempotent-Replayed")}`);

const typo = await postInstances({ body: { name: "", start_date: "2027-07-01", end_date: "2027-06-01" } });
const errors = fieldErrors(typo.error?.error.details, ["name", "start_date", "end_date"] satisfies Array<keyof CreateInstance>);
console.log(`hey-api: form errors ${JSON.stringify(errors)}`);

const read = await getInstancesById({ path: { id: first.id } });
const etag = read.response?.headers.get("ETag") ?? "";
const edited = await patchInstancesById({
  path: { id: first.id },
  headers: { "If-Match": etag },
  body: { location: "Grasmere" },
});
const stale = await patchInstancesById({ path: { id: first.id }, headers: { "If-Match": etag }, body: { location: "Keswick" } });
console.log(`hey-api: edit ${edited.response?.status}, stale edit ${stale.response?.status} ${stale.error?.error.code}`);

const participant = must(
  await postParticipants({
    body: { user_id: `hey-${idempotencyKey.slice(0, 8)}`, instance_id: first.id, first_name: "Alan", surname: "Turing" },
  }),
  "participant",
).data;
const png = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
  "base64",
);
const photo = must(
  await postPhotosUserByUserId({ path: { userId: participant.id }, body: { photo: new Blob([png], { type: "image/png" }) } }),
  "photo",
).data;
console.log(`hey-api: photo ${photo.content_type} ${photo.size} bytes`);
