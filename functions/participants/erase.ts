import { createRoute } from "@hono/zod-openapi";
import { notFound } from "../errors.ts";
import { message } from "../http/envelope.ts";
import { json, MessageSchema, newRouter } from "../http/openapi.ts";
import { operation } from "../http/operation.ts";
import { requireAdmin } from "../http/replay-rules.ts";
import { describeError, log } from "../log.ts";
import { type PhotoStore, unconfiguredPhotoStore } from "../photos/store.ts";
import { IdParam, isUuid } from "../resources/fields.ts";

/**
 * The right to erasure: POST /api/v1/participants/{id}/erase (admins). The
 * database removes the person's data from the row and from every earlier
 * audit event, and records an `erase` event without values, in one
 * transaction (private.erase_participant); the photo objects go once that
 * has committed. The row keeps its id and instance, so counts and history
 * stay whole.
 */
const route = createRoute(
  operation({
    method: "post",
    path: "/{id}/erase",
    summary: "Erase a participant's personal data for good (admins)",
    description:
      "Names, date of birth, every free-text field and the photo are removed; the row keeps its id and instance and is deleted. Earlier audit events keep which fields changed, not their values. Cannot be undone.",
    tags: ["participants"],
    request: { params: IdParam },
    responses: { 200: json(MessageSchema, "Erased") },
  }),
);

export function eraseRoutes(store: PhotoStore) {
  return newRouter().openapi(route, async (c) => {
    requireAdmin(c, "only an admin can erase a participant");
    const { id } = c.req.valid("param");
    if (!isUuid(id)) throw notFound("participant");
    const [erased] = await c
      .get("tenant")
      .run((sql) => sql.query<{ photo_key: string | null }>("select private.erase_participant($1) as photo_key", [id]));
    await deletePhotos(store, `${c.get("principal").tenantId}/${id}/`, erased?.photo_key ?? null, c.get("requestId"));
    return message(c, "participant erased");
  });
}

/**
 * Every object under the participant's prefix, not only the current photo: a
 * replaced photo whose delete failed (photos/service.ts discard) is a copy too.
 * After the commit, so a failure here leaves objects no row points at, which
 * `camp photos sweep` removes.
 */
async function deletePhotos(store: PhotoStore, prefix: string, current: string | null, requestId: string): Promise<void> {
  if (store === unconfiguredPhotoStore) return;
  try {
    const keys = new Set([...(current ? [current] : []), ...(await store.list(prefix))]);
    for (const key of keys) await store.delete(key);
  } catch (error) {
    log.warn("erased participant's photos could not be deleted yet", { request_id: requestId, ...describeError(error) });
  }
}
