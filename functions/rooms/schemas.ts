import { z } from "@hono/zod-openapi";
import { createOf, recordOf, updateOf } from "../resources/derive.ts";
import { idField, idFilter, optionalText, queryInteger, requiredText } from "../resources/fields.ts";
import { cursorListing } from "../resources/listing.ts";

/** Postgres `integer`: a larger capacity could not be stored. */
const MAX_CAPACITY = 2_147_483_647;

const RoomFields = z.object({
  room_number: requiredText().openapi({ description: "Unique within the block, ignoring case and surrounding spaces." }),
  block_id: idField().openapi({
    description: "A block of the same instance. Cannot change while participants are in the room.",
  }),
  instance_id: idField().openapi({ description: "Fixed once created: an update may repeat it but not change it." }),
  name: optionalText(),
  capacity: z
    .number({ error: "must be an integer of 0 or more" })
    .int("must be an integer of 0 or more")
    .min(0, "must be an integer of 0 or more")
    .max(MAX_CAPACITY, `must be at most ${MAX_CAPACITY}`)
    .nullable()
    .optional()
    .openapi({
      description:
        "The most live participants the room may hold; null: no limit. Enforced: a write that would exceed it, or lowering it below the occupancy, is 409 (admins may override a placement with override_capacity=true).",
    }),
});

export const WritableRoomFields = Object.keys(RoomFields.shape);
/** Computed when read: the block's name, so a table of rooms needs no second request, and how full the room is. */
const ROOM_NAMES = ["block_name", "occupancy", "available"];
export const CreateRoom = createOf(RoomFields, ROOM_NAMES).openapi("CreateRoom");
export const UpdateRoom = updateOf(RoomFields, ROOM_NAMES).openapi("UpdateRoom");
export const Room = recordOf(RoomFields, {
  block_name: z.string().openapi({ description: "The block's name" }),
  occupancy: z.number().int().openapi({ description: "Live participants in the room" }),
  available: z.number().int().nullable().openapi({
    description: "Free places: capacity minus occupancy, never below 0; null when capacity is null (no limit)",
  }),
}).openapi("Room");
export const RoomQuery = z.object({
  instance_id: idFilter(),
  block_id: idFilter(),
  available_min: queryInteger(0, MAX_CAPACITY, "must be an integer of 0 or more").optional().openapi({
    type: "integer",
    minimum: 0,
    description: "Only rooms with at least this many free places (rooms without a capacity have none counted and do not match)",
  }),
  ...cursorListing(["room_number", "name", "capacity", "occupancy", "available", "block_name", "created_at", "updated_at"], 100),
});
