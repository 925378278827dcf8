import { createRoute, z } from "@hono/zod-openapi";
import { ApiError, badRequest, invalidField, unauthorized } from "../errors.ts";
import { json, newRouter } from "../http/openapi.ts";
import { operation } from "../http/operation.ts";
import { cleanText } from "../resources/fields.ts";
import { atOrBefore, type Cursor, parseCursor, START } from "./cursor.ts";
import { type FeedPage, RETENTION_DAYS, readFeed } from "./feed.ts";
import { MAX_WAIT_SECONDS, POLL_MS, pause, Waiting } from "./long-poll.ts";
import { EVENT_TYPES, isCareEvent, isEventType } from "./types.ts";

/** GET /api/v1/events: the tenant's change feed in commit order (see feed.ts and docs/events.md). */

const Event = z
  .object({
    id: z.string().openapi({ description: "The audit event it comes from; also the webhook-id of its deliveries" }),
    type: z.enum(EVENT_TYPES),
    occurred_at: z.string().openapi({ format: "date-time", description: "When the writing transaction began" }),
    data: z.record(z.string(), z.union([z.string(), z.record(z.string(), z.number().int())])).openapi({
      description:
        "The record's id, named by its kind (participant_id for participant and photo events, movement_id for check-ins and check-outs); roll_call.closed also carries `counts` {expected, present, absent, excused, missing}, frozen when it closed. Figures, never a name",
      example: { participant_id: "3f1c1b8e-6a4e-4c2e-9f57-0c1f0f7d2a10" },
    }),
  })
  .openapi("Event");

const FeedMeta = z
  .object({
    next: z.string().openapi({ description: "Pass as `after` to continue; opaque" }),
    limit: z.number().int(),
    has_more: z.boolean().openapi({ description: "The page is full: ask again at once" }),
  })
  .openapi("EventFeedMeta");

const waitSeconds = z
  .string()
  .regex(/^[0-9]{1,2}$/, { message: `must be an integer from 0 to ${MAX_WAIT_SECONDS}`, abort: true })
  .transform(Number)
  .pipe(z.number().max(MAX_WAIT_SECONDS, `must be an integer from 0 to ${MAX_WAIT_SECONDS}`));

const Query = z.object({
  after: cleanText().max(64).optional().openapi({
    description:
      "A previous answer's meta.next; `now` starts at the head (no events, only meta.next). Omitted: from the oldest event kept (30 days)",
  }),
  types: cleanText()
    .max(2_000)
    .optional()
    .openapi({
      description: `Comma-separated event types to return (others are skipped): ${EVENT_TYPES.join(", ")}. Care events (${EVENT_TYPES.filter(isCareEvent).join(", ")}) are served only to callers with care access; named here without it, 403`,
    }),
  limit: z
    .string()
    .regex(/^[0-9]{1,4}$/, { message: "must be an integer from 1 to 1000", abort: true })
    .transform(Number)
    .pipe(z.number().min(1, "must be an integer from 1 to 1000").max(1000, "must be an integer from 1 to 1000"))
    .optional()
    .openapi({ type: "integer", minimum: 1, maximum: 1000, description: "At most this many events (100 when omitted)" }),
  wait: waitSeconds.optional().openapi({
    type: "integer",
    minimum: 0,
    maximum: MAX_WAIT_SECONDS,
    description: "Seconds to wait for an event when there is none yet (0 when omitted)",
  }),
});

const listRoute = createRoute(
  operation({
    method: "get",
    path: "/",
    summary: "List the tenant's events after a cursor",
    description:
      "The tenant's events in commit order (ids, type, time; no personal data), after the cursor `after`, kept 30 days; `wait` holds the request open until one arrives.",
    tags: ["events"],
    errors: [403],
    request: { query: Query },
    responses: {
      200: json(z.object({ success: z.literal(true), data: z.array(Event), meta: FeedMeta }), "A page of events"),
    },
  }),
);

function typesFilter(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const types = value.split(",").map((t) => t.trim());
  const unknown = types.filter((t) => !isEventType(t));
  if (unknown.length > 0) throw invalidField("types", `unknown event type ${JSON.stringify(unknown[0]?.slice(0, 40))}`);
  return types.join(",");
}

/** The feed's routes; `shutdown` ends waiting requests early when the server stops. */
export function eventRoutes(shutdown?: AbortSignal) {
  const waiting = new Waiting();
  return newRouter().openapi(listRoute, async (c) => {
    const query = c.req.valid("query");
    const now = query.after === "now";
    const after: Cursor = query.after === undefined || now ? START : parseCursor(query.after);
    const types = typesFilter(query.types);
    const limit = query.limit ?? 100;
    const tenant = c.get("tenant");
    const read = (from: Cursor) => tenant.run((sql) => readFeed(sql, from, types, now ? 0 : limit), { oneStatement: true });

    let page: FeedPage = await read(after);
    // Asked for care events by name without care access: refused, never answered an empty feed (as the audit trail).
    const careTypes = types?.split(",").filter(isCareEvent) ?? [];
    if (careTypes.length > 0 && !page.care) {
      const issue = `${careTypes.join(", ")}: care events need care access (the user's care_access and, with an API key, its care scope)`;
      throw new ApiError("FORBIDDEN", `types: ${issue}`, { field: "types", issue });
    }
    if (query.after !== undefined && !now && atOrBefore(after, page.horizon)) {
      throw badRequest(
        `after: the cursor is older than the ${RETENTION_DAYS} days the feed keeps; read the records again and continue from after=now`,
        {
          field: "after",
          issue: `older than the ${RETENTION_DAYS} days the feed keeps`,
        },
      );
    }
    const wait = now ? 0 : (query.wait ?? 0);
    if (page.events.length === 0 && wait > 0) {
      const leave = waiting.enter(c.get("principal").userId);
      try {
        const deadline = Date.now() + wait * 1000;
        const signals = [c.req.raw.signal, shutdown];
        while (leave && page.events.length === 0 && !signals.some((s) => s?.aborted)) {
          const left = deadline - Date.now();
          if (left <= 0) break;
          await pause(Math.min(POLL_MS, left), signals);
          page = await read(parseCursor(page.next));
          // The credential was checked when the request came; a wait outlasts that check.
          if (!page.live)
            throw unauthorized("the credential was revoked, expired or its user deactivated while the request waited");
        }
      } finally {
        leave?.();
      }
    }
    return c.json({ success: true as const, data: page.events, meta: { next: page.next, limit, has_more: page.hasMore } }, 200);
  });
}
