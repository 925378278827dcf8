-- =============================================================================
-- Participant photos: which stored object is a participant's current photo
--
-- The bytes live in a PhotoStore (local files or Supabase Storage) under the
-- key <tenant_id>/<participant_id>/<sha256>.<ext>. The row records that key
-- with the photo's type, size and hash, and is updated in the same
-- transaction as photo_link, so the link never points at nothing.
-- =============================================================================

alter table public.participants
  add column photo_key          text,
  add column photo_content_type text
    constraint participants_photo_content_type_check
    check (photo_content_type in ('image/jpeg', 'image/png', 'image/gif', 'image/webp')),
  -- The contract's limit: 5 MB (5,242,880 bytes), after metadata is removed.
  add column photo_size         integer
    constraint participants_photo_size_check check (photo_size between 1 and 5242880),
  -- SHA-256 of the stored bytes: the object's name and the ETag it is served with.
  add column photo_sha256       text
    constraint participants_photo_sha256_check check (photo_sha256 ~ '^[0-9a-f]{64}$');

-- The four columns come together, and the key is exactly the one the row
-- implies: inside the row's own tenant and participant folder, named by its
-- hash, with the extension of its type. A key can never point at another
-- tenant's or another participant's object.
alter table public.participants
  add constraint participants_photo_key_check check (
    (photo_key is null and photo_content_type is null and photo_size is null and photo_sha256 is null)
    or photo_key = tenant_id::text || '/' || id::text || '/' || photo_sha256 || '.' ||
       case photo_content_type
         when 'image/jpeg' then 'jpg'
         when 'image/png' then 'png'
         when 'image/gif' then 'gif'
         when 'image/webp' then 'webp'
       end
  );

-- POST/GET /photos/user/{userId} accept a participant's user_id, which is
-- unique only per instance: this finds it across the caller's tenant.
create index participants_by_user_id on public.participants (tenant_id, user_id) where deleted_at is null;
