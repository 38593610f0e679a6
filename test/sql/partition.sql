-- Partitioning a uid_next() key by time: uid_interval(), and declarative
-- partitions by day whose bounds are uid_min() of midnights.
SET client_min_messages = warning;
SET timezone = 'UTC';

-- Under the default layout a day is 86,400,000 milliseconds of 2^22 IDs each.
SELECT uid_interval('1 day') AS day, uid_interval('1 day') = 86400000::bigint << 22 AS exact,
       uid_interval('24 hours') = uid_interval('1 day') AS hours,
       uid_interval('1 week') = 7 * uid_interval('1 day') AS week,
       uid_interval('1 millisecond') AS one_unit, uid_interval('1 day -1 ms') = uid_interval('1 day') - 4194304 AS mixed;
-- The width is the distance between uid_min() of the span's ends.
SELECT uid_min('2026-06-10 12:00') - uid_min('2026-06-03 12:00') = uid_interval('7 days') AS distance;

-- The default epoch is midnight UTC (2026-01-01 00:00:00+00): every UTC day
-- starts at a multiple of the day's width, counted from the epoch.
SELECT d::date AS day, uid_min(d) / uid_interval('1 day') AS days_since_epoch,
       uid_min(d) % uid_interval('1 day') AS remainder
  FROM generate_series('2026-01-01'::timestamptz, '2027-01-01', '73 days') d;
-- Midnight of another zone is not.
SELECT uid_min('2026-03-01 00:00+01') % uid_interval('1 day') = uid_interval('23 hours') AS paris_midnight;

-- Spans without a fixed length, not positive, not whole units, or too long.
SELECT regress.try($$SELECT uid_interval('1 month')$$, true);
SELECT regress.try($$SELECT uid_interval('1 year 2 days')$$, true);
SELECT regress.try($$SELECT uid_interval('0')$$, true);
SELECT regress.try($$SELECT uid_interval('-1 day')$$, true);
SELECT regress.try($$SELECT uid_interval('1 day -25 hours')$$, true);
SELECT regress.try($$SELECT uid_interval('1.5 milliseconds')$$, true);
SELECT regress.try($$SELECT uid_interval('30000 days')$$, true);
SELECT regress.try($$SELECT uid_interval('2147483647 days 2562047788 hours')$$, true);
SELECT uid_interval(NULL) IS NULL AS strict;

-- A table partitioned by day on its key.  Bounds are expressions evaluated
-- once, by CREATE TABLE: STABLE uid_min() is allowed, and the bounds are kept
-- as constants.
CREATE TABLE events (id bigint PRIMARY KEY DEFAULT uid_next(), note text) PARTITION BY RANGE (id);
CREATE TABLE events_20260101 PARTITION OF events FOR VALUES FROM (uid_min('2026-01-01')) TO (uid_min('2026-01-02'));
CREATE TABLE events_20260102 PARTITION OF events FOR VALUES FROM (uid_min('2026-01-02')) TO (uid_min('2026-01-03'));
-- Today and tomorrow, in case the test runs over midnight.
CREATE TABLE events_now PARTITION OF events
	FOR VALUES FROM (uid_min(date_trunc('day', now()))) TO (uid_min(date_trunc('day', now()) + interval '2 days'));
SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) AS bound
  FROM pg_class c WHERE c.relname IN ('events_20260101', 'events_20260102') ORDER BY 1;

-- Back-filled rows of past days land in their days, on both sides of midnight;
-- uid_next() lands in today's (or tomorrow's).
INSERT INTO events VALUES
	(uid_min('2026-01-01'), 'first ID of 1 January'),
	(uid_max('2026-01-01 23:59:59.999'), 'last ID of 1 January'),
	(uid_min('2026-01-02'), 'first ID of 2 January'),
	(uid_max('2026-01-02 23:59:59.999'), 'last ID of 2 January');
INSERT INTO events (note) SELECT 'now' FROM generate_series(1, 100);
SELECT tableoid::regclass AS partition, note, uid_timestamp(id) FROM events WHERE note <> 'now' ORDER BY id;
SELECT tableoid::regclass AS partition, count(*), bool_and(uid_timestamp(id) >= date_trunc('day', now())) AS from_today
  FROM events WHERE note = 'now' GROUP BY 1;
-- A day without a partition has nowhere to go.
SELECT regress.try($$INSERT INTO events VALUES (uid_min('2026-01-03'))$$);
-- Range scans by time find the rows of the time they cover.
SELECT count(*) FROM events WHERE id BETWEEN uid_min('2026-01-01 12:00') AND uid_max('2026-01-02 06:00');
DROP TABLE events;
