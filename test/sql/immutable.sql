-- uid_timestamp(), uid_worker_id() and uid_sequence() (and uid_min(),
-- uid_max(), uid_interval()) are IMMUTABLE, so that they can be indexed, but
-- read the layout from uidgen.config.  While no
-- worker has registered, uid_configure may still change the layout; it
-- refuses while objects depend on these functions, so that an index built
-- on imported IDs cannot silently go wrong (INV-7 of docs/design.md).
-- Runs before any worker registers.
SET client_min_messages = warning;

-- Like regress.try, with the error's detail.
CREATE FUNCTION pg_temp.refused(sql text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	state text;
	message text;
	detail text;
	hint text;
BEGIN
	EXECUTE sql;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, message = MESSAGE_TEXT, detail = PG_EXCEPTION_DETAIL,
	                        hint = PG_EXCEPTION_HINT;
	RETURN state || ': ' || message || E'\nDETAIL: ' || detail || E'\nHINT: ' || hint;
END
$$;

SELECT count(*) AS workers FROM uidgen.worker_node;

-- IDs imported from the Java library, made with UidGenerator's shape of
-- layout: 30 bits of seconds since 2026-01-01 UTC, 20 worker bits, 13
-- sequence bits.  Row i: 2026-03-01 00:00 UTC plus i minutes, worker
-- i % 7 + 1, sequence i % 100.
SELECT time_bits, worker_bits, seq_bits, unit
  FROM uid_configure(30, 20, 13, '2026-01-01 00:00:00+00', 'second');
CREATE TABLE imported (id bigint PRIMARY KEY, i int NOT NULL);
INSERT INTO imported
SELECT ((5097600 + i * 60)::bigint << 33) | ((i % 7 + 1)::bigint << 13) | (i % 100), i
  FROM generate_series(0, 999) i;
SELECT i, uid_timestamp(id) AT TIME ZONE 'UTC' AS utc, uid_worker_id(id), uid_sequence(id)
  FROM imported WHERE i IN (0, 650, 999) ORDER BY i;

-- An expression index: the layout can no longer change.
CREATE INDEX imported_time ON imported (uid_timestamp(id));
SELECT pg_temp.refused($$SELECT uid_configure()$$);
SELECT pg_temp.refused($$SELECT uid_configure(31, 20, 12, '2026-01-01 00:00:00+00', 'second')$$);
-- Confirming the layout in force is still allowed.
SELECT time_bits, worker_bits, seq_bits, unit, configurable
  FROM uid_configure(30, 20, 13, '2026-01-01 00:00:00+00', 'second');

-- A generated column.
ALTER TABLE imported ADD COLUMN worker bigint GENERATED ALWAYS AS (uid_worker_id(id)) STORED;
SELECT pg_temp.refused($$SELECT uid_configure()$$);

-- A check constraint.
ALTER TABLE imported ADD CONSTRAINT imported_sequence_check CHECK (uid_sequence(id) < 100);
SELECT pg_temp.refused($$SELECT uid_configure()$$);

-- Nothing changed.
SELECT time_bits, worker_bits, seq_bits, epoch AT TIME ZONE 'UTC' AS epoch_utc, unit FROM uidgen.config;

-- The index still returns the right rows: 10:00 to 11:00 holds rows 600 to 659.
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM imported
 WHERE uid_timestamp(id) >= '2026-03-01 10:00:00+00' AND uid_timestamp(id) < '2026-03-01 11:00:00+00';
SELECT count(*), min(i), max(i) FROM imported
 WHERE uid_timestamp(id) >= '2026-03-01 10:00:00+00' AND uid_timestamp(id) < '2026-03-01 11:00:00+00';
RESET enable_seqscan;
RESET enable_bitmapscan;
-- The same without the index, and the generated column agrees with a fresh computation.
SET enable_indexscan = off;
SET enable_bitmapscan = off;
SELECT count(*), min(i), max(i) FROM imported
 WHERE uid_timestamp(id) >= '2026-03-01 10:00:00+00' AND uid_timestamp(id) < '2026-03-01 11:00:00+00';
RESET enable_indexscan;
RESET enable_bitmapscan;
SELECT count(*) FILTER (WHERE worker = i % 7 + 1) AS workers_right, count(*) AS all_rows FROM imported;

-- A view counts too; dropping objects one by one leaves the layout fixed
-- until the last is gone.
CREATE VIEW imported_workers AS SELECT uid_worker_id(id) AS worker FROM imported;
SELECT pg_temp.refused($$SELECT uid_configure()$$);
DROP VIEW imported_workers;
ALTER TABLE imported DROP CONSTRAINT imported_sequence_check;
SELECT pg_temp.refused($$SELECT uid_configure()$$);
ALTER TABLE imported DROP COLUMN worker;
SELECT pg_temp.refused($$SELECT uid_configure()$$);
DROP INDEX imported_time;

-- uid_min(), uid_max() and uid_interval() read the layout too and are
-- IMMUTABLE under the same guard: a partial index by time, a check
-- constraint on a width of IDs.
CREATE INDEX imported_march ON imported (id)
 WHERE id >= uid_min('2026-03-01 00:00:00+00') AND id <= uid_max('2026-03-31 23:59:59+00');
SELECT pg_temp.refused($$SELECT uid_configure()$$);
DROP INDEX imported_march;
ALTER TABLE imported ADD CONSTRAINT imported_span CHECK (id < uid_interval('3650 days'));
SELECT pg_temp.refused($$SELECT uid_configure()$$);
ALTER TABLE imported DROP CONSTRAINT imported_span;

-- Nothing depends on them now: the layout changes (back to the default).
SELECT time_bits, worker_bits, seq_bits, unit, configurable FROM uid_configure();
SELECT time_bits, worker_bits, seq_bits, epoch AT TIME ZONE 'UTC' AS epoch_utc, unit FROM uidgen.config;
-- Under it the same IDs decode differently: what the index would have got wrong.
SELECT i, uid_timestamp(id) AT TIME ZONE 'UTC' AS utc, uid_worker_id(id), uid_sequence(id)
  FROM imported WHERE i = 650;
DROP TABLE imported;
SELECT count(*) AS workers FROM uidgen.worker_node;
