import { createRoute, z } from "@hono/zod-openapi";
import { notFound } from "../errors.ts";
import { json, newRouter } from "../http/openapi.ts";
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
 * stay whole. A tenant with a health retention period keeps the person's
 * health records detached from any name until it ends
 * (*_health_retention.sql); the answer says what was kept and until when.
 */
const Retained = z
  .object({
    record: z.enum(["medication_administrations", "incidents"]).openapi({ description: "The kind of record kept" }),
    count: z.number().int().openapi({ description: "How many were kept" }),
    retained_until: z.string().openapi({
      format: "date-time",
      description: "When the retention period ends; the hourly sweep then deletes them",
    }),
  })
  .openapi("ErasureRetained");

const Erased = z
  .object({
    success: z.literal(true),
    message: z.string(),
    data: z.object({
      id: z.string().openapi({ format: "uuid" }),
      retained: z.array(Retained).openapi({
        description:
          "Health and incident records kept, detached from any name, for the tenant's retention period (tenants' health_retention_days); empty when the tenant sets none or the person had none",
      }),
    }),
  })
  .openapi("Erasure");
const route = createRoute(
  operation({
    method: "post",
    path: "/{id}/erase",
    summary: "Erase a participant's personal data for good (admins)",
    description:
      "Names, date of birth, every free-text field and the photo are removed; the row keeps its id and instance and is deleted. Earlier audit events keep which fields changed, not their values. Everything hanging on the person goes too, except health and incident records of a tenant that sets a retention period: those are kept detached from any name until it ends, and `data.retained` says what and until when. Cannot be undone.",
    tags: ["participants"],
    request: { params: IdParam },
    responses: { 200: json(Erased, "Erased, with what was kept") },
  }),
);

export function eraseRoutes(store: PhotoStore) {
  return newRouter().openapi(route, async (c) => {
    requireAdmin(c, "only an admin can erase a participant");
    const { id } = c.req.valid("param");
    if (!isUuid(id)) throw notFound("participant");
    const [erased] = await c
      .get("tenant")
      .run((sql) =>
        sql.query<{ photo_key: string | null; retained: z.infer<typeof Retained>[] }>(
          "select photo_key, retained from private.erase_participant($1)",
          [id],
        ),
      );
    await deletePhotos(store, `${c.get("principal").tenantId}/${id}/`, erased?.photo_key ?? null, c.get("requestId"));
    const retained = erased?.retained ?? [];
    const kept = retained.map((r) => {
      const what = r.record.replaceAll("_", " ");
      return `${r.count} ${r.count === 1 ? what.replace(/s$/, "") : what} kept until ${r.retained_until}`;
    });
    const text = kept.length > 0 ? `participant erased; ${kept.join("; ")}` : "participant erased";
    return c.json({ success: true as const, message: text, data: { id, retained } }, 200);
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
