import { crudRoutes } from "../resources/crud-routes.ts";
import { subgroups, supergroups } from "./data.ts";
import {
  CreateSubgroup,
  CreateSupergroup,
  Subgroup,
  SubgroupQuery,
  Supergroup,
  SupergroupQuery,
  UpdateSubgroup,
  UpdateSupergroup,
} from "./schemas.ts";

export const supergroupRoutes = crudRoutes({
  noun: "supergroup",
  tag: "supergroups",
  record: Supergroup,
  create: CreateSupergroup,
  update: UpdateSupergroup,
  query: SupergroupQuery,
  table: supergroups,
});

export const subgroupRoutes = crudRoutes({
  noun: "subgroup",
  tag: "subgroups",
  record: Subgroup,
  create: CreateSubgroup,
  update: UpdateSubgroup,
  query: SubgroupQuery,
  table: subgroups,
});
