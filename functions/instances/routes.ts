import { crudRoutes } from "../resources/crud-routes.ts";
import { instances } from "./data.ts";
import { CreateInstance, Instance, InstanceQuery, UpdateInstance } from "./schemas.ts";

export const instanceRoutes = crudRoutes({
  noun: "instance",
  tag: "instances",
  record: Instance,
  create: CreateInstance,
  update: UpdateInstance,
  query: InstanceQuery,
  table: instances,
});
