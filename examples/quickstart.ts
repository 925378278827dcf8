/**
 * The quickest way to start: a typed client of the Camp Administration
 * Service, from its own OpenAPI document. Creates a camp with groups, rooms
 * and participants, pages through them sorted, edits one safely, and uploads
 * a photo.
 *
 *   cd examples
 *   npm run generate        # types from the running service's /api/v1/openapi.json
 *   CAMP_API_KEY=camp_... npm start
 *
 * CAMP_URL defaults to http://localhost:8000 (npm start at the project root).
 */
import { randomUUID } from "node:crypto";
import createClient from "openapi-fetch";
import type { paths } from "./generated/api.d.ts";

const baseUrl = process.env.CAMP_URL ?? "http://localhost:8000";
const apiKey = process.env.CAMP_API_KEY;
if (!apiKey) throw new Error("set CAMP_API_KEY to an API key of your tenant");

const camp = createClient<paths>({ baseUrl, headers: { "X-API-Key": apiKey } });

/** The data of a successful answer, or a clear error with the service's code and message. */
function must<T>(result: { data?: T; error?: unknown; response: Response }, what: string): T {
  if (result.data === undefined) {
    throw new Error(`${what}: HTTP ${result.response.status} ${JSON.stringify(result.error)}`);
  }
  return result.data;
}

// A camp. Every POST may carry an Idempotency-Key: retrying after a dropped connection creates nothing twice.
const instance = must(
  await camp.POST("/api/v1/instances", {
    body: { name: "Summer camp 2027", start_date: "2027-07-01", end_date: "2027-07-14", location: "Ambleside" },
    headers: { "Idempotency-Key": randomUUID() },
  }),
  "create the instance",
).data;
console.log(`instance ${instance.id} (${instance.name})`);

// Its groups and accommodation.
const otters = must(
  await camp.POST("/api/v1/groups/supergroups", { body: { name: "Otters", instance_id: instance.id } }),
  "create a supergroup",
).data;
const cubs = must(
  await camp.POST("/api/v1/groups/subgroups", {
    body: { name: "Otter cubs", instance_id: instance.id, parent_supergroup_id: otters.id },
  }),
  "create a subgroup",
).data;
const lodge = must(
  await camp.POST("/api/v1/blocks", { body: { name: "Lake lodge", instance_id: instance.id } }),
  "create a block",
).data;
const rooms: Array<{ id: string }> = [];
for (const number of ["1", "2"]) {
  rooms.push(
    must(
      await camp.POST("/api/v1/rooms", {
        body: { room_number: number, capacity: 4, block_id: lodge.id, instance_id: instance.id },
      }),
      "create a room",
    ).data,
  );
}

// Participants, all or none in one request.
const people = [
  ["Ada", "Lovelace"],
  ["Alan", "Turing"],
  ["Grace", "Hopper"],
  ["Katherine", "Johnson"],
  ["Edsger", "Dijkstra"],
].map(([first_name, surname], i) => ({
  user_id: `QS-${i + 1}`,
  instance_id: instance.id,
  first_name: first_name as string,
  surname: surname as string,
  sub_group_id: cubs.id,
  room_id: rooms[i % rooms.length]?.id,
}));
const created = must(await camp.POST("/api/v1/participants/bulk", { body: { participants: people } }), "bulk create").data;
console.log(`created ${created.length} participants`);

// Page through them sorted by surname, two at a time.
const surnames: string[] = [];
for (let offset = 0; ; offset += 2) {
  const page = must(
    await camp.GET("/api/v1/participants", {
      params: { query: { instance_id: instance.id, sort: "surname,first_name", limit: 2, offset } },
    }),
    "list participants",
  );
  surnames.push(...page.data.map((p) => p.surname));
  if (offset + page.data.length >= page.meta.total) break;
}
console.log(`sorted: ${surnames.join(", ")}`);

// Edit one without overwriting anyone else's change: send back the ETag you read.
const first = created[0];
if (!first) throw new Error("nothing was created");
const read = await camp.GET("/api/v1/participants/{id}", { params: { path: { id: first.id } } });
const etag = read.response.headers.get("ETag") ?? "";
const edited = must(
  await camp.PATCH("/api/v1/participants/{id}", {
    params: { path: { id: first.id } },
    body: { pronouns: "she/her" },
    headers: { "If-Match": etag },
  }),
  "edit with If-Match",
).data;
const stale = await camp.PATCH("/api/v1/participants/{id}", {
  params: { path: { id: first.id } },
  body: { pronouns: "they/them" },
  headers: { "If-Match": etag },
});
console.log(
  `edited ${edited.first_name}: pronouns ${edited.pronouns}; a second edit with the old ETag: HTTP ${stale.response.status}`,
);

// A photo: a 1×1 PNG, sent as a File in multipart/form-data.
const png = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
  "base64",
);
const photo = must(
  await camp.POST("/api/v1/photos/user/{userId}", {
    params: { path: { userId: first.id } },
    body: { photo: new File([png], "ada.png", { type: "image/png" }) },
    bodySerializer: (body) => {
      const form = new FormData();
      form.append("photo", body.photo as File);
      return form;
    },
  }),
  "upload a photo",
).data;
console.log(`photo ${photo.content_type}, ${photo.size} bytes, at ${photo.photo_link}`);
