-- Generation: uid_next(), uid_next_batch(), uid_lastval(), uid_current_worker().
SET client_min_messages = warning;

-- Before the first ID.
SELECT uid_current_worker() IS NULL AS no_worker_yet;
SELECT regress.try('SELECT uid_lastval()');

-- A read-only transaction cannot register, as nextval() cannot write.
BEGIN READ ONLY;
SELECT regress.try('SELECT uid_next()');
ROLLBACK;

-- The first ID registers this backend as a worker.
CREATE TEMP TABLE ids AS SELECT uid_next() AS id;
SELECT uid_current_worker() IS NOT NULL AS has_worker;
SELECT id = uid_lastval() AS lastval_matches FROM ids;
SELECT status, pid = pg_backend_pid() AS mine, role = session_user AS role_ok,
       host_name <> '' AS has_host, port = current_setting('port') AS port_ok, type IN (1, 2) AS type_ok,
       launch_date = current_date AS launched_today
  FROM uidgen.worker_node WHERE id = uid_current_worker();

-- IDs strictly increase within a backend, decode to this worker, and to now.
INSERT INTO ids SELECT uid_next() FROM generate_series(1, 20000);
SELECT count(*) AS ids, count(DISTINCT id) AS distinct_ids FROM ids;
SELECT bool_and(id > prev) AS strictly_increasing
  FROM (SELECT id, lag(id) OVER (ORDER BY ctid) AS prev FROM ids) s WHERE prev IS NOT NULL;
SELECT bool_and(uid_worker_id(id) = uid_current_worker()) AS own_worker,
       bool_and(uid_timestamp(id) BETWEEN now() - interval '1 minute' AND clock_timestamp() + interval '10 s')
           AS time_ok,
       max(uid_sequence(id)) < 512 AS sequence_in_range
  FROM ids;

-- uid_next_batch(): n IDs in increasing order, after everything before.
SELECT count(*) AS batch, bool_and(id > (SELECT max(id) FROM ids)) AS after_previous
  FROM uid_next_batch(1000) AS b(id);
SELECT count(*) FROM uid_next_batch(0);
SELECT regress.try('SELECT uid_next_batch(-1)');
SELECT regress.try('SELECT uid_next_batch(1000001)');
SELECT count(*) AS strict_null_batch FROM uid_next_batch(NULL);
SELECT max(b) AS last_of_batch FROM uid_next_batch(3) b \gset
SELECT uid_lastval() = :last_of_batch AS lastval_is_last_of_batch;

-- As a column default.
CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT uid_next(), item text);
INSERT INTO orders (item) SELECT 'item ' || g FROM generate_series(1, 1000) g;
SELECT count(*), count(DISTINCT id), bool_and(uid_worker_id(id) = uid_current_worker()) FROM orders;
INSERT INTO orders (item) VALUES ('book') RETURNING id = uid_lastval() AS returned_lastval,
       (uid_parse(id)).worker_id = uid_current_worker() AS parsed_worker;

-- Both generators, and switching between them, keep increasing.
SET uidgen.generator = 'default';
SELECT uid_next() > (SELECT max(id) FROM orders) AS default_after_cached;
CREATE TEMP TABLE more AS SELECT uid_next() AS id, g FROM generate_series(1, 5000) g;
SET uidgen.generator = 'cached';
INSERT INTO more SELECT uid_next(), 5000 + g FROM generate_series(1, 5000) g;
SELECT bool_and(id > prev) AS increasing_across_switches
  FROM (SELECT id, lag(id) OVER (ORDER BY g) AS prev FROM more) s WHERE prev IS NOT NULL;
SELECT regress.try($$SET uidgen.generator = 'ring'$$);
RESET uidgen.generator;

-- The other settings: max_borrow is server-wide, worker_reuse for superusers.
SET uidgen.max_backwards_wait = '250ms';
SHOW uidgen.max_backwards_wait;
RESET uidgen.max_backwards_wait;
-- 17 on name the unit in the range too: "(0 ms .. 3600000 ms)".
SELECT regexp_replace(regress.try($$SET uidgen.max_backwards_wait = -1$$), ' ms( \.\.|\))', '\1', 'g') AS try;
SELECT regress.try($$SET uidgen.max_borrow = '1s'$$);
SET uidgen.worker_reuse = off;
SHOW uidgen.worker_reuse;
RESET uidgen.worker_reuse;

-- The worker row stays this backend's, and is committed.
SELECT status, pid = pg_backend_pid() AS mine FROM uidgen.worker_node WHERE id = uid_current_worker();
SELECT count(*) AS locks_held FROM pg_locks
 WHERE pid = pg_backend_pid() AND locktype IN ('object', 'advisory') AND objid = uid_current_worker()
   AND classid = 'uidgen.worker_node'::regclass AND granted;
DROP TABLE orders;
