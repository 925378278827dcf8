-- =============================================================================
-- The incident list plans each call for its own filters
--
-- private.incidents filters with `v_instance is null or i.instance_id =
-- v_instance` (and the same for the participant). Requests run with
-- plan_cache_mode = force_generic_plan, which reaches PL/pgSQL's statements:
-- a generic plan keeps both sides of each `or`, so no index could serve the
-- total, which read every tenant's incidents (bench:explain at 100,000
-- participants). Planned for the call's own values, the `is null` tests fold
-- away: an instance's or a participant's incidents come through their
-- indexes, and a participant's `in` becomes a join.
-- =============================================================================

alter function private.incidents(jsonb, int, int) set plan_cache_mode = force_custom_plan;
