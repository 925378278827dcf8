import { z } from "@hono/zod-openapi";
import { createOf, recordOf, updateOf } from "../resources/derive.ts";
import { idField, idFilter, optionalText, requiredText } from "../resources/fields.ts";
import { listing } from "../resources/listing.ts";

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
    .optional(),
});

export const WritableRoomFields = Object.keys(RoomFields.shape);
/** Computed when read: the block's name, so a table of rooms needs no second request. */
const ROOM_NAMES = ["block_name"];
export const CreateRoom = createOf(RoomFields, ROOM_NAMES).openapi("CreateRoom");
export const UpdateRoom = updateOf(RoomFields, ROOM_NAMES).openapi("UpdateRoom");
export const Room = recordOf(RoomFields, {
  block_name: z.string().openapi({ description: "The block's name" }),
}).openapi("Room");
export const RoomQuery = z.object({
  instance_id: idFilter(),
  block_id: idFilter(),
  ...listing(["room_number", "name", "capacity", "block_name", "created_at", "updated_at"], 100),
});
