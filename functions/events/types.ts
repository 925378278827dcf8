/**
 * The event types of the change feed and of webhooks: those
 * private.event_type_of (sql/migrations/*_events.sql) derives from the audit
 * trail (tests/events.test.ts holds the two lists together), and the alerts.
 */
export const DERIVED_EVENT_TYPES = [
  "instance.created",
  "instance.updated",
  "instance.deleted",
  "supergroup.created",
  "supergroup.updated",
  "supergroup.deleted",
  "subgroup.created",
  "subgroup.updated",
  "subgroup.deleted",
  "block.created",
  "block.updated",
  "block.deleted",
  "room.created",
  "room.updated",
  "room.deleted",
  "participant.created",
  "participant.updated",
  "participant.deleted",
  "participant.erased",
  "photo.replaced",
  "photo.removed",
  "participant.checked_in",
  "participant.checked_out",
  "roll_call.closed",
] as const;

/**
 * Alerts, written into the feed directly rather than derived from a change: a
 * scheduled dose left uncharted (*_medication_pass.sql), an incident needing
 * attention (*_incidents.sql). Thin like the rest. Care data: the feed shows
 * them only to callers with care access (a safeguarding incident's only to
 * safeguarding leads), and a webhook endpoint gets them only by naming them
 * in its types (never a safeguarding incident's).
 */
export const ALERT_EVENT_TYPES = ["medication.overdue", "incident.needs_attention"] as const;

export const EVENT_TYPES = [...DERIVED_EVENT_TYPES, ...ALERT_EVENT_TYPES] as const;

/**
 * Events about care data, by the kind of record before the dot, as
 * private.is_care_event (*_care_events.sql) decides: the feed shows them only
 * to callers with care access, and webhooks send them only to endpoints that
 * name them.
 */
const CARE_EVENT_RESOURCES = new Set([
  "medication",
  "medication_administration",
  "incident",
  "care_record",
  "contact",
  "consent",
  "care_flag",
]);
export const isCareEvent = (type: string): boolean => CARE_EVENT_RESOURCES.has(type.slice(0, type.indexOf(".")));

/** A test event an admin sends to one webhook endpoint (POST /webhook-endpoints/{id}/ping); never in the feed. */
export const PING_EVENT = "webhook.ping";

export type EventType = (typeof EVENT_TYPES)[number];

const KNOWN = new Set<string>(EVENT_TYPES);
export const isEventType = (value: string): value is EventType => KNOWN.has(value);

/** Figures an event carries besides its record's id (roll_call.closed: its counts); never a name. */
export type EventFigures = { counts: Record<string, number> };

/** An event as clients read it in the feed and receive it in a webhook: ids, type and figures, no values. */
export interface ThinEvent {
  id: string;
  type: EventType;
  occurred_at: string;
  data: Record<string, string | Record<string, number>>;
}

/** The name of the id an event's data carries: a photo is its participant's, a ping its endpoint's, a check-in or check-out its movement's. */
function idName(type: string): string {
  if (type === PING_EVENT) return "webhook_endpoint_id";
  if (type === "participant.checked_in" || type === "participant.checked_out") return "movement_id";
  const resource = type.slice(0, type.indexOf("."));
  return `${resource === "photo" ? "participant" : resource}_id`;
}

export function thinEvent(row: {
  id: string;
  type: string;
  occurred_at: Date | string;
  resource_id: string;
  data?: EventFigures | null;
}): ThinEvent {
  const type = row.type as EventType;
  const occurred = row.occurred_at instanceof Date ? row.occurred_at.toISOString() : new Date(row.occurred_at).toISOString();
  return { id: row.id, type, occurred_at: occurred, data: { [idName(type)]: row.resource_id, ...row.data } };
}
