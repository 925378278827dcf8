import { createRoute, type z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../app-env.ts";
import { list, locate, message, ok } from "../http/envelope.ts";
import { notFound } from "../http/errors.ts";
import { authenticated, dataOf, errors, json, listOf, MessageSchema, newRouter } from "../http/openapi.ts";
import { IdParam, isUuid } from "./fields.ts";
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
  const route = { tags, security: authenticated };

  const listRoute = createRoute({
    ...route,
    method: "get",
    path: "/",
    summary: `List ${tag}`,
    request: { query: spec.query },
    responses: { 200: json(listOf(spec.record), `A page of ${tag}`), ...errors(400, 401) },
  });
  const getRoute = createRoute({
    ...route,
    method: "get",
    path: "/{id}",
    summary: `Get one ${noun}`,
    request,
    responses: { 200: record, ...errors(401, 404) },
  });
  const createOne = createRoute({
    ...route,
    method: "post",
    path: "/",
    summary: `Create a ${noun}`,
    request: { body: body(spec.create) },
    responses: { 201: json(dataOf(spec.record), `The new ${noun}`), ...errors(400, 401, 409) },
  });
  const update = (method: "put" | "patch") =>
    createRoute({
      ...route,
      method,
      path: "/{id}",
      summary: `Update a ${noun} (PUT and PATCH alike change only the fields sent)`,
      request: { ...request, body: body(spec.update) },
      responses: { 200: record, ...errors(400, 401, 404, 409) },
    });
  const deleteOne = createRoute({
    ...route,
    method: "delete",
    path: "/{id}",
    summary: `Delete a ${noun} (soft; refused while anything live refers to it)`,
    request,
    responses: { 200: json(MessageSchema, "Deleted"), ...errors(401, 404, 409) },
  });

  /** The path id, or 404 when it cannot name a record. */
  const pathId = (id: string) => {
    if (!isUuid(id)) throw notFound(noun);
    return id;
  };

  return newRouter()
    .openapi(listRoute, async (c) => {
      const { limit, offset, ...filters } = c.req.valid("query") as Row & { limit: number; offset: number };
      const page = await c.var.db.asTenant(c.var.principal, (sql) => table.list(sql, filters, { limit, offset }));
      return list(c, page.rows, page.meta);
    })
    .openapi(getRoute, async (c) => {
      const id = pathId(c.req.valid("param").id);
      const row = await c.var.db.asTenant(c.var.principal, (sql) => table.get(sql, id));
      if (!row) throw notFound(noun);
      return ok(c, row);
    })
    .openapi(createOne, async (c) => {
      const values = c.req.valid("json") as Row;
      const row = await c.var.db.asTenant(c.var.principal, (sql) => table.insert(sql, values));
      locate(c, `${c.req.path.replace(/\/+$/, "")}/${(row as { id: string }).id}`);
      return ok(c, row, 201);
    })
    .openapi(update("put"), (c) => updateOne(c, c.req.valid("param").id, c.req.valid("json")))
    .openapi(update("patch"), (c) => updateOne(c, c.req.valid("param").id, c.req.valid("json")))
    .openapi(deleteOne, async (c) => {
      const id = pathId(c.req.valid("param").id);
      const deleted = await c.var.db.asTenant(c.var.principal, (sql) => table.softDelete(sql, id));
      if (!deleted) throw notFound(noun);
      return message(c, `${noun} deleted`);
    });

  async function updateOne(c: Context<AppEnv>, rawId: string, values: unknown) {
    const id = pathId(rawId);
    const row = await c.var.db.asTenant(c.var.principal, (sql) => table.update(sql, id, values as Row));
    if (!row) throw notFound(noun);
    return ok(c, row);
  }
}
