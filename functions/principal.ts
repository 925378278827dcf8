import type { Scope } from "./api-keys/scopes.ts";

/** A user's role within their tenant (users.role's check constraint holds the same two). */
export type Role = "admin" | "staff";

/** Who is calling: resolved by the auth middleware from an API key or a Bearer token. */
export interface Principal {
  tenantId: string;
  userId: string;
  email: string;
  role: Role;
  /** How the caller proved who it is. */
  via: "api_key" | "bearer";
  /** The key used, when via is api_key. */
  keyId?: string;
  /**
   * What the key may do; a Bearer token may do everything its user's role
   * allows. `care` is checked by the database itself (private.care_access),
   * never from this field.
   */
  scopes: Scope[];
  /** The request's id (the server's own), which the audit trail records with every change. */
  requestId?: string;
  /** The client's own X-Request-Id, recorded beside it as client_request_id. */
  clientRequestId?: string;
}
