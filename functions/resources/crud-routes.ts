import { createRoute, type z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../app-env.ts";
import { notFound } from "../errors.ts";
import { list, locate, message, ok } from "../http/envelope.ts";
import { etagOf, ifMatch, notModified, preconditionFailed } from "../http/etag.ts";
import { dataOf, json, listOf, MessageSchema, newRouter } from "../http/openapi.ts";
import { operation } from "../http/operation.ts";
import { IdParam, isUuid } from "./fields.ts";
import type { ListOptions } from "./listing.ts";
import type { SoftDeleteTable } from "./table.ts";

type Row = Record<string, unknown>;

export interface ResourceSpec {
  /** Singular, for messages and summaries: "block". */
  noun: string;
  /** The OpenAPI tag: "blocks". */
  tag: string;
  record: z.ZodObject;
  create: z.ZodType;
  update: z.ZodType;
  /** Filters and pagination (`limit`, `offset`). */
  query: z.ZodObject;
  table: SoftDeleteTable<Row>;
}

const body = (schema: z.ZodType) => ({ content: { "application/json": { schema } }, required: true });

/** "a block", "an instance". */
export const withArticle = (noun: string) => `${/^[aeiou]/i.test(noun) ? "an" : "a"} ${noun}`;

/**
 * The five operations every structure resource has, with one contract:
 * list (filters, limit/offset, meta), get, create (201), update by PUT or
 * PATCH (both partial), soft delete. A path id that is not a uuid names no
 * record, so it is 404 like an id of another tenant.
 */
export function crudRoutes(spec: ResourceSpec) {
  const { noun, tag, table } = spec;
  const tags = [tag];
  const record = json(dataOf(spec.record), `The ${noun}`);
  const request = { params: IdParam };
  const a = withArticle(noun);

  const listRoute = createRoute(
    operation({
      tags,
      method: "get",
      path: "/",
      summary: `List ${tag}`,
      description: `The live ${tag} of the caller's tenant, a page at a time (\`limit\`, \`offset\`; \`meta.total\` counts every match), filtered by the parameters given and ordered by \`sort\` (default: oldest first).`,
      request: { query: spec.query },
      responses: { 200: json(listOf(spec.record), `A page of ${tag}`) },
    }),
  );
  const getRoute = createRoute(
    operation({
      tags,
      etag: true,
      method: "get",
      path: "/{id}",
      summary: `Get ${a}`,
      description: `The ${noun} with every field. Its ETag, sent back in If-None-Match, gives 304 while it is unchanged.`,
      request,
      responses: { 200: record },
    }),
  );
  const createOne = createRoute(
    operation({
      tags,
      etag: true,
      method: "post",
      path: "/",
      summary: `Create ${a}`,
      description: `Creates ${a} in the caller's tenant: 201 with the record, its ETag and its Location. With an Idempotency-Key a retry creates nothing twice.`,
      request: { body: body(spec.create) },
      responses: { 201: json(dataOf(spec.record), `The new ${noun}`) },
    }),
  );
  const update = (method: "put" | "patch") =>
    createRoute(
      operation({
        tags,
        etag: true,
        errors: [409],
        method,
        path: "/{id}",
        summary: `${method === "put" ? "Replace" : "Update"} ${a}`,
        description: `Changes only the fields sent (PUT and PATCH alike); fields of the record as read (id, timestamps, computed names) may be sent back and are ignored. With the ETag you read in If-Match, a change made meanwhile is refused with 412 instead of overwritten.`,
        request: { ...request, body: body(spec.update) },
        responses: { 200: record },
      }),
    );
  const deleteOne = createRoute(
    operation({
      tags,
      etag: true,
      errors: [409],
      method: "delete",
      path: "/{id}",
      summary: `Delete ${a}`,
      description: `Soft delete: the ${noun} is kept with deleted_at and answers 404 from then on; refused with 409 while live records refer to it. If-Match as for updates.`,
      request,
      responses: { 200: json(MessageSchema, "Deleted") },
    }),
  );

  /** The path id, or 404 when it cannot name a record. */
  const pathId = (id: string) => {
    if (!isUuid(id)) throw notFound(noun);
    return id;
  };

  return newRouter()
    .openapi(listRoute, async (c) => {
      const { limit, offset, sort, updated_since, include_deleted, after, ...filters } = c.req.valid("query") as Row &
        ListOptions;
      const options = { limit, offset, sort, updated_since, include_deleted: Boolean(include_deleted), after };
      const page = await c.get("tenant").run((sql) => table.list(sql, filters, options), { oneStatement: true });
      return list(c, page.rows, page.meta);
    })
    .openapi(getRoute, async (c) => {
      const id = pathId(c.req.valid("param").id);
      const found = await c.get("tenant").run((sql) => table.get(sql, id), { oneStatement: true });
      if (!found) throw notFound(noun);
      const etag = etagOf(found.version);
      c.header("ETag", etag);
      if (notModified(c, etag)) return c.body(null, 304) as never;
      return ok(c, found.row as Row);
    })
    .openapi(createOne, async (c) => {
      const values = c.req.valid("json") as Row;
      const created = await c.get("tenant").run((sql) => table.insert(sql, values), { oneStatement: true });
      locate(c, `${c.req.path.replace(/\/+$/, "")}/${(created.row as { id: string }).id}`);
      c.header("ETag", etagOf(created.version));
      return ok(c, created.row as Row, 201);
    })
    .openapi(update("put"), (c) => updateOne(c, c.req.valid("param").id, c.req.valid("json")))
    .openapi(update("patch"), (c) => updateOne(c, c.req.valid("param").id, c.req.valid("json")))
    .openapi(deleteOne, async (c) => {
      const id = pathId(c.req.valid("param").id);
      const precondition = ifMatch(c);
      await c.get("tenant").run(async (sql) => {
        if (await table.softDelete(sql, id, precondition)) return;
        throw precondition && (await table.exists(sql, id)) ? preconditionFailed() : notFound(noun);
      });
      return message(c, `${noun} deleted`);
    });

  async function updateOne(c: Context<AppEnv>, rawId: string, values: unknown) {
    const id = pathId(rawId);
    const precondition = ifMatch(c);
    const updated = await c.get("tenant").run(async (sql) => {
      const result = await table.update(sql, id, values as Row, precondition);
      if (result) return result;
      throw precondition && (await table.exists(sql, id)) ? preconditionFailed() : notFound(noun);
    });
    c.header("ETag", etagOf(updated.version));
    return ok(c, updated.row as Row);
  }
}
