import { crudRoutes } from "../resources/crud-routes.ts";
import { blocks } from "./data.ts";
import { Block, BlockQuery, CreateBlock, UpdateBlock } from "./schemas.ts";

export const blockRoutes = crudRoutes({
  noun: "block",
  tag: "blocks",
  record: Block,
  create: CreateBlock,
  update: UpdateBlock,
  query: BlockQuery,
  table: blocks,
});
