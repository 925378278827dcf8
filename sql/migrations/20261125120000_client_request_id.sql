-- The audit trail's request_id is the server's own id of the request; a
-- client's X-Request-Id is kept beside it, marked as the client's. Before this,
-- a client's X-Request-Id became the request_id itself, so a caller could
-- choose it (collide with another request's, or name one it did not make).
--
-- The column's default reads the request's claims, where the API sets
-- client_request_id (functions/db/database.ts): every writer of the trail
-- (the change triggers, the care-read functions) records it without each
-- being rewritten. Existing events get null: their client id is unknown.
alter table public.audit_events
  add column client_request_id text default (private.audit_actor() ->> 'client_request_id');
comment on column public.audit_events.client_request_id is
  'The X-Request-Id the client sent, when it was a short safe token; request_id is the server''s own id.';

-- Readable by reporting roles on the table; reporting.audit_events keeps its columns, since a
-- later migration (room capacity) redefines that view with its own list.
grant select (client_request_id) on public.audit_events to camp_reporting;
