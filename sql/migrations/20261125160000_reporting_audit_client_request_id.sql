-- Reporting roles see the client's own X-Request-Id beside the server's
-- request_id (20261125120000 added the column to the table). A view can only
-- gain columns at its end, so this restates the view of 20261125140000 with
-- client_request_id appended.
create or replace view reporting.audit_events with (security_invoker = true) as
  select id, occurred_at, actor_user_id, actor_email, actor_via, actor_key_id, request_id, action, resource_type, resource_id,
         private.audit_changes_of(action, changes) as changes, capacity_override, client_request_id
  from public.audit_events;
comment on view reporting.audit_events is
  'Who changed what and when in the tenant: one row per created, updated, deleted or erased record; changes as {field: [before, after]}; capacity_override when an admin placed a participant over a room''s capacity; request_id is the server''s id of the request, client_request_id the X-Request-Id the client sent.';
