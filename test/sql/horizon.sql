-- uid_safe_horizon(): each transaction that issues IDs holds one mark (a
-- shared advisory lock of key kind 5) from before its first ID to its end,
-- through an aborted subtransaction and into PREPARE TRANSACTION; the
-- horizon stays below the first ID of every open transaction and below any
-- ID issued after it.
SET client_min_messages = warning;
\set VERBOSITY terse
CREATE VIEW horizon_marks AS
	SELECT count(*) AS marks FROM pg_locks
	 WHERE locktype = 'advisory' AND objsubid = 5 AND database = (SELECT oid FROM pg_database
																   WHERE datname = current_database());
-- A worker's claim commits first: a transaction that wrote it cannot be prepared.
SELECT uid_next() > 0 AS issued;
SELECT uid_safe_horizon() < uid_next() AS below_the_next_id;
SELECT marks FROM horizon_marks;
BEGIN;
SAVEPOINT s;
SELECT uid_next() AS first \gset
ROLLBACK TO SAVEPOINT s;
SELECT marks AS kept_after_the_subtransaction FROM horizon_marks;
SELECT count(*) FROM uid_next_batch(1000);
SELECT uid_safe_horizon() < :first AS below_the_first_id;
PREPARE TRANSACTION 'uidgen_horizon';
SELECT marks AS carried_by_prepare FROM horizon_marks;
SELECT uid_safe_horizon() < :first AS still_below_the_first_id;
SELECT uid_next() > :first AS later_ids_are_above;
COMMIT PREPARED 'uidgen_horizon';
SELECT marks AS released FROM horizon_marks;
-- One mark per transaction, however many IDs it takes; none for a transaction without IDs.
BEGIN;
SELECT count(*) FROM uid_next_batch(10);
SELECT uid_next() > 0 AS issued;
SELECT marks FROM horizon_marks;
COMMIT;
BEGIN;
SELECT uid_safe_horizon() IS NOT NULL AS computed;
SELECT marks FROM horizon_marks;
ROLLBACK;
DROP VIEW horizon_marks;
