import { z } from "@hono/zod-openapi";
import { createOf, recordOf, updateOf } from "../resources/derive.ts";
import { idField, idFilter, optionalLongText, requiredText } from "../resources/fields.ts";
import { cursorListing } from "../resources/listing.ts";

/** The fields supergroups and subgroups share; `type` defaults (in the database) to the kind of group. */
const groupFields = (defaultType: "supergroup" | "subgroup") => ({
  name: requiredText(),
  instance_id: idField().openapi({ description: "Fixed once created: an update may repeat it but not change it." }),
  description: optionalLongText(),
  type: requiredText()
    .optional()
    .openapi({ description: `Defaults to "${defaultType}" when created without one` }),
  purpose: optionalLongText(),
  notifications: z.boolean().optional().openapi({ description: "Defaults to true when created without one" }),
});

const SupergroupFields = z.object(groupFields("supergroup"));
const SubgroupFields = z.object({
  ...groupFields("subgroup"),
  parent_supergroup_id: idField().openapi({
    description: "A supergroup of the same instance. Cannot change while participants are in the subgroup.",
  }),
});

export const WritableSupergroupFields = Object.keys(SupergroupFields.shape);
export const CreateSupergroup = createOf(SupergroupFields).openapi("CreateSupergroup");
export const UpdateSupergroup = updateOf(SupergroupFields).openapi("UpdateSupergroup");
export const Supergroup = recordOf(SupergroupFields).openapi("Supergroup");
const GROUP_SORT = ["name", "type", "created_at", "updated_at"];
export const SupergroupQuery = z.object({ instance_id: idFilter(), ...cursorListing(GROUP_SORT, 100) });

/** Computed when read: the parent's name, so a table of subgroups needs no second request. */
const SUBGROUP_NAMES = ["supergroup_name"];
export const WritableSubgroupFields = Object.keys(SubgroupFields.shape);
export const CreateSubgroup = createOf(SubgroupFields, SUBGROUP_NAMES).openapi("CreateSubgroup");
export const UpdateSubgroup = updateOf(SubgroupFields, SUBGROUP_NAMES).openapi("UpdateSubgroup");
export const Subgroup = recordOf(SubgroupFields, {
  supergroup_name: z.string().openapi({ description: "The parent supergroup's name" }),
}).openapi("Subgroup");
export const SubgroupQuery = z.object({
  instance_id: idFilter(),
  parent_supergroup_id: idFilter(),
  ...cursorListing([...GROUP_SORT, "supergroup_name"], 100),
});
