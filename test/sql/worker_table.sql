-- The worker table: the claim is durable before it matters, and held for life.
SET client_min_messages = warning;

-- A worker taken over from the claim pool may still name the pool: the pool
-- committed its claim, and the backend's renaming of the row is cosmetic,
-- undone with the savepoint it was written in.  Either names its holder.
CREATE VIEW regress.my_worker AS
SELECT w.status, w.pid = pg_backend_pid() OR w.application_name = 'uidgen claim pool' AS mine
  FROM uidgen.worker_node w WHERE w.id = uid_current_worker();
CREATE VIEW regress.my_locks AS
SELECT count(*) AS locks FROM pg_locks
 WHERE pid = pg_backend_pid() AND granted AND classid = 'uidgen.worker_node'::regclass
   AND objid = uid_current_worker() AND locktype IN ('object', 'advisory');

-- A claim written inside a rolled-back savepoint is written again.
BEGIN;
SAVEPOINT s;
SELECT uid_next() > 0 AS issued;
ROLLBACK TO SAVEPOINT s;
SELECT uid_next() > 0 AS issued_again;
COMMIT;
SELECT * FROM regress.my_worker;

-- The claim survives a later rollback, and the locks survive aborts.
BEGIN;
SELECT uid_next() > 0;
SELECT 1 / 0;
ROLLBACK;
SELECT * FROM regress.my_worker;
SELECT * FROM regress.my_locks;

-- ... and DISCARD ALL and pg_advisory_unlock_all(), which poolers send.
DISCARD ALL;
SELECT * FROM regress.my_locks;
SELECT pg_advisory_unlock_all();
SELECT * FROM regress.my_locks;
BEGIN;
SELECT pg_advisory_unlock_all();
SELECT 1 / 0;
ROLLBACK;
SELECT * FROM regress.my_locks;
SELECT * FROM regress.my_worker;

-- Two-phase commit once the claim is durable: fine.
BEGIN;
SELECT uid_next() > 0 AS issued;
PREPARE TRANSACTION 'uidgen_regress';
SELECT count(*) AS prepared FROM pg_prepared_xacts WHERE gid = 'uidgen_regress';
COMMIT PREPARED 'uidgen_regress';
SELECT * FROM regress.my_locks;

-- Another backend's worker is never ours to reclaim while it lives.
SELECT regress.try($$SELECT uid_reclaim_workers('-1 second')$$);
SELECT regress.try($$SELECT uid_reclaim_workers('2 years')$$);
SELECT uid_reclaim_workers('0') AS reclaimed_live;
SELECT * FROM regress.my_worker;
SELECT uid_reclaim_workers(NULL) IS NULL AS strict;
