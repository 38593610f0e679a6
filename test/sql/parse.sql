-- Decoding: uid_parse() in both forms, uid_parse_json(), the field functions, uid_min() and uid_max().
SET client_min_messages = warning;
SET timezone = 'UTC';

-- Round trips under the database's layout (41/13/9 ms since 2026-01-01 UTC).
SELECT * FROM uid_parse(0);
SELECT * FROM uid_parse((1::bigint << 22) | (5 << 9) | 7);
SELECT * FROM uid_parse(9223372036854775807);
SELECT uid_timestamp(id), uid_worker_id(id), uid_sequence(id)
  FROM (VALUES ((123456789::bigint << 22) | (8191 << 9) | 511)) v(id);

-- Every field at its maximum decodes exactly, with no bleed into its neighbour.
SELECT (uid_parse(((2::bigint << 40) - 1) << 22)).worker_id AS worker_when_time_max,
       (uid_parse(8191::bigint << 9)).sequence AS seq_when_worker_max,
       (uid_parse(511)).worker_id AS worker_when_seq_max;

-- uid_min() and uid_max() bound one millisecond's IDs exactly.
SELECT uid_min('2026-11-22 10:00:00.123+00') AS min_id, uid_max('2026-11-22 10:00:00.123+00') AS max_id,
       uid_max('2026-11-22 10:00:00.123+00') - uid_min('2026-11-22 10:00:00.123+00') + 1 = 8192 * 512
           AS one_unit,
       uid_max('2026-11-22 10:00:00.123+00') + 1 = uid_min('2026-11-22 10:00:00.124+00') AS adjacent,
       uid_timestamp(uid_min('2026-11-22 10:00:00.123999+00')) AS unit_start;

-- uid_parse_json(): UidGenerator's parseUID() shape, time in the session's zone.
SELECT uid_parse_json((1000::bigint << 22) | (4 << 9) | 9);
SET timezone = 'Asia/Shanghai';
SELECT uid_parse_json((1000::bigint << 22) | (4 << 9) | 9) ->> 'timestamp' AS shanghai_time;
SET timezone = 'UTC';

-- Foreign layouts.  An ID from UidGenerator's default 28/22/13 seconds since
-- 2016-05-20 UTC+8: delta 21171, worker 4, sequence 9 is 2016-05-20 05:52:51 UTC+8.
SELECT * FROM uid_parse((21171::bigint << 35) | (4 << 13) | 9, 28, 22, 13, '2016-05-20 00:00:00+08', 'second');
-- Twitter's Snowflake: 41/10/12 milliseconds since 2010-11-04 01:42:54.657 UTC.
SELECT * FROM uid_parse((1000::bigint << 22) | (1 << 12) | 2, 41, 10, 12,
                        '2010-11-04 01:42:54.657+00', 'millisecond');
-- The unit defaults to milliseconds.
SELECT (uid_parse(4194304, 41, 10, 12, '2026-01-01 00:00:00+00')).timestamp;

-- Bigints that are not UIDs of the layout.
SELECT regress.try('SELECT uid_parse(-1)');
SELECT regress.try('SELECT uid_parse(-9223372036854775808)');
SELECT regress.try($$SELECT uid_parse(1::bigint << 62, 40, 10, 12, '2026-01-01')$$);
SELECT regress.try($$SELECT uid_parse(1, 41, 10, 13, '2026-01-01')$$);
SELECT regress.try($$SELECT uid_parse(1, 0, 10, 12, '2026-01-01')$$);
SELECT regress.try($$SELECT uid_parse(1, 41, 10, 12, '2026-01-01', 'minute')$$);
SELECT regress.try($$SELECT uid_parse(1, 41, 10, 12, 'infinity')$$);
SELECT regress.try('SELECT uid_timestamp(-5)');
SELECT regress.try('SELECT uid_worker_id(-5)');
SELECT regress.try('SELECT uid_sequence(-5)');
SELECT regress.try('SELECT uid_parse_json(-5)');
-- Layouts whose time runs beyond timestamptz.
SELECT regress.try($$SELECT uid_parse(9223372036854775807, 61, 1, 1, '2026-01-01', 'second')$$);
SELECT regress.try($$SELECT uid_min('2025-12-31 23:59:59.999+00')$$);
SELECT regress.try($$SELECT uid_max('2100-01-01')$$);
SELECT regress.try($$SELECT uid_min('infinity')$$);

-- STRICT: NULL in, NULL out.
SELECT uid_parse(NULL) IS NULL, uid_timestamp(NULL) IS NULL, uid_min(NULL) IS NULL, uid_parse_json(NULL) IS NULL;

-- The field functions are indexable.
CREATE TABLE events (id bigint PRIMARY KEY DEFAULT uid_next());
CREATE INDEX events_time ON events (uid_timestamp(id));
INSERT INTO events SELECT FROM generate_series(1, 100);
SELECT count(*) FROM events WHERE id BETWEEN uid_min(now() - interval '1 hour') AND uid_max(clock_timestamp() + interval '1 minute');
DROP TABLE events;
