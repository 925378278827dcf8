import { z } from "@hono/zod-openapi";
import { recordOf, updateOf } from "../resources/derive.ts";
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
export const CreateRoom = RoomFields.openapi("CreateRoom");
export const UpdateRoom = updateOf(RoomFields).openapi("UpdateRoom");
export const Room = recordOf(RoomFields).openapi("Room");
export const RoomQuery = z.object({
  instance_id: idFilter(),
  block_id: idFilter(),
  ...listing(["room_number", "name", "capacity", "created_at", "updated_at"], 100),
});
