import { z } from "@hono/zod-openapi";
import { idField, idFilter, optionalText, pagination } from "../resources/fields.ts";

/** The contract of roll calls and of an instance's presence (docs/api.md, "On site"). */

const timestamp = () => z.string().openapi({ format: "date-time" });
const uuid = () => z.string().openapi({ format: "uuid" });

export const MARKS = ["present", "absent", "excused"] as const;

const SCOPES = ["super_group_id", "sub_group_id", "block_id", "room_id"] as const;

export const RollCallCreate = z
  .strictObject({
    instance_id: idField(),
    super_group_id: idField().optional(),
    sub_group_id: idField().optional(),
    block_id: idField().optional(),
    room_id: idField().optional(),
    name: optionalText().openapi({ description: "e.g. Lunch, Lights out" }),
  })
  .superRefine((body, ctx) => {
    const given = SCOPES.filter((scope) => body[scope] !== undefined);
    for (const scope of given.slice(1)) {
      ctx.addIssue({ code: "custom", path: [scope], message: `one scope at most (${given[0]} is given)` });
    }
  })
  .openapi("RollCallCreate");

export const MarksPut = z
  .strictObject({
    marks: z
      .array(z.strictObject({ participant_id: idField(), mark: z.enum(MARKS) }))
      .min(1)
      .max(2_000)
      .openapi({ description: "In order: a later mark of the same participant wins" }),
  })
  .openapi("RollCallMarks");

export const RollCall = z
  .object({
    id: uuid(),
    instance_id: uuid(),
    super_group_id: uuid().nullable(),
    sub_group_id: uuid().nullable(),
    block_id: uuid().nullable(),
    room_id: uuid().nullable(),
    name: z.string().nullable(),
    status: z.enum(["open", "closed"]),
    created_by: uuid().nullable(),
    closed_by: uuid().nullable(),
    created_at: timestamp(),
    updated_at: timestamp(),
    closed_at: timestamp().nullable(),
    expected: z.array(uuid()).openapi({ description: "The participants present in the scope when it opened" }),
    marks: z.array(
      z.object({ participant_id: uuid(), mark: z.enum(MARKS), marked_by: uuid().nullable(), marked_at: timestamp() }),
    ),
    missing: z.array(uuid()).openapi({ description: "Expected and not marked present or excused" }),
    counts: z.object({
      expected: z.number().int(),
      present: z.number().int(),
      absent: z.number().int(),
      excused: z.number().int(),
      missing: z.number().int(),
    }),
  })
  .openapi("RollCall");

export const RollCallListQuery = z.object({
  instance_id: idFilter(),
  status: z.enum(["open", "closed"]).optional(),
  ...pagination(100),
});

const Count = z.object({ id: uuid(), name: z.string().nullable(), present: z.number().int() });

export const Presence = z
  .object({
    instance_id: uuid(),
    present: z.number().int().openapi({ description: "Live participants whose presence is in" }),
    supergroups: z.array(Count),
    subgroups: z.array(Count),
    blocks: z.array(Count),
    rooms: z.array(Count.extend({ room_number: z.string() })),
    present_ids: z.array(uuid()),
  })
  .openapi("InstancePresence");

export type RollCallRecord = z.infer<typeof RollCall>;
export type PresenceRecord = z.infer<typeof Presence>;

const Pickup = z.object({ id: uuid(), name: z.string() });

export const Roster = z
  .object({
    instance_id: uuid(),
    cursor: z.string().openapi({
      description: "The event feed's position when this was read: GET /events?after=<cursor> gives what changed since",
    }),
    pickups_visible: z
      .boolean()
      .openapi({ description: "Whether authorised_pickups are given (the attendance scope, a Bearer token or care access)" }),
    participants: z.array(
      z.object({
        id: uuid(),
        user_id: z.string(),
        first_name: z.string(),
        surname: z.string(),
        full_name: z.string(),
        super_group_id: uuid().nullable(),
        supergroup_name: z.string().nullable(),
        sub_group_id: uuid().nullable(),
        subgroup_name: z.string().nullable(),
        block_id: uuid().nullable(),
        block_name: z.string().nullable(),
        room_id: uuid().nullable(),
        room_number: z.string().nullable(),
        room_name: z.string().nullable(),
        photo_link: z.string().nullable(),
        presence: z.enum(["in", "out"]).nullable(),
        presence_since: timestamp().nullable(),
        authorised_pickups: z
          .array(Pickup)
          .nullable()
          .openapi({ description: "Names only (and ids, for pickup_contact_id); null when the caller may not see them" }),
      }),
    ),
  })
  .openapi("InstanceRoster");
export type RosterRecord = z.infer<typeof Roster>;
