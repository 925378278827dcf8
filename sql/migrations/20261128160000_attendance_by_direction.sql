-- =============================================================================
-- The movement list filtered on direction alone, through an index
--
-- GET /attendance?direction=in (or out) without an instance or a participant
-- counted its total by reading every movement of the table: no index held
-- the direction, so the tenant's check-ins could only be told from its
-- check-outs in the rows themselves (bench:explain, 196,000 movements of a
-- tenant). This index answers the total from the index alone and gives the
-- page in the list's order (recorded_at, nonce) within one direction.
-- =============================================================================

create index attendance_movements_by_direction
  on public.attendance_movements (tenant_id, direction, recorded_at, nonce);
