/**
 * The same safe-form conventions with the fetch functions orval generates
 * (examples/orval.config.cjs, which points them at CAMP_URL): /me,
 * Idempotency-Key, If-Match with the ETag of a read, a photo as a Blob, and a
 * 400's details on the form's fields.
 *
 *   CAMP_URL=http://localhost:8000 CAMP_API_KEY=camp_... npx tsx client-orval.ts
 */
import { randomUUID } from "node:crypto";
import { fieldErrors } from "./form-errors.ts";
import {
  type CreateInstance,
  getInstancesById,
  getMe,
  patchInstancesById,
  postInstances,
  postParticipants,
  postPhotosUserByUserId,
} from "./generated/orval/api";

const apiKey = process.env.CAMP_API_KEY;
if (!apiKey) throw new Error("set CAMP_API_KEY to an API key of your tenant");
const auth = { "X-API-Key": apiKey };

const me = await getMe({ headers: auth });
if (me.status !== 200) throw new Error(`me: HTTP ${me.status}`);
console.log(`orval: ${me.data.data.user.email} (${me.data.data.user.role}) via ${me.data.data.credential.type}`);

const idempotencyKey = randomUUID();
const body = { name: `Orval camp ${idempotencyKey.slice(0, 8)}` };
const first = await postInstances(body, { headers: { ...auth, "Idempotency-Key": idempotencyKey } });
const retry = await postInstances(body, { headers: { ...auth, "Idempotency-Key": idempotencyKey } });
if (first.status !== 201) throw new Error(`create: HTTP ${first.status}`);
console.log(`orval: retried create replayed ${retry.headers.get("Idempotent-Replayed")}`);

const typo = await postInstances({ name: "", start_date: "2027-07-01", end_date: "2027-06-01" }, { headers: auth });
const details = typo.status === 400 ? typo.data.error.details : undefined;
const errors = fieldErrors(details, ["name", "start_date", "end_date"] satisfies Array<keyof CreateInstance>);
console.log(`orval: form errors ${JSON.stringify(errors)}`);

const id = first.data.data.id;
const read = await getInstancesById(id, { headers: auth });
const etag = read.headers.get("ETag") ?? "";
const edited = await patchInstancesById(id, { location: "Coniston" }, { headers: { ...auth, "If-Match": etag } });
const stale = await patchInstancesById(id, { location: "Keswick" }, { headers: { ...auth, "If-Match": etag } });
console.log(`orval: edit ${edited.status}, stale edit ${stale.status} ${stale.status === 412 ? stale.data.error.code : ""}`);

const participant = await postParticipants(
  { user_id: `orval-${idempotencyKey.slice(0, 8)}`, instance_id: id, first_name: "Grace", surname: "Hopper" },
  // The operation's query (override_capacity) comes before the request's options.
  undefined,
  { headers: auth },
);
if (participant.status !== 201) throw new Error(`participant: HTTP ${participant.status}`);
const png = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
  "base64",
);
const photo = await postPhotosUserByUserId(
  participant.data.data.id,
  { photo: new Blob([png], { type: "image/png" }) },
  undefined,
  {
    headers: auth,
  },
);
if (photo.status !== 200) throw new Error(`photo: HTTP ${photo.status}`);
console.log(`orval: photo ${photo.data.data.content_type} ${photo.data.data.size} bytes`);
