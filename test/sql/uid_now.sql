-- uid_now(): the largest ID of the time unit the statement started in, for
-- TimescaleDB's set_integer_now_func (which compares it with an ID column).
SET client_min_messages = warning;

SELECT p.provolatile AS volatility, p.proparallel AS parallel
  FROM pg_proc p WHERE p.oid = 'uid_now()'::regprocedure;

-- It is uid_max() of the statement's start.
SELECT uid_now() = uid_max(statement_timestamp()) AS is_uid_max_of_statement_start;

-- At or above every ID this session issued before the statement (it did not borrow: a few IDs a unit) ...
CREATE TEMP TABLE ids AS SELECT uid_next() AS id FROM generate_series(1, 100);
SELECT uid_now() >= max(id) AS at_or_above_every_earlier_id FROM ids;
-- ... and below every ID issued in a later unit.
SELECT uid_now() AS now_id \gset
SELECT pg_sleep(0.01);
SELECT uid_next() > :now_id AS below_a_later_id;

-- One value within a statement (STABLE).
SELECT count(DISTINCT uid_now()) AS values_in_one_statement FROM generate_series(1, 1000);

-- A borrowed ID may be above it: IDs of a unit used up run ahead of the clock, at most uidgen.max_borrow.
CREATE TEMP TABLE burst AS SELECT uid_next() AS id FROM generate_series(1, 20000);
SELECT max(id) <= uid_max(statement_timestamp() + current_setting('uidgen.max_borrow')::interval)
           AS within_max_borrow
  FROM burst;
