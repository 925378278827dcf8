import { z } from "@hono/zod-openapi";
import { createOf, recordOf, updateOf } from "../resources/derive.ts";
import { optionalDate, optionalLongText, optionalText, requiredText, timeZone } from "../resources/fields.ts";
import { cursorListing } from "../resources/listing.ts";

export const InstanceStatus = z.enum(["upcoming", "active", "completed", "archived"]);

/** What a client may write; defaults are the database's (status upcoming). */
const InstanceFields = z.object({
  name: requiredText(),
  description: optionalLongText(),
  status: InstanceStatus.optional().openapi({
    description:
      "Defaults to upcoming when created without one. Any status may follow any other; an archived instance is read-only until its status changes.",
  }),
  start_date: optionalDate(),
  end_date: optionalDate(),
  location: optionalText(),
  time_zone: timeZone().optional().openapi({
    description:
      "IANA time zone of the camp (e.g. Europe/London); medication times are local times there. UTC when created without one.",
    example: "Europe/London",
  }),
});

/** Caught here when both dates are in the body; the database's check covers an update that sends only one. */
function datesInOrder(body: { start_date?: string | null; end_date?: string | null }, ctx: z.RefinementCtx) {
  if (body.start_date && body.end_date && body.end_date < body.start_date) {
    ctx.addIssue({ code: "custom", path: ["end_date"], message: "must not be before start_date" });
  }
}

export const WritableInstanceFields = Object.keys(InstanceFields.shape);
export const CreateInstance = createOf(InstanceFields).superRefine(datesInOrder).openapi("CreateInstance");
export const UpdateInstance = updateOf(InstanceFields).superRefine(datesInOrder).openapi("UpdateInstance");
export const Instance = recordOf(InstanceFields).openapi("Instance");
export const InstanceQuery = z.object({
  status: InstanceStatus.optional(),
  ...cursorListing(["name", "status", "start_date", "end_date", "location", "created_at", "updated_at"], 100),
});
