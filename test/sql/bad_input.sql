-- Bad input, table-driven: every call gets a clear error with its SQLSTATE
-- (or, for NULL input to a STRICT function, NULL), and nothing changes in
-- the worker table or the configuration.
SET client_min_messages = warning;

-- The sessions of the tests before have ended: an exiting backend releases
-- its worker row, which would show as a change here.
DO $$
BEGIN
	FOR i IN 1 .. 300 LOOP
		EXIT WHEN NOT EXISTS (SELECT FROM pg_stat_activity
		                       WHERE datname = current_database() AND pid <> pg_backend_pid()
		                         AND backend_type = 'client backend');
		PERFORM pg_sleep(0.1);
	END LOOP;
END
$$;

CREATE TEMP TABLE state_before AS
SELECT (SELECT md5(string_agg(c::text, ',')) FROM uidgen.config c) AS config,
       (SELECT md5(string_agg(w::text, ',' ORDER BY id)) FROM uidgen.worker_node w) AS worker_table,
       (SELECT last_value FROM uidgen.worker_node_id_seq) AS sequence;

CREATE TABLE conv_int4 (id serial PRIMARY KEY);
CREATE TABLE conv_text (id text PRIMARY KEY);

CREATE TEMP TABLE cases (n serial, call text);
INSERT INTO cases (call) VALUES
	-- generation
	('SELECT uid_next_batch(-1)'),
	('SELECT uid_next_batch(2147483647)'),
	('SELECT count(*) FROM uid_next_batch(NULL)'),
	-- decoding under the database's layout
	('SELECT uid_parse(NULL)'),
	('SELECT uid_parse(-1)'),
	('SELECT uid_parse(-9223372036854775808)'),
	('SELECT uid_parse(0)'),
	('SELECT uid_parse(9223372036854775807)'),
	('SELECT uid_timestamp(-1)'),
	('SELECT uid_worker_id(-9223372036854775808)'),
	('SELECT uid_sequence(-2)'),
	('SELECT uid_parse_json(-1)'),
	('SELECT uid_min(''-infinity'')'),
	('SELECT uid_max(''infinity'')'),
	('SELECT uid_min(''1999-12-31'')'),
	('SELECT uid_max(''2200-01-01'')'),
	-- decoding under a given layout
	('SELECT uid_parse(4611686018427387904, 40, 10, 12, ''2026-01-01'')'),
	('SELECT uid_parse(9223372036854775807, 30, 20, 12, ''2026-01-01'')'),
	('SELECT uid_parse(1, 0, 10, 12, ''2026-01-01'')'),
	('SELECT uid_parse(1, 41, -1, 12, ''2026-01-01'')'),
	('SELECT uid_parse(1, 41, 10, 64, ''2026-01-01'')'),
	('SELECT uid_parse(1, 2147483647, 2147483647, 2147483647, ''2026-01-01'')'),
	('SELECT uid_parse(1, 41, 10, 13, ''2026-01-01'')'),
	('SELECT uid_parse(1, 41, 10, 12, ''2026-01-01'', ''minute'')'),
	('SELECT uid_parse(1, 41, 10, 12, ''2026-01-01'', '''')'),
	('SELECT uid_parse(1, 41, 10, 12, ''-infinity'')'),
	('SELECT uid_parse(1, NULL, 10, 12, ''2026-01-01'')'),
	-- configuration
	('SELECT uid_configure(0, 13, 9)'),
	('SELECT uid_configure(41, 0, 9)'),
	('SELECT uid_configure(41, 13, -9)'),
	('SELECT uid_configure(41, 13, 10)'),
	('SELECT uid_configure(62, 1, 1)'),
	('SELECT uid_configure(epoch => ''3000-01-01'')'),
	('SELECT uid_configure(epoch => ''infinity'')'),
	('SELECT uid_configure(epoch => ''2026-01-01 00:00:00.000001+00'')'),
	('SELECT uid_configure(unit => ''hour'')'),
	('SELECT uid_configure(28, 22, 13, ''2016-05-20 00:00:00+08'', ''second'')'),
	('SELECT uid_configure(time_bits => NULL)'),
	('SELECT uid_configure(41, 10, 12)'),
	-- reclaiming
	('SELECT uid_reclaim_workers(''-1 second'')'),
	('SELECT uid_reclaim_workers(''-1 month'')'),
	('SELECT uid_reclaim_workers(''13 months'')'),
	('SELECT uid_reclaim_workers(''100 years'')'),
	('SELECT uid_reclaim_workers(NULL)'),
	-- conversion
	('SELECT uid_convert_column(''conv_int4'', ''id'')'),
	('SELECT uid_convert_column(''conv_text'', ''id'')'),
	('SELECT uid_convert_column(''conv_int4'', ''no_such_column'')'),
	('SELECT uid_convert_column(''pg_class'', ''oid'')'),
	('SELECT uid_convert_column(NULL, ''id'')');

SELECT n, call, regress.try(call) AS outcome FROM cases ORDER BY n;

-- Nothing changed.
SELECT s.config = (SELECT md5(string_agg(c::text, ',')) FROM uidgen.config c) AS config_unchanged,
       s.worker_table = (SELECT md5(string_agg(w::text, ',' ORDER BY id)) FROM uidgen.worker_node w) AS worker_table_unchanged,
       s.sequence = (SELECT last_value FROM uidgen.worker_node_id_seq) AS sequence_unchanged
  FROM state_before s;
SELECT pg_get_expr(adbin, adrelid) AS int4_default_kept FROM pg_attrdef WHERE adrelid = 'conv_int4'::regclass;
DROP TABLE conv_int4, conv_text;
