\pset footer off
-- uidgen in one screen: Snowflake IDs from a column default.
CREATE EXTENSION uidgen;

-- The layout: 41-bit milliseconds since 2026-01-01 UTC, 13-bit worker, 9-bit sequence.
SELECT time_bits, worker_bits, seq_bits, unit, max_worker_id, ids_per_unit,
       exhausted_at, round(years_left::numeric, 1) AS years_left
  FROM uid_layout();

-- A table keyed by uid_next(), like a serial column but without a shared sequence.
CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT uid_next(), item text);
INSERT INTO orders (item) VALUES ('book'), ('pen'), ('lamp') RETURNING id, (uid_parse(id)).*;

-- This session is one worker of the registry that mirrors UidGenerator's WORKER_NODE.
SELECT id, host_name, port, type, status, pid = pg_backend_pid() AS this_session
  FROM uidgen.worker_node;

-- The time reservation: on disk before any ID beyond it is issued, so a
-- crash followed by a clock set back cannot make this worker's past look unused.
SELECT uid_timestamp(uid_lastval()) AS last_id_time,
       (SELECT last_value FROM uidgen.reserved_until) - (uid_lastval() >> 22) AS reserved_ms_ahead;

-- IDs in bulk, and UidGenerator's parseUID() shape.
SELECT count(*) AS ids, min(id) < max(id) AS increasing FROM uid_next_batch(100000) AS b(id);
SELECT uid_parse_json(id) FROM orders ORDER BY id LIMIT 1;

-- Time-range scans use the primary key.
SELECT count(*) AS orders_this_minute FROM orders
 WHERE id BETWEEN uid_min(date_trunc('minute', now())) AND uid_max(clock_timestamp());

-- IDs from Baidu's UidGenerator (28/22/13 seconds since 2016-05-20 UTC+8) decode too.
SELECT * FROM uid_parse(727430021021705, 28, 22, 13, '2016-05-20 00:00:00+08', 'second');
