import { z } from "@hono/zod-openapi";
import { parsePhoneNumberFromString } from "libphonenumber-js/max";
import { cleanText } from "../resources/fields.ts";

/**
 * A phone number as a client may type it, in international form ("+44 20
 * 7946 0958", "+1 (202) 555-0143"), checked against the numbering plan of
 * its country by libphonenumber-js (its full metadata, which knows which
 * ranges are in use, not only their lengths) and stored and returned in
 * E.164 ("+442079460958"). A number without its country code is refused:
 * tenants span countries, and a guessed country would store someone else's
 * number.
 */
export const phoneNumber = () =>
  cleanText()
    .trim()
    .max(40)
    .transform((value, ctx) => {
      const parsed = value.startsWith("+") ? parsePhoneNumberFromString(value) : undefined;
      if (!parsed?.isValid()) {
        ctx.addIssue({
          code: "custom",
          message: value.startsWith("+")
            ? "is not a valid phone number"
            : "must be an international number starting with + and the country code, e.g. +44 20 7946 0958",
        });
        return z.NEVER;
      }
      return parsed.number as string;
    })
    .openapi({
      type: "string",
      example: "+44 20 7946 0958",
      description: "International form (+ and the country code); stored and returned in E.164, e.g. +442079460958",
    });
