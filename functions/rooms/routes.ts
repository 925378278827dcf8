import { crudRoutes } from "../resources/crud-routes.ts";
import { rooms } from "./data.ts";
import { CreateRoom, Room, RoomQuery, UpdateRoom } from "./schemas.ts";

export const roomRoutes = crudRoutes({
  noun: "room",
  tag: "rooms",
  record: Room,
  create: CreateRoom,
  update: UpdateRoom,
  query: RoomQuery,
  table: rooms,
});
