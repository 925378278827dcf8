-- Idempotent retries: a POST with an Idempotency-Key stores its answer here in
-- the same transaction as its write (functions/http/idempotency.ts), so an
-- answer exists exactly when the write committed. A retry with the same key
-- and the same request gets the stored answer back and writes nothing.
create table public.idempotency_keys (
  tenant_id    uuid not null default private.request_tenant_id() references public.tenants (id) on delete cascade,
  user_id      uuid not null,
  key          text not null constraint idempotency_keys_key_check check (key ~ '^[!-~]{1,255}$'),
  -- SHA-256 of the method, path, query, content type and body of the first request.
  request_hash text not null,
  status       int not null,
  headers      jsonb not null default '{}',
  body         text not null,
  created_at   timestamptz not null default now(),
  expires_at   timestamptz not null default now() + interval '24 hours',
  primary key (tenant_id, user_id, key),
  constraint idempotency_keys_user_id_fkey foreign key (tenant_id, user_id) references public.users (tenant_id, id) on delete cascade
);

comment on table public.idempotency_keys is
  'The stored answers of POSTs sent with an Idempotency-Key, per tenant and user, for 24 hours. Expired rows are pruned a few at a time by later keyed requests of the tenant.';

create index idempotency_keys_expires_at on public.idempotency_keys (tenant_id, expires_at);

alter table public.idempotency_keys enable row level security;
create policy "API callers keep the idempotency keys of their tenant" on public.idempotency_keys
  for all to camp_api
  using (tenant_id = (select private.request_tenant_id()))
  with check (tenant_id = (select private.request_tenant_id()));
grant select, insert, update, delete on public.idempotency_keys to camp_api;
