-- Uploads in progress, so that `camp photos sweep` never deletes a photo a
-- row is about to point at.
--
-- An upload stores the object first and points the participant at it after,
-- in another transaction. Between the two, the object belongs to no row. The
-- upload therefore commits its key here before it writes the object, and
-- removes it in the transaction that points the row at the object. The sweep
-- lists the store first and then, in one snapshot, reads the rows and this
-- table: any object it listed was written after its intent committed, so the
-- snapshot sees either the intent or the row that now holds the key.
create table public.photo_uploads (
  key        text primary key,
  tenant_id  uuid not null default private.request_tenant_id() references public.tenants (id) on delete cascade,
  started_at timestamptz not null default now()
);

comment on table public.photo_uploads is
  'Photo objects being uploaded: written before the object is stored, removed when the participant row points at it. camp photos sweep keeps every key listed here (an intent older than a day is a crashed upload and is ignored).';

create index photo_uploads_tenant_id on public.photo_uploads (tenant_id);

alter table public.photo_uploads enable row level security;
create policy "API callers record the uploads of their tenant" on public.photo_uploads
  for all to camp_api
  using (tenant_id = (select private.request_tenant_id()))
  with check (tenant_id = (select private.request_tenant_id()));
grant select, insert, delete on public.photo_uploads to camp_api;
