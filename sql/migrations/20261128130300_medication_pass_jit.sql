-- =============================================================================
-- The medication pass and the overdue sweep without JIT compilation
--
-- private.scheduled_doses expands each medication into its doses with
-- generate_series and unnest, which the planner counts at 1,000 and 100 rows
-- apiece whatever the window: an instance's pass was estimated past
-- jit_above_cost (100,000, the default) and compiled before it ran. Compiling
-- took 1.3–2.1 s on the bench machine for a query that runs in about 15 ms
-- (bench:health, 500 participants, 300 medications); the overdue sweep, run by
-- every webhook worker each minute over every tenant, paid the same. The two
-- functions that run the query turn JIT off for their own statements.
-- =============================================================================

alter function private.medication_pass(uuid, timestamptz, int) set jit = off;
alter function private.raise_overdue_doses(timestamptz) set jit = off;
