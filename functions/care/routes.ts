import { createRoute, type z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../app-env.ts";
import { invalidField, notFound } from "../errors.ts";
import { list, locate, message, ok } from "../http/envelope.ts";
import { etagOf, ifMatch, notModified } from "../http/etag.ts";
import { dataOf, json, listOf, MessageSchema, newRouter } from "../http/openapi.ts";
import { operation } from "../http/operation.ts";
import { relyOnCareAccess } from "../http/replay-rules.ts";
import { describeError, log } from "../log.ts";
import type { PhotoStore } from "../photos/store.ts";
import { IdParam, isUuid, textIssue } from "../resources/fields.ts";
import {
  createContact,
  deleteContact,
  getCareRecord,
  getConsents,
  getContact,
  listContacts,
  recordConsents,
  updateContact,
  type Versioned,
  writeCareRecord,
} from "./data.ts";
import {
  CareRecord,
  CareRecordPatch,
  CareRecordPut,
  Consents,
  ConsentsPut,
  Contact,
  ContactCreate,
  ContactListQuery,
  ContactPath,
  ContactUpdate,
} from "./schemas.ts";

/**
 * The safeguarding records of a participant, under /api/v1/participants/{id}:
 * contacts, the care record and consents. Every route reaches the database
 * through its doors (data.ts), which refuse a caller without care access
 * (403), so no route checks access itself: a route that forgot could not
 * show anything more.
 */

const tags = ["safeguarding"];
const ACCESS =
  "Needs care access: the user's care_access (read to read, write to change) and, with an API key, its care scope (and write to change). Every read is recorded in the audit trail (action read).";
const jsonBody = <T extends z.ZodType>(schema: T) => ({
  body: { content: { "application/json": { schema } }, required: true },
});

/** A path id that is not a uuid names nothing: 404 (a hostile one 400 naming it), as for participants. */
function pathIds(c: Context<AppEnv>, names: readonly string[]): void {
  for (const name of names) {
    const value = c.req.param(name) ?? "";
    if (isUuid(value)) continue;
    const issue = textIssue(value);
    throw issue ? invalidField(name, issue) : notFound(name === "id" ? "participant" : "contact");
  }
}

/** Answers with the record and its ETag (when it has a version), or 304 when If-None-Match names it. */
function answer<T, S extends 200 | 201 = 200>(c: Context<AppEnv>, found: Versioned<T>, status?: S) {
  if (found.version !== null) {
    const etag = etagOf(found.version);
    c.header("ETag", etag);
    if (c.req.method === "GET" && notModified(c, etag)) return c.body(null, 304) as never;
  }
  return ok<T, S>(c, found.record, status);
}

// ----------------------------------------------------------------------------- contacts

const listContactsRoute = createRoute(
  operation({
    errors: [403],
    method: "get",
    path: "/{id}/contacts",
    summary: "List a participant's contacts",
    description: `A participant's contacts, emergency contacts first by emergency_order, then by creation. ${ACCESS}`,
    tags,
    request: { params: IdParam, query: ContactListQuery },
    responses: { 200: json(listOf(Contact), "One page and the total") },
  }),
);

const createContactRoute = createRoute(
  operation({
    errors: [403],
    etag: true,
    method: "post",
    path: "/{id}/contacts",
    summary: "Add a contact to a participant",
    description: `Add a contact (at most 100 per participant, deleted ones included). ${ACCESS}`,
    tags,
    request: { params: IdParam, ...jsonBody(ContactCreate) },
    responses: { 201: json(dataOf(Contact), "The contact as stored") },
  }),
);

const getContactRoute = createRoute(
  operation({
    errors: [403],
    etag: true,
    method: "get",
    path: "/{id}/contacts/{contact_id}",
    operationId: "getParticipantsByIdContactsByContactId",
    summary: "Get a contact",
    description: `One contact. ${ACCESS}`,
    tags,
    request: { params: ContactPath },
    responses: { 200: json(dataOf(Contact), "The contact") },
  }),
);

const updateContactRoute = createRoute(
  operation({
    errors: [403, 409],
    etag: true,
    method: "patch",
    path: "/{id}/contacts/{contact_id}",
    operationId: "patchParticipantsByIdContactsByContactId",
    summary: "Update a contact",
    description: `Change the given fields of a contact. ${ACCESS}`,
    tags,
    request: { params: ContactPath, ...jsonBody(ContactUpdate) },
    responses: { 200: json(dataOf(Contact), "The contact as stored") },
  }),
);

const deleteContactRoute = createRoute(
  operation({
    errors: [403, 409],
    etag: true,
    method: "delete",
    path: "/{id}/contacts/{contact_id}",
    operationId: "deleteParticipantsByIdContactsByContactId",
    summary: "Delete a contact",
    description: `Soft-delete a contact (its values go when the participant is erased). ${ACCESS}`,
    tags,
    request: { params: ContactPath },
    responses: { 200: json(MessageSchema, "Deleted") },
  }),
);

// ----------------------------------------------------------------------------- care record

const getCareRoute = createRoute(
  operation({
    errors: [403],
    etag: "optional",
    method: "get",
    path: "/{id}/care",
    summary: "Get a participant's care record",
    description: `A participant's care record (empty, without an ETag, until first written). ${ACCESS}`,
    tags,
    request: { params: IdParam },
    responses: { 200: json(dataOf(CareRecord), "The care record") },
  }),
);

const putCareRoute = createRoute(
  operation({
    errors: [403, 409],
    etag: true,
    method: "put",
    path: "/{id}/care",
    summary: "Replace a participant's care record",
    description: `Replace the care record: fields left out are emptied. ${ACCESS}`,
    tags,
    request: { params: IdParam, ...jsonBody(CareRecordPut) },
    responses: { 200: json(dataOf(CareRecord), "The care record as stored") },
  }),
);

const patchCareRoute = createRoute(
  operation({
    errors: [403, 409],
    etag: true,
    method: "patch",
    path: "/{id}/care",
    summary: "Update a participant's care record",
    description: `Change the given fields of the care record. ${ACCESS}`,
    tags,
    request: { params: IdParam, ...jsonBody(CareRecordPatch) },
    responses: { 200: json(dataOf(CareRecord), "The care record as stored") },
  }),
);

// ----------------------------------------------------------------------------- consents

const getConsentsRoute = createRoute(
  operation({
    errors: [403],
    method: "get",
    path: "/{id}/consents",
    summary: "Get a participant's consents",
    description: `A participant's consents: the answer in force of each kind and the whole history. ${ACCESS}`,
    tags,
    request: { params: IdParam },
    responses: { 200: json(dataOf(Consents), "The consents") },
  }),
);

const putConsentsRoute = createRoute(
  operation({
    errors: [403, 409],
    method: "put",
    path: "/{id}/consents",
    summary: "Record a participant's consent answers",
    description: `${"Record consent answers; earlier ones stay in the history"}. ${`${ACCESS} A refused photo consent removes the participant's stored photo and link, and photo uploads are 409 until a new answer.`}`,
    tags,
    request: { params: IdParam, ...jsonBody(ConsentsPut) },
    responses: { 200: json(dataOf(Consents), "The consents as recorded") },
  }),
);

export function careRoutes(store: PhotoStore) {
  const router = newRouter();
  router.use("/:id/contacts", async (c, next) => {
    pathIds(c, ["id"]);
    relyOnCareAccess(c);
    await next();
  });
  router.use("/:id/contacts/:contact_id", async (c, next) => {
    pathIds(c, ["id", "contact_id"]);
    relyOnCareAccess(c);
    await next();
  });
  router.use("/:id/care", async (c, next) => {
    pathIds(c, ["id"]);
    relyOnCareAccess(c);
    await next();
  });
  router.use("/:id/consents", async (c, next) => {
    pathIds(c, ["id"]);
    relyOnCareAccess(c);
    await next();
  });

  return router
    .openapi(listContactsRoute, async (c) => {
      const { id } = c.req.valid("param");
      const page = await c.get("tenant").run((sql) => listContacts(sql, id, c.req.valid("query")), { oneStatement: true });
      return list(c, page.rows, page.meta);
    })
    .openapi(createContactRoute, async (c) => {
      const { id } = c.req.valid("param");
      const created = await c.get("tenant").run((sql) => createContact(sql, id, c.req.valid("json")), { oneStatement: true });
      locate(c, `/api/v1/participants/${id}/contacts/${created.record.id}`);
      return answer(c, created, 201);
    })
    .openapi(getContactRoute, async (c) => {
      const { id, contact_id } = c.req.valid("param");
      return answer(c, await c.get("tenant").run((sql) => getContact(sql, id, contact_id), { oneStatement: true }));
    })
    .openapi(updateContactRoute, async (c) => {
      const { id, contact_id } = c.req.valid("param");
      const input = c.req.valid("json");
      const precondition = ifMatch(c);
      return answer(c, await c.get("tenant").run((sql) => updateContact(sql, id, contact_id, input, precondition)));
    })
    .openapi(deleteContactRoute, async (c) => {
      const { id, contact_id } = c.req.valid("param");
      const precondition = ifMatch(c);
      await c.get("tenant").run((sql) => deleteContact(sql, id, contact_id, precondition));
      return message(c, "contact deleted");
    })
    .openapi(getCareRoute, async (c) => {
      const { id } = c.req.valid("param");
      return answer(c, await c.get("tenant").run((sql) => getCareRecord(sql, id), { oneStatement: true }));
    })
    .openapi(putCareRoute, async (c) => {
      const { id } = c.req.valid("param");
      const input = c.req.valid("json");
      const precondition = ifMatch(c);
      return answer(c, await c.get("tenant").run((sql) => writeCareRecord(sql, id, input, true, precondition)));
    })
    .openapi(patchCareRoute, async (c) => {
      const { id } = c.req.valid("param");
      const input = c.req.valid("json");
      const precondition = ifMatch(c);
      return answer(c, await c.get("tenant").run((sql) => writeCareRecord(sql, id, input, false, precondition)));
    })
    .openapi(getConsentsRoute, async (c) => {
      const { id } = c.req.valid("param");
      return ok(c, await c.get("tenant").run((sql) => getConsents(sql, id), { oneStatement: true }));
    })
    .openapi(putConsentsRoute, async (c) => {
      const { id } = c.req.valid("param");
      const input = c.req.valid("json");
      const { consents, removedPhotoKey } = await c.get("tenant").run((sql) => recordConsents(sql, id, input));
      if (removedPhotoKey) await deletePhotoObject(store, removedPhotoKey, c.get("requestId"));
      return ok(c, consents);
    });
}

/** After a refusal has committed: the row no longer points at the object; `camp photos sweep` removes it if this fails. */
async function deletePhotoObject(store: PhotoStore, key: string, requestId: string): Promise<void> {
  try {
    await store.delete(key);
  } catch (error) {
    log.warn("a refused photo's object could not be deleted yet", { request_id: requestId, ...describeError(error) });
  }
}
