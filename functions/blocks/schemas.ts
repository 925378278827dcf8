import { z } from "@hono/zod-openapi";
import { createOf, recordOf, updateOf } from "../resources/derive.ts";
import { idField, idFilter, optionalLongText, requiredText } from "../resources/fields.ts";
import { listing } from "../resources/listing.ts";

const BlockFields = z.object({
  name: requiredText().openapi({ description: "Unique within the instance, ignoring case and surrounding spaces." }),
  instance_id: idField().openapi({ description: "Fixed once created: an update may repeat it but not change it." }),
  description: optionalLongText(),
});

export const WritableBlockFields = Object.keys(BlockFields.shape);
export const CreateBlock = createOf(BlockFields).openapi("CreateBlock");
export const UpdateBlock = updateOf(BlockFields).openapi("UpdateBlock");
export const Block = recordOf(BlockFields).openapi("Block");
export const BlockQuery = z.object({ instance_id: idFilter(), ...listing(["name", "created_at", "updated_at"], 100) });
