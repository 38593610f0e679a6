-- uid_next_block(n): blocks of n consecutive IDs of one time unit and one
-- worker, interleaved with uid_next() and uid_next_batch(), in one session
-- and across sessions: no overlap, strictly increasing, one unit a block.
SET client_min_messages = warning;

CREATE TABLE issued (seq serial, session int, first bigint, n int);

-- In one session, sizes from 1 to all of a unit's 512, in a seeded order.
SELECT setseed(0.55);
DO $$
DECLARE
	n int;
	k int;
BEGIN
	FOR i IN 1 .. 3000 LOOP
		k := floor(random() * 4)::int;
		IF k = 0 THEN
			INSERT INTO issued (session, first, n) VALUES (1, uid_next(), 1);
		ELSIF k = 1 THEN
			INSERT INTO issued (session, first, n) SELECT 1, b, 1 FROM uid_next_batch(1 + floor(random() * 20)::int) b;
		ELSE
			n := CASE WHEN random() < 0.1 THEN 1 + floor(random() * 512)::int ELSE 1 + floor(random() * 50)::int END;
			INSERT INTO issued (session, first, n) VALUES (1, uid_next_block(n), n);
		END IF;
	END LOOP;
	-- The edges: one ID, and a whole unit.
	INSERT INTO issued (session, first, n) VALUES (1, uid_next_block(1), 1);
	INSERT INTO issued (session, first, n) VALUES (1, uid_next_block(512), 512);
	INSERT INTO issued (session, first, n) VALUES (1, uid_next(), 1);
END
$$;
-- uid_lastval() is the top of the last block.
SELECT uid_next_block(7) AS lo \gset
SELECT uid_lastval() = :lo + 6 AS lastval_is_top_of_block;
INSERT INTO issued (session, first, n) VALUES (1, :lo, 7);

-- A second session (a new backend, with a worker of its own) does the same.
\c
SET client_min_messages = warning;
SELECT setseed(0.66);
DO $$
DECLARE
	n int;
BEGIN
	FOR i IN 1 .. 1000 LOOP
		n := 1 + floor(random() * 512)::int;
		INSERT INTO issued (session, first, n) VALUES (2, uid_next_block(n), n);
		INSERT INTO issued (session, first, n) VALUES (2, uid_next(), 1);
	END LOOP;
END
$$;

-- Strictly increasing within each session: each block or ID starts above the last one's top.
SELECT session, count(*) AS calls,
       count(*) FILTER (WHERE first <= prev_top) AS not_increasing
  FROM (SELECT session, first, lag(first + n - 1) OVER (PARTITION BY session ORDER BY seq) AS prev_top
          FROM issued) t
 GROUP BY session ORDER BY session;

-- No ID twice, across sessions.
SELECT count(*) AS ids, count(DISTINCT id) = count(*) AS no_overlap
  FROM (SELECT first + g AS id FROM issued, generate_series(0, n - 1) g) t;

-- Every block lies in one time unit and one worker.
SELECT count(*) FILTER (WHERE n > 1) > 0 AS has_blocks,
       bool_and(uid_timestamp(first) = uid_timestamp(first + n - 1)
                AND uid_worker_id(first) = uid_worker_id(first + n - 1)
                AND uid_sequence(first + n - 1) - uid_sequence(first) = n - 1) AS one_unit_and_worker
  FROM issued;

-- More than a unit holds, or less than one, is refused, naming the limit.
SELECT regress.try('SELECT uid_next_block(513)', true);
SELECT regress.try('SELECT uid_next_block(0)', true);
SELECT uid_next_block(NULL) IS NULL AS strict;

-- pooled-lo as an ORM runs it: the block's first ID, then the ORM hands out first .. first + 49.
CREATE TABLE orm_rows (id bigint PRIMARY KEY);
DO $$
DECLARE
	lo bigint;
BEGIN
	FOR b IN 1 .. 20 LOOP
		lo := uid_next_block(50);
		INSERT INTO orm_rows SELECT lo + i FROM generate_series(0, 49) i;
		-- Rows inserted with the column default meanwhile never collide.
		INSERT INTO orm_rows VALUES (uid_next());
	END LOOP;
END
$$;
SELECT count(*) AS rows FROM orm_rows;

DROP TABLE orm_rows;
DROP TABLE issued;
