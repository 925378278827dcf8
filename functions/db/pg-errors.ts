import { ApiError, type FieldIssue, INVALID_API_KEY, notFound, unauthorized } from "../errors.ts";
import { capacityConflict, type RoomOverflow } from "../rooms/capacity.ts";

/** The fields of a Postgres error that node-postgres exposes and this module reads. */
interface PgError {
  code: string;
  constraint?: string;
  column?: string;
  detail?: string;
  hint?: string;
  message: string;
}

export function isPgError(error: unknown): error is PgError {
  return (
    typeof error === "object" &&
    error !== null &&
    typeof (error as { code?: unknown }).code === "string" &&
    /^[0-9A-Z]{5}$/.test((error as { code: string }).code) &&
    "severity" in error
  );
}

export function isRetryable(error: unknown): boolean {
  return isPgError(error) && (error.code === "40001" || error.code === "40P01");
}

/** Errors that mean "the database cannot be reached", from the driver or the server. */
export function isUnavailable(error: unknown): boolean {
  if (isPgError(error)) {
    return error.code.startsWith("08") || ["57P01", "57P02", "57P03", "53300"].includes(error.code);
  }
  if (error instanceof Error) {
    const code = (error as { code?: string }).code;
    return (
      ["ECONNREFUSED", "ECONNRESET", "ENOTFOUND", "ETIMEDOUT", "EPIPE"].includes(code ?? "") ||
      /Connection terminated|connection timeout|timeout exceeded when trying to connect|not queryable|Cannot use a pool after calling end/i.test(
        error.message,
      )
    );
  }
  return false;
}

/**
 * What each named constraint means to a client. Constraints named
 * `<table>_<column>_check` (the migrations' convention) need no entry: the
 * column is read from the name. Unique and foreign keys are listed, since their
 * names do not always say which field the client should fix.
 */
const CONSTRAINTS: Record<string, FieldIssue> = {
  users_email_key: { field: "email", issue: "is already used by a user of this tenant" },
  users_auth_subject_key: { field: "auth_subject", issue: "is already linked to a user" },
  supergroups_name_key: { field: "name", issue: "is already used by a supergroup of this instance" },
  subgroups_name_key: { field: "name", issue: "is already used by a subgroup of this supergroup" },
  blocks_name_key: { field: "name", issue: "is already used by a block of this instance" },
  rooms_room_number_key: { field: "room_number", issue: "is already used by a room of this block" },
  participants_user_id_key: { field: "user_id", issue: "is already used by a participant of this instance" },
  instances_end_date_check: { field: "end_date", issue: "must not be before start_date" },
  participants_departure_date_check: { field: "departure_date", issue: "must not be before arrival_date" },
  participants_sub_group_id_check: { field: "super_group_id", issue: "is required when sub_group_id is set" },
  participants_room_id_check: { field: "block_id", issue: "is required when room_id is set" },
  supergroups_instance_id_fkey: { field: "instance_id", issue: "does not exist" },
  subgroups_instance_id_fkey: { field: "instance_id", issue: "does not exist" },
  subgroups_parent_supergroup_id_fkey: { field: "parent_supergroup_id", issue: "does not belong to instance_id" },
  blocks_instance_id_fkey: { field: "instance_id", issue: "does not exist" },
  rooms_instance_id_fkey: { field: "instance_id", issue: "does not exist" },
  rooms_block_id_fkey: { field: "block_id", issue: "does not belong to instance_id" },
  participants_instance_id_fkey: { field: "instance_id", issue: "does not exist" },
  participants_super_group_id_fkey: { field: "super_group_id", issue: "does not belong to instance_id" },
  participants_sub_group_id_fkey: { field: "sub_group_id", issue: "does not belong to instance_id" },
  participants_sub_group_id_parent_fkey: { field: "sub_group_id", issue: "does not belong to super_group_id" },
  participants_block_id_fkey: { field: "block_id", issue: "does not belong to instance_id" },
  participants_room_id_fkey: { field: "room_id", issue: "does not belong to instance_id" },
  participants_room_id_parent_fkey: { field: "room_id", issue: "does not belong to block_id" },
  participant_contacts_emergency_phone_check: { field: "phone", issue: "is required for an emergency contact" },
  participant_contacts_emergency_order_only_check: { field: "emergency_order", issue: "is only for emergency contacts" },
};

function describeConstraint(constraint: string | undefined): FieldIssue | undefined {
  if (!constraint) return undefined;
  const known = CONSTRAINTS[constraint];
  if (known) return known;
  const check = /^[a-z]+s_([a-z_]+)_check$/.exec(constraint);
  if (check?.[1]) return { field: check[1], issue: "is not an allowed value" };
  return undefined;
}

/**
 * A capacity refusal (private.assert_room_capacity, *_room_capacity.sql):
 * one issue per room over, on the field that placed people there (room_id,
 * or a room's capacity), with the room, its capacity and its occupancy. The
 * rooms come as JSON in DETAIL, written by that function.
 */
function overCapacity(error: PgError): ApiError {
  let rooms: RoomOverflow[] = [];
  try {
    rooms = JSON.parse(error.detail ?? "[]") as RoomOverflow[];
  } catch {
    // Our own function writes DETAIL; a refusal without it still says what happened.
  }
  return capacityConflict(rooms, error.column ?? "room_id");
}

/**
 * An as-needed dose too soon or one too many (private.medication_administration_create):
 * one issue per earlier dose in the way, from the JSON the function writes in DETAIL.
 */
function prnLimit(error: PgError): ApiError {
  let found: {
    min_interval_hours?: number | null;
    max_doses_per_24h?: number | null;
    doses_in_24h?: number;
    last_doses?: Array<{ entry_id: string; administered_at: string }>;
  } = {};
  try {
    found = JSON.parse(error.detail ?? "{}");
  } catch {
    // Our own function writes DETAIL; the refusal stands without it.
  }
  const limits = [
    found.min_interval_hours != null ? `at least ${found.min_interval_hours} hours apart` : undefined,
    found.max_doses_per_24h != null ? `at most ${found.max_doses_per_24h} doses in 24 hours` : undefined,
  ].filter(Boolean);
  const message = `this as-needed medication is to be given ${limits.join(" and ")}: ${found.doses_in_24h ?? 0} given in the 24 hours before; send override_reason to chart it anyway`;
  const details = (found.last_doses ?? []).map((dose) => ({
    field: "medication_id",
    issue: `a dose was given at ${dose.administered_at}`,
    entry_id: dose.entry_id,
    administered_at: dose.administered_at,
  }));
  return new ApiError("CONFLICT", message, details.length > 0 ? details : { field: "medication_id", issue: message });
}

/**
 * Turns a Postgres error into the client's error, or returns undefined when it
 * is not one a client caused (the caller then reports INTERNAL_ERROR). Never
 * passes on the server's message text: it may quote SQL or other rows' values.
 */
export function fromPgError(error: unknown): ApiError | undefined {
  if (!isPgError(error)) return undefined;
  const described = describeConstraint(error.constraint);
  switch (error.code) {
    case "CA400": {
      // Raised by the migrations' rules with the field in COLUMN; the message is ours.
      const details = { field: error.column ?? "body", issue: error.message };
      return new ApiError("VALIDATION_ERROR", `${details.field}: ${details.issue}`, details);
    }
    case "CA401":
      // A read's key check that travelled with its query (private.api_key_caller) found no live key.
      return unauthorized(INVALID_API_KEY);
    case "CA403":
      // Raised by the care doors (private.care_gate) and guards: the database decided the caller may not.
      return new ApiError("FORBIDDEN", error.message, error.column ? { field: error.column, issue: error.message } : undefined);
    case "CA404":
      // A write that hangs data on a participant refused by private.hold_live_participant (erased meanwhile).
      if (error.constraint === "live_participant") return notFound("participant");
      return new ApiError("NOT_FOUND", error.message);
    case "CA412":
      // Raised by the care doors when an If-Match no longer matches (as http/etag.ts's preconditionFailed).
      return new ApiError(
        "PRECONDITION_FAILED",
        "the record has changed since you read it (If-Match no longer matches its ETag)",
        {
          field: "If-Match",
          issue: "does not match the current ETag",
        },
      );
    case "CA409":
      if (error.constraint === "room_capacity") return overCapacity(error);
      if (error.constraint === "prn_limit") return prnLimit(error);
      return new ApiError("CONFLICT", error.message, error.column ? { field: error.column, issue: error.message } : undefined);
    case "23505":
      return new ApiError(
        "CONFLICT",
        described ? `${described.field} ${described.issue}` : "a record with these values already exists",
        described,
      );
    case "23503":
    case "23514":
    case "23502":
      if (error.code === "23502" && error.column) {
        return new ApiError("VALIDATION_ERROR", `${error.column}: is required`, { field: error.column, issue: "is required" });
      }
      return new ApiError(
        "VALIDATION_ERROR",
        described ? `${described.field}: ${described.issue}` : "the request breaks a data rule",
        described,
      );
    case "22P02":
    case "22007":
    case "22008":
    case "22003":
    case "22001":
      return new ApiError("VALIDATION_ERROR", "a value has the wrong format or is out of range");
    case "57014":
      return new ApiError("SERVICE_UNAVAILABLE", "the request took too long and was cancelled");
    default:
      if (isUnavailable(error)) return new ApiError("SERVICE_UNAVAILABLE", "the database is unavailable");
      return undefined;
  }
}
