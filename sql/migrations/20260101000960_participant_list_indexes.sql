-- =============================================================================
-- Participants: every list shape served by an index
--
-- The status filter, across the tenant and within an instance (found with
-- bench/explain-participants.ts, which fails on a sequential scan of
-- participants). Search and sorting: *_participant_search_and_sort.sql.
-- =============================================================================

-- status=... across the tenant and within an instance, in list order; the
-- counts are index-only scans of these.
create index participants_by_status on public.participants (tenant_id, status, created_at, id) where deleted_at is null;
create index participants_by_instance_status on public.participants (instance_id, status, created_at, id)
  where deleted_at is null;
