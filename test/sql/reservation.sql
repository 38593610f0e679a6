-- The time reservation: uidgen.reserved_until covers every time unit issued,
-- is raised ahead of need rather than on every call, and is not lowered by a
-- rollback (a sequence is not transactional).
SET client_min_messages = warning;

-- Readable by everyone, written by no one but the extension's owner.
SELECT has_sequence_privilege('public', 'uidgen.reserved_until', 'SELECT') AS public_reads,
       has_sequence_privilege('public', 'uidgen.reserved_until', 'UPDATE') AS public_writes;

-- As in a new database (hot_path.sql reserved an hour ahead in this one).
SELECT setval('uidgen.reserved_until', -1) AS reset;
SELECT uid_next() > 0 AS issued;
SELECT last_value AS mark FROM uidgen.reserved_until \gset
-- Ahead of the last ID by up to the window of 10 seconds (default layout: milliseconds).
SELECT :mark >= uid_lastval() >> 22 AS covers_last_id,
       :mark - (uid_lastval() >> 22) BETWEEN 1 AND 10000 AS within_window;

-- 10,000 more IDs take about 20 ms of time units: still inside the window, no raise.
SELECT count(uid_next()) FROM generate_series(1, 10000);
SELECT last_value = :mark AS not_raised, last_value >= uid_lastval() >> 22 AS still_covers
  FROM uidgen.reserved_until;

-- Rolled back: the mark stays.
BEGIN;
SELECT setval('uidgen.reserved_until', :mark + 1) IS NOT NULL AS raised_in_transaction;
ROLLBACK;
SELECT last_value = :mark + 1 AS kept_after_rollback FROM uidgen.reserved_until;

-- An ordinary role cannot move it.
CREATE ROLE regress_reservation_user;
SET ROLE regress_reservation_user;
SELECT regress.try($$SELECT setval('uidgen.reserved_until', 0)$$);
RESET ROLE;
DROP ROLE regress_reservation_user;

-- A worker leaked by a crash is released no lower than the mark, whatever the clock says:
-- simulate the leak by marking a worker active under a pid that no backend has.
INSERT INTO uidgen.worker_node (id, host_name, port, type, launch_date, modified, created, pid, status, origin)
VALUES (4000, 'gone', '5432', 2, current_date, now(), now(), 0, 'active', uidgen.database_identity());
SELECT setval('uidgen.reserved_until', (uid_lastval() >> 22) + 3600000) AS mark \gset
SELECT uid_reclaim_workers('0') AS reclaimed;
SELECT last_time = :mark AS floor_is_the_mark, last_time > (uid_min(clock_timestamp()) >> 22) + 3500000 AS far_ahead
  FROM uidgen.worker_node WHERE id = 4000;
DELETE FROM uidgen.worker_node WHERE id = 4000;
