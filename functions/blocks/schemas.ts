import { z } from "@hono/zod-openapi";
import { createOf, recordOf, updateOf } from "../resources/derive.ts";
import { idField, idFilter, optionalLongText, requiredText } from "../resources/fields.ts";
import { cursorListing } from "../resources/listing.ts";

const BlockFields = z.object({
  name: requiredText().openapi({ description: "Unique within the instance, ignoring case and surrounding spaces." }),
  instance_id: idField().openapi({ description: "Fixed once created: an update may repeat it but not change it." }),
  description: optionalLongText(),
});

export const WritableBlockFields = Object.keys(BlockFields.shape);
/** Computed when read: the totals of the block's rooms. */
const BLOCK_TOTALS = ["capacity", "occupancy", "available"];
export const CreateBlock = createOf(BlockFields, BLOCK_TOTALS).openapi("CreateBlock");
export const UpdateBlock = updateOf(BlockFields, BLOCK_TOTALS).openapi("UpdateBlock");
export const Block = recordOf(BlockFields, {
  capacity: z.number().int().nullable().openapi({
    description: "Sum of its live rooms' capacities; null when one of them has no limit; 0 without rooms",
  }),
  occupancy: z.number().int().openapi({ description: "Live participants in its rooms" }),
  available: z.number().int().nullable().openapi({
    description: "Sum of its rooms' free places (each never below 0); null when a room has no limit",
  }),
}).openapi("Block");
export const BlockQuery = z.object({
  instance_id: idFilter(),
  ...cursorListing(["name", "capacity", "occupancy", "available", "created_at", "updated_at"], 100),
});
