-- =============================================================================
-- Photo storage on Supabase: the private bucket and who may read it directly
--
-- Runs its body only where Supabase Storage exists (the storage schema); on a
-- plain Postgres (the embedded default, CI) it does nothing and photos are
-- kept as files. The API reaches Storage with the service-role key, which
-- bypasses these policies, and enforces the tenant itself. The policies are
-- for everyone else: a signed-in user whose JWT carries a tenant_id claim may
-- read their own tenant's photos (e.g. through a signed URL) and nothing more.
-- Nobody writes directly: uploads go through the API, the only place that
-- removes EXIF/GPS metadata from photos of children.
-- =============================================================================

do $$
begin
  if to_regclass('storage.buckets') is null or to_regclass('storage.objects') is null then
    raise notice 'no Supabase Storage schema here: the participant-photos bucket is not created';
    return;
  end if;

  -- Private; the limits repeat the API's, so even a service-role mistake cannot store more.
  insert into storage.buckets (id, name, public, file_size_limit, allowed_mime_types)
  values ('participant-photos', 'participant-photos', false, 5242880,
          array['image/jpeg', 'image/png', 'image/gif', 'image/webp'])
  on conflict (id) do update
    set public = false,
        file_size_limit = excluded.file_size_limit,
        allowed_mime_types = excluded.allowed_mime_types;

  -- Object names are <tenant_id>/<participant_id>/<sha256>.<ext>: the first
  -- folder is the tenant, compared with the caller's tenant claim.
  execute 'drop policy if exists "Tenant users read their tenant''s participant photos" on storage.objects';
  execute $policy$
    create policy "Tenant users read their tenant's participant photos" on storage.objects
      for select to authenticated
      using (
        bucket_id = 'participant-photos'
        and (storage.foldername(name))[1] = (select auth.jwt() ->> 'tenant_id')
      )
  $policy$;
end
$$;
