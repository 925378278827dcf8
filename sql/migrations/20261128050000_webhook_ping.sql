-- =============================================================================
-- Webhook ping: an admin asks for a signed `webhook.ping` to one endpoint, now,
-- to try a receiver without waiting for a real change. It is a delivery like
-- any other (listed, retried, redeliverable), enqueued directly rather than
-- from the feed: a ping is no change of the tenant's data, so it has no place
-- in public.events and no other endpoint receives it.
-- =============================================================================

-- Enqueues a ping to the endpoint, due now. Returns the delivery's id, or
-- null when the endpoint is not the calling admin's tenant's (or deleted);
-- raises CA409 for a disabled endpoint, which the workers would never serve.
-- Its event id is drawn from the audit trail's sequence, which numbers the
-- feed's events too: it can never equal a real event's id, so the
-- (endpoint_id, event_id) rule and receivers' de-duplication by webhook-id hold.
create function private.ping_webhook(p_endpoint uuid) returns uuid
  language plpgsql
  volatile
  security definer
  set search_path = ''
as $$
declare
  v_endpoint public.webhook_endpoints;
  v_delivery uuid;
begin
  if private.request_app_role() is distinct from 'admin' then
    return null;
  end if;
  select * into v_endpoint from public.webhook_endpoints w
  where w.id = p_endpoint and w.tenant_id = private.request_tenant_id() and w.deleted_at is null;
  if not found then
    return null;
  end if;
  if not v_endpoint.enabled then
    raise exception 'the webhook endpoint is disabled: enable it first' using errcode = 'CA409';
  end if;
  insert into public.webhook_deliveries (tenant_id, endpoint_id, event_id, event_type, resource_id, occurred_at)
  values (v_endpoint.tenant_id, v_endpoint.id, nextval(pg_get_serial_sequence('public.audit_events', 'id')),
          'webhook.ping', v_endpoint.id, now())
  returning id into v_delivery;
  return v_delivery;
end
$$;
revoke all on function private.ping_webhook(uuid) from public;
grant execute on function private.ping_webhook(uuid) to camp_api;

comment on function private.ping_webhook(uuid) is
  'An admin''s test delivery: a signed webhook.ping to one enabled endpoint of the caller''s tenant, due now.';
