-- =============================================================================
-- Participants: the per-instance count from the index alone
--
-- Every participant list returns its total, so the per-instance list (the
-- commonest call) counts the instance's live participants on every page.
-- Under RLS that count also checks each row's tenant_id, which the index did
-- not hold, so Postgres read every participant's heap row to count them (a
-- page per few participants). With tenant_id carried in the index the count
-- is an index-only scan.
-- =============================================================================

drop index public.participants_by_instance;
create index participants_by_instance on public.participants (instance_id, created_at, id) include (tenant_id)
  where deleted_at is null;
