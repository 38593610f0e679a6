-- docs/design.md, INV-4: after a backend's first call, uid_next() touches no
-- table (no SPI), takes no lock but the transaction's horizon mark, and writes nothing.
SET client_min_messages = warning;
-- A backend raises the time reservation once per window of 10 s of time
-- units; reserve an hour ahead, so that the first call adopts it and no
-- raise falls inside the measured block however slow the machine.
SELECT setval('uidgen.reserved_until', (uid_min(clock_timestamp()) >> 22) + 3600000) > 0 AS reserved_ahead;
SELECT uid_next() > 0 AS registered;	-- the first call registers, and commits its claim

CREATE TEMP VIEW uidgen_table_activity AS
SELECT coalesce(sum(seq_scan + coalesce(idx_scan, 0) + n_tup_ins + n_tup_upd + n_tup_del), 0) AS activity
  FROM pg_stat_xact_user_tables WHERE schemaname = 'uidgen';
CREATE TEMP VIEW my_lock_count AS
SELECT count(*) AS locks FROM pg_locks WHERE pid = pg_backend_pid();

BEGIN;
-- The transaction's first ID takes its one lock, the mark uid_safe_horizon() reads (horizon.sql).
SELECT uid_next() > 0 AS marked;
-- Each query runs once before, so that its own catalog locks are already held.
SELECT activity AS activity_before FROM uidgen_table_activity \gset
SELECT locks AS locks_before FROM my_lock_count \gset
SELECT count(uid_next()) AS ids FROM generate_series(1, 100000);
SELECT count(*) AS ids FROM uid_next_batch(100000);
SELECT locks = :locks_before AS no_new_locks FROM my_lock_count;
SELECT activity = :activity_before AS no_table_access FROM uidgen_table_activity;
SELECT pg_current_xact_id_if_assigned() IS NULL AS wrote_nothing;
COMMIT;
